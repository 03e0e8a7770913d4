"""Hybrid knowledge search through the official MCP client (issue 13, SPEC §10): a paraphrase
finds its articles by meaning; odd queries get results or an empty list, never an error; the
local embeddings server stopped → searches are degraded full-text answers while the gateway's
core-api breaker stays closed; started again → hybrid after core-api's `openai` breaker's
open period.

scripts/test starts the stack with KOSHA_POLICY_OPENAI_BREAKER_OPEN_MS=3000 so the open period
fits in a test (the production value is 30 s)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from kosha_client import emf_total, session
from kosha_py import dev

pytestmark = pytest.mark.anyio


async def search(s, query: str, top_k: int = 5) -> dict:
    result = await s.call_tool("search_knowledge_base", {"query": query, "top_k": top_k})
    assert result.is_error is not True, result.structured_content
    return result.structured_content


async def gateway_breaker(s) -> str:
    health = await s.call_tool("get_service_health", {})
    return health.structured_content["dependencies"]["core-api"]["breaker"]


def openai_breaker(stack: dict[str, str]) -> str:
    health = httpx.get(stack["KOSHA_CORE_API_URL"] + "/v1/health", timeout=2).json()
    return health["embedder"]["breaker"]


async def test_a_paraphrase_finds_the_card_fraud_articles(gateway_url, agent_token, stack):
    async with session(gateway_url, agent_token) as s:
        out = await search(s, "someone used my card without asking")
    assert out["degraded"] is False and "degraded_reason" not in out
    titles = [r["title"] for r in out["results"]]
    assert any("card fraud" in t.lower() for t in titles), titles
    health = httpx.get(stack["KOSHA_CORE_API_URL"] + "/v1/health", timeout=2).json()
    assert health["embedder"]["model"] == stack["KOSHA_EMBEDDINGS_MODEL"]
    assert health["embedder"]["dimensions"] == int(stack["KOSHA_EMBEDDINGS_DIMENSIONS"])


@pytest.mark.parametrize(
    "query",
    ["x", "a" * 512, "the and of to", "?!.,;:--", "💳🔒😀", "карта card カード بطاقة", "& | ! ( ) :*",
     "fraud & | !chargeback:* (refund"],
    ids=["one-char", "512-chars", "stop-words", "punctuation", "emoji", "mixed-scripts", "tsquery-meta",
         "tsquery-mixed"],
)
async def test_odd_queries_get_results_or_an_empty_list(gateway_url, agent_token, query):
    async with session(gateway_url, agent_token) as s:
        out = await search(s, query)
    assert isinstance(out["results"], list)
    assert out["degraded"] is False


async def test_embeddings_outage_degrades_to_full_text_and_recovers(gateway_url, agent_token, stack):
    # The gateway's dispatch counts each degraded tool answer once (the `degraded` metric).
    log = Path(stack["KOSHA_DEV_DIR"]) / "logs" / "mcp-gateway.log"
    counted = emf_total(log, "degraded", tool="search_knowledge_base", reason="embeddings_unavailable")
    async with session(gateway_url, agent_token) as s:
        hybrid = await search(s, "chargeback")
        assert hybrid["degraded"] is False
        dev("stop", "embeddings")
        try:
            for _ in range(12):
                started = time.monotonic()
                out = await search(s, "chargeback")
                assert out["degraded"] is True, out
                assert out["degraded_reason"] == "embeddings_unavailable"
                assert out["results"], "full-text results"
                assert time.monotonic() - started < 8, "within the tool budget"
            # Degraded answers are successes for the gateway: its core-api breaker stays closed.
            assert await gateway_breaker(s) == "closed"
            assert openai_breaker(stack) == "open"
            until = time.monotonic() + 5
            while time.monotonic() < until and emf_total(
                log, "degraded", tool="search_knowledge_base", reason="embeddings_unavailable"
            ) < counted + 12:
                time.sleep(0.2)
            assert emf_total(
                log, "degraded", tool="search_knowledge_base", reason="embeddings_unavailable"
            ) >= counted + 12
        finally:
            dev("start", "embeddings")
        # After the open period (3 s here), a half-open probe succeeds and hybrid is back.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if (await search(s, "chargeback"))["degraded"] is False:
                break
            time.sleep(0.5)
        assert (await search(s, "chargeback"))["degraded"] is False
        assert await gateway_breaker(s) == "closed"
