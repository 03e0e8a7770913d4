"""Authentication at the edge and per-role tool visibility, with real dev tokens (SPEC §5)."""

from __future__ import annotations

import base64
import json
import subprocess
import time

import httpx
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
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


def machine_token(stack: dict[str, str]) -> str:
    """An access token of the issuer's machine client kosha-dev-m2m-agent (client-credentials
    grant, scope `kosha/agent`)."""
    granted = httpx.post(stack["KOSHA_TOKEN_ENDPOINT"], timeout=10,
                         data={"grant_type": "client_credentials", "scope": "kosha/agent"},
                         auth=(stack["KOSHA_M2M_AGENT_CLIENT_ID"], stack["KOSHA_M2M_AGENT_CLIENT_SECRET"]))
    assert granted.status_code == 200, granted.text
    return granted.json()["access_token"]


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


def test_every_401_names_the_agent_scope_and_echoes_the_id(gateway_url):
    for token in (None, "not.a.jwt"):
        r = post(gateway_url, token=token)
        assert r.status_code == 401
        assert 'scope="kosha/agent"' in r.headers["www-authenticate"]
        assert r.json()["id"] == INIT["id"]


def test_a_user_without_a_usable_group_gets_a_plain_403(gateway_url, stack):
    token = mint(stack, "--role", "agent", "--client-id", "kosha-dev-agent")
    assert post(gateway_url, token=token).status_code == 200
    r = post(gateway_url, token=mint_groupless(stack))
    assert r.status_code == 403
    assert "www-authenticate" not in r.headers
    assert r.json()["id"] == INIT["id"]


def mint_groupless(stack: dict[str, str]) -> str:
    """A user's token in no group (`kosha-ops token mint` needs a role), signed with the dev key."""
    return sign_claims(stack, {"sub": "u-none", "username": "u-none", "client_id": "kosha-dev-agent",
                               "scope": "openid kosha/agent kosha/operator"})


def mint_in_groups(stack: dict[str, str], user: str, client_id: str, groups: list[str]) -> str:
    """The token of `user` signed in through `client_id`, in `groups` (`cognito:groups`; `kosha-ops
    token mint` knows only the role groups), signed with the dev key."""
    return sign_claims(stack, {"sub": user, "username": user, "client_id": client_id, "cognito:groups": groups,
                               "scope": "openid kosha/agent"})


def sign_claims(stack: dict[str, str], claims: dict) -> str:
    """An access token with `claims`, issued now by the stack's issuer for 10 minutes, signed
    with the dev key."""
    with open(stack["KOSHA_DEV_SIGNING_KEY"], "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    jwks = json.loads(httpx.get(stack["KOSHA_JWT_ISSUER"] + "/.well-known/jwks.json", timeout=5).text)
    now = int(time.time())
    claims = {"iss": stack["KOSHA_JWT_ISSUER"], "token_use": "access", "iat": now, "exp": now + 600, **claims}

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    signing = b64(json.dumps({"alg": "RS256", "kid": jwks["keys"][0]["kid"]}).encode()) + "." + b64(json.dumps(claims).encode())
    signature = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing + "." + b64(signature)


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
