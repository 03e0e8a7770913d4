"""Spans over OTLP/HTTP from every hop, on the running stack (SPEC §12, issue 32).

scripts/test's e2e stage starts an OTLP/HTTP receiver (scripts/otlp_receiver.py) before the
functions, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it; the receiver writes each span it
decodes as a JSON line to stack.env's KOSHA_OTLP_SPANS. Through the official MCP client, one
`get_transaction` (trace context in the `traceparent` header) and one degraded search (in
`params._meta`, with a signed chaos header failing every embeddings attempt) must each be one
trace: gateway request → tool call → core-api attempt → core-api request → database (and the
embeddings call with its faulted attempts), each span the child of the one before, with the
attributes the SPEC names, and no token, key or signature in any span the stack exported.
One request that carries both an HTTP `traceparent` and another `params._meta.traceparent` is
one trace, `_meta`'s, with the header's as a link: checked on the OTLP bodies as sent, decoded
here with the `opentelemetry-proto` package (the receiver keeps them in KOSHA_OTLP_SPANS.pb),
with each attribute's OTLP type.
"""

from __future__ import annotations

import json
import secrets
import struct
import time
from pathlib import Path

import pytest

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from kosha_client import session
from test_chaos import sign
from test_log_hygiene import SHAPES, secrets_of

pytestmark = pytest.mark.anyio

SEARCH = {"query": "how do I dispute a card transaction", "top_k": 3}
# The chaos headers sent here: their signatures must not reach a span either.
SENT_HEADERS: list[str] = []


def all_spans(stack: dict[str, str]) -> list[dict]:
    path = stack.get("KOSHA_OTLP_SPANS", "")
    assert path, "this stack exports no spans: run it through `scripts/test e2e` (KOSHA_STACK_OTLP_OUT)"
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def trace(stack: dict[str, str], trace_id: str, until, wait_s: float = 15.0) -> list[dict]:
    """The spans of `trace_id`, once `until(spans)` holds (or the wait is over)."""
    end = time.monotonic() + wait_s
    while True:
        spans = [s for s in all_spans(stack) if s["trace_id"] == trace_id]
        if until(spans) or time.monotonic() > end:
            return spans
        time.sleep(0.2)


def new_parent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def one(spans: list[dict], **match) -> dict:
    """The single span whose fields (or attributes, for keys not in a span) match `match`."""
    def fits(s: dict) -> bool:
        return all((s[k] if k in s else s["attributes"].get(k)) == v for k, v in match.items())

    found = [s for s in spans if fits(s)]
    assert len(found) == 1, (match, [(s["service"], s["name"]) for s in spans])
    return found[0]


def child(spans: list[dict], parent: dict, **match) -> dict:
    return one(spans, parent_span_id=parent["span_id"], **match)


def under(spans: list[dict], root: dict) -> list[dict]:
    """Every span below `root`, at any depth."""
    ids, found = {root["span_id"]}, []
    grew = True
    while grew:
        grew = False
        for s in spans:
            if s["parent_span_id"] in ids and s["span_id"] not in ids:
                ids.add(s["span_id"])
                found.append(s)
                grew = True
    return found


def has_hop_chain(spans: list[dict]) -> bool:
    """The gateway's tool call and core-api's database span have both arrived: each process
    exports in its own batches, so core-api's spans may come before the gateway's."""
    tool_call = any(s["service"] == "mcp-gateway" and s["name"].startswith("tools/call ") for s in spans)
    return tool_call and any(s["name"] == "db" or s["attributes"].get("db.system.name") for s in spans)


def gateway_to_core_api(spans: list[dict], tool: str, parent_span_id: str) -> tuple[dict, dict, dict]:
    """The tool call (child of `parent_span_id`), its core-api attempt that answered and
    core-api's request span under that attempt."""
    call = one(spans, service="mcp-gateway", name=f"tools/call {tool}")
    assert call["parent_span_id"] == parent_span_id, call
    assert call["attributes"]["gen_ai.tool.name"] == tool
    assert call["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert call["attributes"]["mcp.method.name"] == "tools/call"
    # The first attempt or, when a slow one was hedged (issue #33) and the hedge answered
    # first, the hedge (`hedge` = true, the same number): the one whose outcome is ok.
    attempt = child(spans, call, service="mcp-gateway", dependency="core-api", attempt=1, outcome="ok")
    assert attempt["name"] == "core-api attempt" and attempt["kind"] == "SPAN_KIND_CLIENT", attempt
    assert attempt["attributes"]["breaker"] in ("closed", "half_open"), attempt
    assert attempt["attributes"]["deadline_remaining_ms"] > 0, attempt
    assert attempt["attributes"]["timeout_ms"] > 0, attempt
    assert attempt["attributes"]["outcome"] == "ok", attempt
    core = child(spans, attempt, service="core-api", name="request")
    assert core["kind"] == "SPAN_KIND_SERVER", core
    return call, attempt, core


async def test_a_get_transaction_is_one_trace_from_the_gateway_to_postgresql(gateway_url, agent_token, stack):
    trace_id, caller, parent = new_parent()
    async with session(gateway_url, agent_token, headers={"traceparent": parent}) as s:
        result = await s.call_tool("get_transaction", {"transaction_id": "txn_000200"})
    assert not result.is_error, result.structured_content
    spans = trace(stack, trace_id, has_hop_chain)

    # Every request of the session (initialize, the notification, tools/call) carries the
    # header, so each has its own request span under the caller's: the call's is the one.
    call = one(spans, service="mcp-gateway", name="tools/call get_transaction")
    request = one(spans, span_id=call["parent_span_id"])
    assert request["service"] == "mcp-gateway" and request["name"] == "request", request
    assert request["parent_span_id"] == caller, request
    assert request["kind"] == "SPAN_KIND_SERVER"
    assert request["attributes"]["http.request.method"] == "POST"
    assert request["attributes"]["url.path"] == "/mcp"
    call, attempt, core = gateway_to_core_api(spans, "get_transaction", request["span_id"])
    attrs = call["attributes"]
    assert attrs["outcome"] == "ok" and attrs["degraded"] is False, attrs
    assert attrs["client_id"] == "kosha-dev-agent" and attrs["attempts"] == 1, attrs
    assert call["status"] != "STATUS_CODE_ERROR"
    assert core["attributes"]["url.path"] == "/v1/transactions/txn_000200", core
    db = child(spans, core, service="core-api", name="get_transaction")
    assert db["attributes"]["db.system.name"] == "postgresql", db
    assert db["attributes"]["db.operation.name"] == "get_transaction" and db["attributes"]["outcome"] == "ok"
    assert db["kind"] == "SPAN_KIND_CLIENT"


async def test_a_degraded_search_traced_by_params_meta_shows_the_failed_embeddings_attempts(gateway_url, stack):
    trace_id, caller, parent = new_parent()
    header = sign(stack, "openai", "error")
    SENT_HEADERS.append(header)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        result = await s.call_tool("search_knowledge_base", SEARCH, meta={"traceparent": parent})
    assert not result.is_error, result.structured_content
    out = result.structured_content
    assert out["degraded"] is True and out["degraded_reason"] == "embeddings_unavailable", out

    def complete(spans: list[dict]) -> bool:
        # The answering attempt's core-api request, with its embeddings call and its database read.
        first = [s for s in spans if s["name"] == "core-api attempt" and s["attributes"].get("attempt") == 1
                 and s["attributes"].get("outcome") == "ok"]
        cores = [s for s in spans if first and s["parent_span_id"] == first[0]["span_id"]]
        names = {s["name"] for s in under(spans, cores[0])} if cores else set()
        return has_hop_chain(spans) and {"embeddings", "search_articles"} <= names

    spans = trace(stack, trace_id, complete)
    # One request is one trace (SPEC §12): `_meta`'s context parents the request span, the
    # tool call is its child.
    request = one(spans, service="mcp-gateway", name="request", parent_span_id=caller)
    call, attempt, core = gateway_to_core_api(spans, "search_knowledge_base", request["span_id"])
    attrs = call["attributes"]
    assert attrs["outcome"] == "ok" and attrs["degraded"] is True, attrs
    assert attrs["degraded_reason"] == "embeddings_unavailable", attrs
    assert attrs["client_id"] == "kosha-dev-tester", attrs
    # The embeddings retries make the search slow enough that a hedge of it may go out (issue
    # #33): that second core-api request has its own embeddings span. The answering
    # attempt's request is the one under test.
    below = under(spans, core)
    embeddings = [s for s in below if s["name"] == "embeddings"]
    assert len(embeddings) == 1, embeddings
    embed = embeddings[0]
    assert embed["service"] == "core-api" and embed["attributes"]["outcome"] != "ok", embed
    assert embed["status"] == "STATUS_CODE_ERROR", embed
    # Its attempts, each faulted by the chaos header and failed; the last says why it stopped.
    tries = sorted(
        (s for s in spans if s["parent_span_id"] == embed["span_id"]),
        key=lambda s: s["attributes"]["attempt"],
    )
    assert tries, embed
    for n, t in enumerate(tries, start=1):
        a = t["attributes"]
        assert t["name"] == "openai attempt" and a["dependency"] == "openai" and a["attempt"] == n, t
        assert a["fault"] == "error" and a["outcome"] == "error", t
        assert a["error.type"] == "status" and a["http.response.status_code"] == 503, t
        assert t["status"] == "STATUS_CODE_ERROR"
    assert all(t["attributes"]["retry"].startswith("after_") for t in tries[:-1]), tries
    assert not tries[-1]["attributes"]["retry"].startswith("after_"), tries[-1]
    # The full-text answer still read PostgreSQL, in the same trace.
    db = one(below, service="core-api", name="search_articles")
    assert db["attributes"]["outcome"] == "ok", db


def decoded(stack: dict[str, str]) -> list[tuple[str, object]]:
    """(service, Span) for every span the stack exported, decoded from the OTLP bodies."""
    data = Path(stack["KOSHA_OTLP_SPANS"] + ".pb").read_bytes()
    found, at = [], 0
    while at + 4 <= len(data):
        (n,) = struct.unpack(">I", data[at : at + 4])
        request = ExportTraceServiceRequest()
        request.ParseFromString(data[at + 4 : at + 4 + n])
        at += 4 + n
        for rs in request.resource_spans:
            service = next((kv.value.string_value for kv in rs.resource.attributes if kv.key == "service.name"), "")
            found.extend((service, s) for ss in rs.scope_spans for s in ss.spans)
    return found


def typed(span) -> dict[str, tuple[str, object]]:
    """Each attribute of `span` as (its OTLP type, its value)."""
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = (kind, getattr(kv.value, kind) if kind else None)
    return out


async def test_meta_and_header_disagreeing_make_one_trace_with_the_header_as_a_link(gateway_url, agent_token, stack):
    header_trace, header_span, header = new_parent()
    meta_trace, meta_span, meta = new_parent()
    async with session(gateway_url, agent_token, headers={"traceparent": header}) as s:
        result = await s.call_tool("get_transaction", {"transaction_id": "txn_000200"}, meta={"traceparent": meta})
    assert not result.is_error, result.structured_content
    trace(stack, meta_trace, has_hop_chain)  # the JSON lines: everything has arrived
    spans = decoded(stack)
    ours = [(svc, s) for svc, s in spans if s.trace_id.hex() in (meta_trace, header_trace)]
    calls = [s for svc, s in ours if s.name == "tools/call get_transaction"]
    assert len(calls) == 1 and calls[0].trace_id.hex() == meta_trace, [s.name for _, s in ours]
    call = calls[0]
    request = next(s for svc, s in ours if s.span_id == call.parent_span_id)
    assert request.name == "request" and request.trace_id.hex() == meta_trace, request
    assert request.parent_span_id.hex() == meta_span, "_meta's context is the request span's parent"
    assert [(l.trace_id.hex(), l.span_id.hex()) for l in request.links] == [(header_trace, header_span)]
    # Every span under the request is in _meta's trace: nothing of the call is in the header's.
    assert not [s.name for svc, s in ours if s.trace_id.hex() == header_trace and s.name != "request"]
    attrs = typed(request)
    assert attrs["http.request.method"] == ("string_value", "POST") and attrs["url.path"] == ("string_value", "/mcp")
    attrs = typed(call)
    assert attrs["mcp.method.name"] == ("string_value", "tools/call"), attrs
    assert attrs["gen_ai.tool.name"] == ("string_value", "get_transaction"), attrs
    assert attrs["attempts"][0] == "int_value", attrs
    attempt = next(s for svc, s in ours if s.parent_span_id == call.span_id and s.name == "core-api attempt")
    attrs = typed(attempt)
    for key in ("attempt", "timeout_ms", "deadline_remaining_ms"):
        assert attrs[key][0] == "int_value", (key, attrs)
    # No library bookkeeping on any span the stack exported.
    for svc, s in spans:
        keys = {kv.key for kv in s.attributes}
        assert not keys & {"busy_ns", "idle_ns", "target", "thread.id", "code.file.path"}, (svc, s.name, keys)


def test_no_span_holds_a_token_key_or_signature(stack):
    """Every span the stack exported so far (this whole suite's), scanned as the logs are."""
    spans = all_spans(stack)
    assert spans, "no spans exported"
    text = "\n".join(json.dumps(s) for s in spans)
    for name, value in secrets_of(stack).items():
        assert value not in text, f"{name} is in an exported span"
    for shape, pattern in SHAPES.items():
        assert not pattern.search(text), f"a {shape} is in an exported span"
    assert SENT_HEADERS, "the degraded search ran first"
    for header in SENT_HEADERS:
        assert header not in text and header.rsplit("sig=", 1)[-1] not in text
    assert "authorization" not in text.lower(), "a header of credentials is in an exported span"
