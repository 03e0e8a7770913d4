"""The signed chaos header on the live stack (SPEC §9, §10, issue 14), through the official
MCP Python client as a tester (`agent` + `operator`) with CHAOS_ENABLED=true:

- every target × fault gives the matrix's behaviour: `core-api` and `screening-sim` applied
  by the gateway inside their policies, `postgres` and `openai` by core-api after it verified
  the forwarded header again (every row runs: the stack always serves `screen_entity` and
  starts core-api with an embeddings client, so a missing one fails rather than skips);
- under `p = 0.2` error faults on core-api for 200 calls the breaker stays closed, retries
  recover most calls, the retry budget caps the extra attempts, and no call outlives its tool
  budget by more than 50 ms;
- forgeries are ignored and audited, and the audit lines carry neither key nor signature.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from pathlib import Path

import httpx
import pytest

from kosha_client import emf_total, session
from kosha_py import await_until, sign
from test_auth import mint
from test_control_plane import HEADERS

pytestmark = pytest.mark.anyio
TXN = {"transaction_id": "txn_000420"}
# Tool budgets (SPEC §4) and the slack the issue allows past them.
BUDGET_S = {"get_transaction": 3.0, "search_knowledge_base": 8.0, "screen_entity": 5.0}
SLACK_S = 0.05


def log(stack: dict[str, str], name: str) -> Path:
    return Path(stack["KOSHA_DEV_DIR"]) / "logs" / f"{name}.log"


async def timed(s, name: str, args: dict):
    started = time.monotonic()
    result = await s.call_tool(name, args)
    return result, time.monotonic() - started


async def settle_breaker(gateway_url: str, agent_token: str) -> None:
    """Waits (≤ 30 s) for core-api's breaker to close, then fills its window with successes,
    so the few failures a test injects cannot open it for the next."""
    async with session(gateway_url, agent_token) as s:

        async def closed_else_probe() -> bool:
            health = (await s.call_tool("get_service_health", {})).structured_content
            if health["dependencies"]["core-api"]["breaker"] == "closed":
                return True
            await s.call_tool("get_transaction", TXN)
            return False

        await await_until(closed_else_probe, 30, 0.5)
        for _ in range(20):
            assert not (await s.call_tool("get_transaction", TXN)).is_error


@pytest.fixture(autouse=True)
async def settled_breaker(gateway_url, agent_token):
    """Each test starts and ends with core-api's breaker closed and its window full of
    successes: a test that opened it does not leave it open for the next module."""
    await settle_breaker(gateway_url, agent_token)
    yield
    await settle_breaker(gateway_url, agent_token)


# ------------------------------------------------------------------ target × fault

@pytest.mark.parametrize("fault", ["latency", "error", "timeout", "reset"])
async def test_core_api_faults_are_injected_inside_the_gateway_policy(gateway_url, stack, fault):
    header = sign(stack, "core-api", fault, ms=300 if fault == "latency" else None)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        r, took = await timed(s, "get_transaction", TXN)
    assert took <= BUDGET_S["get_transaction"] + SLACK_S, took
    if fault == "latency":
        assert not r.is_error and took >= 0.3, (r.structured_content, took)
        return
    err = r.structured_content["error"]
    if fault == "timeout":
        # Each attempt hangs until its timeout (2 s cap); the call ends inside its budget.
        assert took >= 2.0, took
        assert err["code"] in ("dependency_unavailable", "deadline_exceeded"), err
    else:
        assert err["code"] == "dependency_unavailable" and err["dependency"] == "core-api", err
        assert took < 1.5, took


@pytest.mark.parametrize("fault", ["latency", "error", "timeout", "reset"])
async def test_postgres_faults_are_applied_by_core_api(gateway_url, stack, fault):
    core_log = log(stack, "core-api")
    text = core_log.read_text()
    cancelled_before = text.count("postgres statement timeout") + text.count("postgres too slow for the request deadline")
    header = sign(stack, "postgres", fault, ms=300 if fault == "latency" else None)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        r, took = await timed(s, "get_transaction", TXN)
    assert took <= BUDGET_S["get_transaction"] + SLACK_S, took
    if fault == "latency":
        assert not r.is_error and took >= 0.3, (r.structured_content, took)
        return
    err = r.structured_content["error"]
    if fault == "timeout":
        # A slow statement, answered by core-api's slow-query path: PostgreSQL cancels it on
        # statement_timeout (57014), or — when the machine is slower than the 50 ms between
        # that and core-api's own give-up — core-api abandons it at the deadline. Both are what
        # a real slow query gets (the first attempt is the gateway's 2 s attempt timeout).
        assert err["code"] in ("deadline_exceeded", "dependency_unavailable"), err
        slow = ("postgres statement timeout", "postgres too slow for the request deadline")

        def slow_queries() -> int:
            text = core_log.read_text()
            return sum(text.count(m) for m in slow)

        await await_until(lambda: slow_queries() > cancelled_before, 5)
        assert slow_queries() > cancelled_before
    else:
        assert err["code"] == "dependency_unavailable" and err["dependency"] == "postgres", err
        assert err["retry_after_s"] >= 1, err


@pytest.mark.parametrize("fault", ["latency", "error", "timeout", "reset"])
async def test_openai_faults_degrade_search_to_full_text(gateway_url, stack, agent_token, fault):
    args = {"query": "how do I dispute a card transaction", "top_k": 3}
    async with session(gateway_url, agent_token) as s:
        plain = (await s.call_tool("search_knowledge_base", args)).structured_content
    health = httpx.get(stack["KOSHA_CORE_API_URL"] + "/v1/health", timeout=5).json()
    assert health.get("embedder") is not None, health  # core-api has an embeddings client
    assert "degraded" in plain, plain  # and search says whether it used it
    header = sign(stack, "openai", fault, ms=300 if fault == "latency" else None)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        r, took = await timed(s, "search_knowledge_base", args)
    assert not r.is_error, r.structured_content
    assert took <= BUDGET_S["search_knowledge_base"] + SLACK_S, took
    c = r.structured_content
    assert c["results"], c
    if fault == "latency":
        assert took >= 0.3 and c["degraded"] is False, (c, took)
    else:
        assert c["degraded"] is True and c["degraded_reason"] == "embeddings_unavailable", c


@pytest.mark.parametrize("fault", ["latency", "error", "timeout", "reset"])
async def test_screening_faults_defer_the_screening(gateway_url, stack, fault):
    header = sign(stack, "screening-sim", fault, ms=300 if fault == "latency" else None)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        r, took = await timed(s, "screen_entity", {"name": f"Chaos Test {fault}"})
        assert not r.is_error, r.structured_content
        assert took <= BUDGET_S["screen_entity"] + SLACK_S, took
        c = r.structured_content
        if fault == "latency":
            assert took >= 0.3 and c["status"] in ("clear", "potential_match"), c
            return
        assert c["status"] == "deferred" and c["retry_after_s"] >= 5, c
        got = await s.call_tool("get_screening_result", {"screening_id": c["screening_id"]})
        assert not got.is_error, got.structured_content


# ------------------------------------------------------------------ p = 0.2 for 200 calls

async def test_a_fifth_of_attempts_failing_is_absorbed_by_retries_within_the_budget(gateway_url, stack):
    gw_log = log(stack, "mcp-gateway")
    # The first `covered` calls need ~0.25 retry each, which the budget holds (10 tokens at
    # the start, once the clean calls below have refilled what earlier tests spent, plus 0.1
    # per success and the floor's 1/s): all but 3 succeed in all but ~0.3 % of runs (a
    # simulation of this model; 40 calls would fail ~1.6 % of runs, and ~17 % with half the
    # budget spent, the CI failure of 2026-12-05). The rest outrun the budget, so about a
    # fifth of them fail; a 20-call window then reaches the breaker's 50 % by chance in ~9 %
    # of runs (P(≥ 10 of 20 | p = 0.2) over ~160 windows), which is the breaker doing its
    # job, so only calls before it opened are counted.
    n, covered, p = 200, 30, 0.2

    def retries() -> float:
        return emf_total(gw_log, "retries", dependency="core-api")

    # 100 successes earn the budget's cap (0.1 token each) back; the wait refills the floor.
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"]) as s:
        for _ in range(100):
            r = await s.call_tool("get_transaction", TXN)
            assert not r.is_error, r.structured_content
    await asyncio.sleep(1.0)  # also flushes earlier retries (KOSHA_METRICS_FLUSH_MS=300 on the test stack)
    before = retries()
    header = sign(stack, "core-api", "error", p=p)
    ok, slowest, opened_at = [], 0.0, None
    started = time.monotonic()
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"], {"x-kosha-chaos": header}) as s:
        for i in range(n):
            r, took = await timed(s, "get_transaction", TXN)
            slowest = max(slowest, took)
            if r.is_error:
                err = r.structured_content["error"]
                assert err["code"] == "dependency_unavailable", err
                # An open breaker answers with retry_after_s; an injected 503 has none.
                if err.get("retry_after_s") is not None and opened_at is None:
                    opened_at = i
            else:
                ok.append(i)
            if i == covered - 1:
                health = (await s.call_tool("get_service_health", {})).structured_content
                assert health["dependencies"]["core-api"]["breaker"] == "closed", (i, health)
    elapsed = time.monotonic() - started
    await await_until(lambda: retries() != before, 5, 0.2)
    await asyncio.sleep(0.7)
    extra = retries() - before
    print(f"p={p}: {len(ok)}/{n} calls succeeded, {extra:.0f} retries, slowest {slowest * 1000:.0f} ms, "
          f"{elapsed:.1f} s, breaker opened at call {opened_at}")
    assert opened_at is None or opened_at >= covered, f"the breaker opened at call {opened_at}"
    assert slowest <= BUDGET_S["get_transaction"] + SLACK_S, slowest
    # Retries ran and recovered calls: while the budget covers them, all but a few succeed
    # (3 attempts: 0.8 % of calls fail); later most still do (without retries, ~80 % would).
    assert extra >= 5, extra
    assert sum(1 for i in ok if i < covered) >= covered - 3, ok
    counted = opened_at if opened_at is not None else n
    assert sum(1 for i in ok if i < counted) >= 0.75 * counted, (ok, counted)
    # The budget caps the extra load: what the earned bucket held at the start (at most its
    # cap, 10 tokens), 0.1 token per success since, and the floor of 1 retry/s (plus the one
    # it starts with). Without a budget it would be ~0.24 × n once the run is fast enough
    # that the floor does not cover it (here 200 calls take a few seconds).
    assert extra <= 10 + 0.1 * len(ok) + elapsed + 1, (extra, len(ok), elapsed)


def signed(key: bytes, body: bytes) -> bytes:
    return body + b";sig=" + hmac.new(key, body, hashlib.sha256).hexdigest().encode()


async def test_forgeries_are_ignored_and_audited_without_key_or_signature(gateway_url, stack):
    key = bytes.fromhex(stack["KOSHA_CHAOS_KEY"])
    now = int(time.time())
    good = sign(stack, "core-api", "error").encode()
    body, sig = good.split(b";sig=")
    tester = mint(stack, "--role", "agent", "--role", "operator", "--client-id", "kosha-e2e-limited")
    agent_only = mint(stack, "--role", "agent", "--client-id", "kosha-dev-operator")
    cases = [
        ("tampered field", tester, good.replace(b"fault=error", b"fault=reset"), "bad_signature"),
        ("wrong key", tester, signed(b"another key of thirty-two bytes!", body), "bad_signature"),
        ("expired", tester, signed(key, b"target=core-api;fault=error;p=1;exp=%d" % (now - 5)), "expired"),
        ("over 900 s ahead", tester, signed(key, b"target=core-api;fault=error;p=1;exp=%d" % (now + 905)),
         "too_far_ahead"),
        ("agent only", agent_only, good, "not_operator"),
        ("truncated signature", tester, good[:-1], "bad_signature"),
        ("uppercase hex", tester, body + b";sig=" + sig.upper(), "bad_signature"),
        ("duplicated field", tester, signed(key, body + b";fault=error"), "malformed"),
        ("10 KiB header", tester, signed(key, body + b";" + b"x" * 10 * 1024), "malformed"),
        ("non-UTF-8 bytes", tester, signed(key, body.replace(b"core-api", b"core-\xff")), "malformed"),
    ]
    sigs: set[str] = set()
    for name, token, header, _ in cases:
        if b";sig=" in header:
            sigs.add(header.rsplit(b";sig=", 1)[1].decode("latin-1").lower())
        rpc = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "get_transaction", "arguments": TXN}}
        r = httpx.post(gateway_url, json=rpc, timeout=10,
                       headers={**HEADERS, "authorization": f"Bearer {token}", "x-kosha-chaos": header})
        assert r.status_code == 200, (name, r.text)
        assert r.json()["result"].get("isError") is not True, (name, r.text)  # ignored: served normally

    text = log(stack, "mcp-gateway").read_text()
    audit = [json.loads(line) for line in text.splitlines() if "chaos_header_rejected" in line]
    seen = {(flat(e).get("principal"), flat(e).get("reason")) for e in audit}
    for name, token, _, reason in cases:
        principal = "kosha-dev-operator" if token is agent_only else "kosha-e2e-limited"
        assert (principal, reason) in seen, (name, reason, seen)
    secrets = {stack["KOSHA_CHAOS_KEY"].lower(), sig.decode(), *sigs}
    for log_name in ("mcp-gateway", "core-api"):
        logged = log(stack, log_name).read_text().lower()
        leaked = [s for s in secrets if len(s) >= 32 and s in logged]
        assert not leaked, f"{log_name} log holds a key or signature"


def flat(event: dict) -> dict:
    """A JSON log line's fields, whether flattened or under `fields`."""
    return {**event, **event.get("fields", {})}
