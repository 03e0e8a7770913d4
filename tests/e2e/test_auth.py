"""Authentication at the edge and per-role tool visibility, with real dev tokens (SPEC §5)."""

from __future__ import annotations

import subprocess

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from kosha_client import session

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
AGENT_TOOLS = {
    "search_knowledge_base", "get_transaction", "list_transactions", "get_service_health",
    "screen_entity", "get_screening_result", "raise_dispute", "flag_transaction_for_review",
}


def mint(stack: dict[str, str], *args: str) -> str:
    cmd = [stack["KOSHA_OPS"], "token", "mint", "--key", stack["KOSHA_DEV_SIGNING_KEY"],
           "--issuer", stack["KOSHA_JWT_ISSUER"], *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def post(url: str, token: str | None = None, auth: str | None = None) -> httpx.Response:
    headers = dict(HEADERS)
    if token:
        headers["authorization"] = f"Bearer {token}"
    if auth:
        headers["authorization"] = auth
    return httpx.post(url, json=INIT, headers=headers, timeout=10)


def test_missing_token_is_401_with_resource_metadata(gateway_url):
    r = post(gateway_url)
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer resource_metadata=")
    assert "/.well-known/oauth-protected-resource" in challenge
    assert "error=" not in challenge


def test_bad_token_is_401_invalid_token(gateway_url):
    r = post(gateway_url, token="not.a.jwt")
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert "not.a.jwt" not in r.text


def test_non_bearer_scheme_is_401(gateway_url):
    assert post(gateway_url, auth="Basic dXNlcjpwYXNz").status_code == 401


def test_client_not_allowed_is_401(gateway_url, stack):
    assert post(gateway_url, token=mint(stack, "--role", "agent", "--client-id", "someone-else")).status_code == 401


def test_protected_resource_metadata(gateway_url, stack):
    base = gateway_url.rsplit("/mcp", 1)[0]
    doc = httpx.get(base + "/.well-known/oauth-protected-resource", timeout=5).json()
    assert doc["resource"].endswith("/mcp")
    assert doc["authorization_servers"] == [stack["KOSHA_JWT_ISSUER"]]
    assert doc["bearer_methods_supported"] == ["header"]
    assert doc["scopes_supported"]


@pytest.mark.anyio
async def test_agent_sees_the_agent_tools(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        names = {t.name for t in (await s.list_tools()).tools}
    assert AGENT_TOOLS <= names


@pytest.mark.anyio
async def test_operator_sees_only_health_and_data_tools_are_unknown(gateway_url, stack):
    async with session(gateway_url, stack["KOSHA_OPERATOR_TOKEN"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        assert names == {"get_service_health"}
        health = await s.call_tool("get_service_health", {})
        assert health.is_error is not True
        with pytest.raises(MCPError) as info:
            await s.call_tool("get_transaction", {"transaction_id": "txn_000001"})
    assert info.value.error.code == -32602
