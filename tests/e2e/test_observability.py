"""One trace across the gateway and core-api, and `kosha-ops status`, on the running stack
(issue 15, SPEC §11, §12): the official MCP client sends a W3C `traceparent`, as an HTTP
header or in `params._meta` (MCP 2026-07-28); the gateway's `tool call` line and core-api's
log lines for that request carry the same trace id."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import pytest

from kosha_client import session
from kosha_py import ops

ARGS = {"transaction_id": "txn_000200"}


def log_lines(stack: dict[str, str], function: str) -> list[dict]:
    """The JSON lines of a function's captured log (other lines skipped)."""
    lines = []
    for line in (Path(stack["KOSHA_DEV_DIR"]) / "logs" / f"{function}.log").read_text().splitlines():
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines


def traced(stack: dict[str, str], function: str, trace_id: str, wait_s: float = 5.0) -> list[dict]:
    """The lines of `function` whose request span has `trace_id` (waits for them to land)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = [l for l in log_lines(stack, function) if l.get("span", {}).get("trace_id") == trace_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def new_parent() -> tuple[str, str]:
    trace_id = secrets.token_hex(16)
    return trace_id, f"00-{trace_id}-{secrets.token_hex(8)}-01"


def assert_one_trace(stack: dict[str, str], trace_id: str) -> None:
    gateway = traced(stack, "mcp-gateway", trace_id)
    calls = [l for l in gateway if l.get("message") == "tool call"]
    assert len(calls) == 1, gateway
    call = calls[0]
    assert call["tool"] == "get_transaction" and call["outcome"] == "ok", call
    # One attempt, plus a hedge when it happened to be slower than core-api's recent p95.
    assert call["attempts"] - call["hedges"] == 1 and call["degraded"] is False, call
    assert call["span"]["principal"] and call["span"]["request_id"]
    core = traced(stack, "core-api", trace_id)
    assert core, f"no core-api line with trace id {trace_id}"
    assert all(l["span"]["url.path"] == "/v1/transactions/txn_000200" for l in core), core


@pytest.mark.anyio
async def test_a_traceparent_header_is_one_trace_through_gateway_and_core_api(gateway_url, agent_token, stack):
    trace_id, parent = new_parent()
    async with session(gateway_url, agent_token, headers={"traceparent": parent}) as s:
        result = await s.call_tool("get_transaction", ARGS)
    assert not result.is_error, result.structured_content
    assert_one_trace(stack, trace_id)


@pytest.mark.anyio
async def test_a_traceparent_in_params_meta_is_one_trace_through_gateway_and_core_api(gateway_url, agent_token, stack):
    trace_id, parent = new_parent()
    async with session(gateway_url, agent_token) as s:
        result = await s.call_tool("get_transaction", ARGS, meta={"traceparent": parent})
    assert not result.is_error, result.structured_content
    assert_one_trace(stack, trace_id)


def test_kosha_ops_status_shows_overrides_and_the_gateways_breakers(gateway_url, stack):
    forced = ops(stack, "breaker", "force-open", "openai", "--reason", "status drill", "--ttl", "10m",
                 "--operator", "e2e")
    assert forced.returncode == 0, forced.stderr
    try:
        status = ops(stack, "status", "--json", "--gateway", gateway_url)
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        drill = [o for o in report["overrides"] if o["dependency"] == "openai"]
        assert drill and drill[0]["set_by"] == "e2e" and drill[0]["expires_at"], report
        assert report["breakers"]["core-api"]["breaker"] in {"closed", "half_open", "open", "forced_open"}
    finally:
        cleared = ops(stack, "breaker", "clear", "openai")
        assert cleared.returncode == 0, cleared.stderr
