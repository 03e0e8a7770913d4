"""core-api stopped → the breaker opens → tool calls fail fast with `dependency_unavailable`
and `retry_after_s` → core-api back → the breaker closes through half-open (issue 3, SPEC §6).

scripts/test starts the stack with KOSHA_POLICY_CORE_API_READ_BREAKER_OPEN_MS=3000 so the
open period fits in a test."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from kosha_client import emf_total, session
from kosha_py import await_until, dev

pytestmark = pytest.mark.anyio


async def breaker_state(s) -> str:
    health = await s.call_tool("get_service_health", {})
    return health.structured_content["dependencies"]["core-api"]["breaker"]


async def test_breaker_opens_fails_fast_and_recovers(gateway_url, agent_token, stack):
    args = {"transaction_id": "txn_000100"}
    async with session(gateway_url, agent_token) as s:
        assert await breaker_state(s) == "closed"
        dev("stop", "core-api")
        try:
            errors = []
            for _ in range(40):
                r = await s.call_tool("get_transaction", args)
                assert r.is_error
                errors.append(r.structured_content["error"])
                if await breaker_state(s) == "open":
                    break
            assert await breaker_state(s) == "open", errors[-1]
            assert all(e["code"] == "dependency_unavailable" for e in errors)
            assert all(e["dependency"] == "core-api" for e in errors)

            # Open: rejected before any network call, with a retry hint.
            started = time.monotonic()
            fast = await s.call_tool("get_transaction", args)
            err = fast.structured_content["error"]
            assert err["code"] == "dependency_unavailable" and err["retry_after_s"] >= 1
            assert time.monotonic() - started < 1.0
            # The open breaker's rejections are counted as shed load and the state as a gauge.
            log = Path(stack["KOSHA_DEV_DIR"]) / "logs" / "mcp-gateway.log"
            shed = await await_until(lambda: emf_total(log, "shed", reason="breaker_open") >= 1, 5, 0.2)
            assert shed, "no breaker_open shed counted"
        finally:
            dev("start", "core-api")
        base = stack["KOSHA_CORE_API_URL"]

        def core_api_ready() -> bool:
            try:
                return httpx.get(base + "/v1/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        await await_until(core_api_ready, 10)

        # After the open period, half-open probes succeed and close it.
        async def served_and_closed() -> bool:
            r = await s.call_tool("get_transaction", args)
            return not r.is_error and await breaker_state(s) == "closed"

        await await_until(served_and_closed, 20, 0.5)
        assert await breaker_state(s) == "closed"
        ok = await s.call_tool("get_transaction", args)
        assert ok.is_error is not True
