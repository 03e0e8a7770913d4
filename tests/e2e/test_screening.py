"""Sanctions screening end to end (issue 12, SPEC §4, §10), through the official MCP client:
screening-sim stopped (`scripts/dev stop screening-sim`) and, separately, down through its
`/admin/chaos` knob → `screen_entity` answers `deferred` in under 200 ms once the breaker is
open → after the sim comes back, `get_screening_result` shows the finished result within
60 s (the screening-worker completes it). A request the sim refuses ends `failed` with its
reason and its message in the DLQ.

scripts/test starts the stack with KOSHA_POLICY_SCREENING_SIM_BREAKER_OPEN_MS=3000, so the
gateway's screening breaker half-opens quickly once the sim is back."""

from __future__ import annotations

import json
import time

import boto3
import httpx
import jsonschema
import pytest

from kosha_client import session
from kosha_py import dev
from test_observability import log_lines

pytestmark = pytest.mark.anyio
COMPLETE_WITHIN_S = 60


def chaos(stack, method: str, body: dict | None = None, token: str | None = None) -> httpx.Response:
    token = stack["KOSHA_SIM_ADMIN_TOKEN"] if token is None else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.request(method, stack["KOSHA_SCREENING_URL"] + "/admin/chaos", json=body, headers=headers, timeout=5)


@pytest.fixture(autouse=True)
def sim_up(stack):
    """Each test starts and ends with screening-sim running and no chaos knob set."""
    yield
    if not _alive(stack):
        dev("start", "screening-sim")
    chaos(stack, "DELETE")


def _alive(stack) -> bool:
    try:
        httpx.get(stack["KOSHA_SCREENING_URL"] + "/v1/health", timeout=2)
        return True
    except httpx.HTTPError:
        return False


async def breaker(s) -> str:
    health = await s.call_tool("get_service_health", {})
    return health.structured_content["dependencies"]["screening-sim"]["breaker"]


async def settle_closed(s) -> None:
    """Screens a clear name until the screening-sim breaker is closed (a half-open one closes on
    its probes' successes), at most 10 s."""
    end = time.monotonic() + 10
    while await breaker(s) != "closed":
        assert time.monotonic() < end, "the screening-sim breaker did not close within 10 s"
        await s.call_tool("screen_entity", {"name": "Hiroshi Tanaka", "country": "JP"})
        time.sleep(0.2)


async def defer_until_open(s, name: str) -> tuple[str, float]:
    """Screens until the breaker is open; returns one screening_id and the median latency (s)
    of five deferrals made with the breaker open."""
    for _ in range(30):
        r = await s.call_tool("screen_entity", {"name": name})
        out = r.structured_content
        assert r.is_error is not True, out
        assert out["status"] == "deferred", out
        assert out["retry_after_s"] >= 5 and out["matches"] == []
        if await breaker(s) == "open":
            break
    assert await breaker(s) == "open"
    # Five deferrals with the breaker open; their median is the figure (the local emulator
    # serves one request at a time, so a single call can queue behind the worker's polls).
    latencies = []
    for _ in range(5):
        started = time.monotonic()
        r = await s.call_tool("screen_entity", {"name": name})
        latencies.append(time.monotonic() - started)
        assert r.structured_content["status"] == "deferred", r.structured_content
    return r.structured_content["screening_id"], sorted(latencies)[2]


async def wait_finished(s, screening_id: str) -> tuple[dict, float]:
    started = time.monotonic()
    while time.monotonic() - started < COMPLETE_WITHIN_S:
        r = await s.call_tool("get_screening_result", {"screening_id": screening_id})
        assert r.is_error is not True, r.structured_content
        if r.structured_content["status"] != "pending":
            return r.structured_content, time.monotonic() - started
        time.sleep(0.5)
    pytest.fail(f"{screening_id} still pending {COMPLETE_WITHIN_S} s after the sim came back")


async def test_a_clear_name_and_a_match_answer_at_once_and_read_back(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        for args, expected in [
            ({"name": "Hiroshi Tanaka", "country": "JP"}, "clear"),
            ({"name": "Haddad, Nabeel Sameer", "country": "EG"}, "potential_match"),
        ]:
            r = await s.call_tool("screen_entity", args)
            out = r.structured_content
            assert out["status"] == expected, out
            jsonschema.validate(out, tools["screen_entity"].output_schema)
            assert json.loads(r.content[0].text) == out
            back = await s.call_tool("get_screening_result", {"screening_id": out["screening_id"]})
            jsonschema.validate(back.structured_content, tools["get_screening_result"].output_schema)
            assert back.structured_content["status"] == expected
            assert back.structured_content["matches"] == out["matches"]
        assert out["matches"][0]["list_entry_id"] == "wl_00002"


async def test_sim_stopped_defers_fast_and_completes_after_restart(gateway_url, agent_token, stack):
    async with session(gateway_url, agent_token) as s:
        dev("stop", "screening-sim")
        try:
            screening_id, latency = await defer_until_open(s, "Jane Example")
            assert latency < 0.2, f"deferred in {latency * 1000:.0f} ms with the breaker open"
            pending = await s.call_tool("get_screening_result", {"screening_id": screening_id})
            assert pending.structured_content["status"] == "pending"
        finally:
            dev("start", "screening-sim")
        result, after = await wait_finished(s, screening_id)
        assert result["status"] == "clear", result
        print(f"deferral {latency * 1000:.1f} ms; completed {after:.1f} s after the restart")


async def test_chaos_down_defers_and_completes_once_cleared(gateway_url, agent_token, stack):
    assert chaos(stack, "POST", {"down": True, "ttl_s": 300}).status_code == 200
    assert chaos(stack, "GET").json()["chaos"]["down"] is True
    async with session(gateway_url, agent_token) as s:
        try:
            screening_id, latency = await defer_until_open(s, "Haddad, Nabeel Sameer")
            assert latency < 0.2, f"deferred in {latency * 1000:.0f} ms with the breaker open"
        finally:
            assert chaos(stack, "DELETE").status_code == 200
        result, after = await wait_finished(s, screening_id)
        assert result["status"] == "potential_match", result
        assert result["matches"][0]["list_entry_id"] == "wl_00002"
        print(f"deferral {latency * 1000:.1f} ms; completed {after:.1f} s after the knob was cleared")


async def test_a_429_with_retry_after_defers_the_next_calls_without_reaching_the_sim(gateway_url, agent_token, stack):
    """Issue #33: screening-sim says "too many, not for 10 s" (429, `Retry-After: 10`); the
    gateway holds every screening for those 10 s. The knob is cleared right after the 429, so
    any call that reached the sim would answer at once: deferred answers prove it was not
    called, and so does each call's log line (`attempts: 0`)."""
    async with session(gateway_url, agent_token) as s:
        # Starts from a closed breaker: the tests before leave it half-open after an outage,
        # and held calls are no probes, so it would stay half-open through the hold.
        await settle_closed(s)
    knobs = {"down": True, "status": 429, "retry_after_s": 10, "ttl_s": 60}
    assert chaos(stack, "POST", knobs).status_code == 200
    view = chaos(stack, "GET").json()["chaos"]
    assert (view["status"], view["retry_after_s"]) == (429, 10), view
    async with session(gateway_url, agent_token) as s:
        try:
            r = await s.call_tool("screen_entity", {"name": "Jane Example"})
            told = time.monotonic()
            first = r.structured_content
            assert first["status"] == "deferred", first
            assert 5 <= first["retry_after_s"] <= 10, first
        finally:
            assert chaos(stack, "DELETE").status_code == 200
        held = []
        while time.monotonic() - told < 7:
            started = time.monotonic()
            r = await s.call_tool("screen_entity", {"name": "Hiroshi Tanaka", "country": "JP"})
            out = r.structured_content
            assert out["status"] == "deferred", (time.monotonic() - told, out)
            assert 1 <= out["retry_after_s"] <= 10, out
            held.append(time.monotonic() - started)
            time.sleep(1)
        # The breaker never opened: a 429 is not a failure, and held calls are no outcomes.
        assert await breaker(s) == "closed"
        while time.monotonic() - told < 10.5:
            time.sleep(0.25)
        r = await s.call_tool("screen_entity", {"name": "Hiroshi Tanaka", "country": "JP"})
        assert r.structured_content["status"] == "clear", r.structured_content
    assert len(held) >= 5, held
    assert sorted(held)[len(held) // 2] < 0.2, held
    time.sleep(0.5)  # the last line written
    calls = [l for l in log_lines(stack, "mcp-gateway") if l.get("message") == "tool call" and l.get("tool") == "screen_entity"]
    assert [c["attempts"] for c in calls[-(len(held) + 1):-1]] == [0] * len(held), calls[-(len(held) + 1):]
    print(f"{len(held)} screenings deferred without a call in the 10 s hold (median {sorted(held)[len(held) // 2] * 1000:.0f} ms)")


async def test_a_request_the_sim_refuses_ends_failed_and_in_the_dlq(gateway_url, agent_token, stack):
    async with session(gateway_url, agent_token) as s:
        dev("stop", "screening-sim")
        try:
            r = await s.call_tool("screen_entity", {"name": "!!! ???"})
            assert r.structured_content["status"] == "deferred", r.structured_content
            screening_id = r.structured_content["screening_id"]
        finally:
            dev("start", "screening-sim")
        result, _ = await wait_finished(s, screening_id)
    assert result["status"] == "failed", result
    assert "name" in result["failure_reason"]
    sqs = boto3.client(
        "sqs",
        endpoint_url=stack["AWS_ENDPOINT_URL"],
        region_name=stack["AWS_REGION"],
        aws_access_key_id=stack["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=stack["AWS_SECRET_ACCESS_KEY"],
    )
    bodies = []
    for _ in range(5):
        out = sqs.receive_message(QueueUrl=stack["KOSHA_SCREENING_DLQ_URL"], MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies += [json.loads(m["Body"]) for m in out.get("Messages", [])]
        if any(b.get("screening_id") == screening_id for b in bodies):
            break
    # The message names the screening and its owner (SPEC §4: a screening is its client's).
    assert {"screening_id": screening_id, "client_id": "kosha-dev-agent"} in bodies


async def test_admin_chaos_needs_the_token(stack):
    assert chaos(stack, "GET", token="").status_code == 401
    assert chaos(stack, "POST", {"down": True}, token="not-the-token-not-the-token").status_code == 403
    assert chaos(stack, "GET").json()["chaos"] is None


async def test_malformed_and_unknown_screening_ids(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        bad = await s.call_tool("get_screening_result", {"screening_id": "scr_123"})
        assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
        assert "screening_id" in bad.structured_content["error"]["message"]
        unknown = await s.call_tool("get_screening_result", {"screening_id": "scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9"})
        assert unknown.is_error and unknown.structured_content["error"]["code"] == "not_found"
