"""Schemathesis hooks for core-api (the `schemathesis` stage of scripts/test; issue 16).

One custom check, `spec7_error_body`: every error answer (status 400 and up) is the error body
of SPEC §7, `{"error": {"code", "message", "retry_after_s"?, "dependency"?}}`, as JSON, with
one of the stable codes of SPEC §3; and the two statuses a healthy core-api may still give
under load or with a short deadline carry the codes that say so:

- 503: `dependency_unavailable` or `overloaded`, with `retry_after_s` and a matching
  `Retry-After` header;
- 504: `deadline_exceeded`.

`not_a_server_error` is told (schemathesis.toml) that 503 and 504 are expected, so any other
5xx fails the run; this check makes sure those two are honest answers, not a disguised bug.

One hook, `before_call`: a generated `X-Request-Deadline` is almost always in the past (an
arbitrary date-time), so every request carrying one would stop at the deadline layer with 504
and never reach a handler. Three in four of them (chosen by the value's CRC-32, so a seed
replays the same run) become a deadline 10 s ahead, which the handlers then spend; the rest
stay as generated and keep testing the 400/504 answers of SPEC §7.
"""

import datetime
import json
import zlib

import schemathesis

CODES = {
    "invalid_argument",
    "not_found",
    "conflict",
    "deadline_exceeded",
    "dependency_unavailable",
    "overloaded",
    "internal",
}
RETRYABLE = {503: {"dependency_unavailable", "overloaded"}, 504: {"deadline_exceeded"}}


@schemathesis.check
def spec7_error_body(ctx, response, case):
    """An error answer is SPEC §7's JSON body; a 503/504 says why with the right code."""
    status = response.status_code
    if status < 400:
        return None
    content_type = (response.headers.get("content-type") or [""])[0]
    if not content_type.startswith("application/json"):
        raise AssertionError(f"{status} answered with Content-Type {content_type!r}, not JSON")
    try:
        body = json.loads(response.content)
    except ValueError as e:
        raise AssertionError(f"{status} body is not JSON: {e}") from None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or set(body) != {"error"}:
        raise AssertionError(f"{status} body is not {{\"error\": {{...}}}}: {body!r}")
    code, message = error.get("code"), error.get("message")
    if code not in CODES or not isinstance(message, str) or not message:
        raise AssertionError(f"{status} error has no stable code and message: {error!r}")
    extra = set(error) - {"code", "message", "retry_after_s", "dependency"}
    if extra:
        raise AssertionError(f"{status} error has fields SPEC §7 does not define: {sorted(extra)}")
    if status in RETRYABLE and code not in RETRYABLE[status]:
        raise AssertionError(f"{status} with code {code!r}; expected one of {sorted(RETRYABLE[status])}")
    if status == 503:
        retry = error.get("retry_after_s")
        header = (response.headers.get("retry-after") or [None])[0]
        if not isinstance(retry, int) or retry < 1 or header != str(retry):
            raise AssertionError(
                f"503 without a matching retry_after_s / Retry-After: {retry!r} / {header!r}"
            )
    return None


DEADLINE = "x-request-deadline"


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Most generated deadlines become a future one, so the request reaches its handler."""
    headers = case.headers or {}
    name = next((k for k in headers if k.lower() == DEADLINE), None)
    if name is None or not isinstance(headers[name], str):
        return
    if zlib.crc32(headers[name].encode("utf-8", "replace")) % 4 == 0:
        return
    ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=10)
    headers[name] = ahead.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ahead.microsecond // 1000:03d}Z"
