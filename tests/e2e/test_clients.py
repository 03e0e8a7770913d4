"""The Python SDK's high-level `Client` and machine clients of the local issuer (issue #31).

- `mcp.Client` in its default `auto` mode probes `server/discover`, negotiates 2026-07-28
  (no initialize handshake), lists and calls tools; beside the `ClientSession` handshake of
  the other files.
- A machine client logs in the way Cognito lets machines (SPEC §5): from the gateway's 401 to
  its protected-resource metadata, to the issuer's OpenID discovery, to the token endpoint's
  client-credentials grant. The token carries `scope` and no `cognito:groups`; its scopes give
  the roles (`kosha/agent`, `kosha/operator`), a token whose scope names neither gets 403.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from test_auth import AGENT_TOOLS, HEADERS, INIT

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    """`mcp.Client` (default mode `auto`) on the gateway, with `token`."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=60.0))
    async with http:
        async with Client(streamable_http_client(url, http_client=http, terminate_on_close=False)) as c:
            yield c


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def discover_token_endpoint(gateway_url: str) -> str:
    """From the 401's `resource_metadata` to the issuer's token endpoint, as a client finds it."""
    r = httpx.post(gateway_url, json=INIT, headers=HEADERS, timeout=10)
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    resource = httpx.get(metadata_url, timeout=5).json()
    assert resource["scopes_supported"] == ["kosha/agent", "kosha/operator"]
    issuer = resource["authorization_servers"][0]
    openid = httpx.get(issuer + "/.well-known/openid-configuration", timeout=5).json()
    assert openid["issuer"] == issuer
    return openid["token_endpoint"]


def client_credentials(token_endpoint: str, client_id: str, secret: str, scope: str | None = None) -> httpx.Response:
    data = {"grant_type": "client_credentials"}
    if scope is not None:
        data["scope"] = scope
    return httpx.post(token_endpoint, data=data, auth=(client_id, secret), timeout=10)


def machine_token(stack: dict[str, str], name: str) -> str:
    endpoint = discover_token_endpoint(stack["KOSHA_GATEWAY_URL"])
    r = client_credentials(endpoint, stack[f"KOSHA_M2M_{name}_CLIENT_ID"], stack[f"KOSHA_M2M_{name}_CLIENT_SECRET"])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] > 0
    return body["access_token"]


async def test_client_in_auto_mode_negotiates_2026_07_28_and_calls_tools(gateway_url, agent_token):
    async with client(gateway_url, agent_token) as c:
        assert c.protocol_version == "2026-07-28"
        names = {t.name for t in (await c.list_tools()).tools}
        assert AGENT_TOOLS <= names
        result = await c.call_tool("get_transaction", {"transaction_id": "txn_000001"})
        assert result.is_error is not True, result.structured_content
        assert result.structured_content["transaction"]["transaction_id"] == "txn_000001"
        error = await c.call_tool("get_transaction", {"transaction_id": "bogus"})
        assert error.is_error is True
        assert error.structured_content["error"]["code"] == "invalid_argument"


def test_the_token_endpoint_is_discoverable_from_the_gateway(stack):
    assert discover_token_endpoint(stack["KOSHA_GATEWAY_URL"]) == stack["KOSHA_TOKEN_ENDPOINT"]


async def test_an_agent_machine_token_carries_its_scope_and_gets_the_agent_tools(stack, gateway_url):
    token = machine_token(stack, "AGENT")
    c = claims(token)
    assert c["scope"] == "kosha/agent" and c["token_use"] == "access"
    assert c["client_id"] == stack["KOSHA_M2M_AGENT_CLIENT_ID"] and c["iss"] == stack["KOSHA_JWT_ISSUER"]
    assert "cognito:groups" not in c
    async with client(gateway_url, token) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        assert AGENT_TOOLS <= names
        result = await s.call_tool("list_transactions", {"account_id": "acc_0002", "limit": 2})
        assert result.is_error is not True, result.structured_content


async def test_an_operator_machine_token_gets_only_the_operator_tools(stack, gateway_url):
    token = machine_token(stack, "OPERATOR")
    assert claims(token)["scope"] == "kosha/operator"
    async with client(gateway_url, token) as s:
        assert {t.name for t in (await s.list_tools()).tools} == {"get_service_health"}


def test_a_machine_token_whose_scope_names_no_role_is_403(stack, gateway_url):
    token = machine_token(stack, "NONE")
    assert claims(token)["scope"] == "kosha/mcp"
    r = httpx.post(gateway_url, json=INIT, headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 403
    assert 'error="insufficient_scope"' in r.headers["www-authenticate"]


def test_the_token_endpoint_refuses_as_cognito_does(stack):
    endpoint = stack["KOSHA_TOKEN_ENDPOINT"]
    agent, secret = stack["KOSHA_M2M_AGENT_CLIENT_ID"], stack["KOSHA_M2M_AGENT_CLIENT_SECRET"]
    wrong = client_credentials(endpoint, agent, secret + "x")
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert secret not in wrong.text
    # A scope the client may not have is invalid_scope, with the others or alone (issue 44).
    granted = client_credentials(endpoint, agent, secret, "kosha/agent")
    assert granted.status_code == 200 and granted.json()["scope"] == "kosha/agent"
    for scope in ("kosha/agent kosha/operator", "kosha/operator"):
        refused = client_credentials(endpoint, agent, secret, scope)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_scope"
    # Basic as one client naming another in the body is refused (issue 44).
    other = stack["KOSHA_M2M_OPERATOR_CLIENT_ID"]
    mixed = httpx.post(endpoint, data={"grant_type": "client_credentials", "client_id": other},
                       auth=(agent, secret), timeout=10)
    assert mixed.status_code == 400 and mixed.json()["error"] == "invalid_request"
    grant = httpx.post(endpoint, data={"grant_type": "password"}, auth=(agent, secret), timeout=10)
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
