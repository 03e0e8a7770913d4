"""A person and a machine log in through the Python SDK's OAuth providers (issue 44, SPEC §5).

- The authorization-code provider (PKCE S256) follows the gateway's 401 to the protected-
  resource metadata, the local issuer's RFC 8414 metadata and its login page, with the
  pre-registered public client `kosha-dev-mcp` (no dynamic registration, as Cognito); the
  login is scripted: the page's form is posted with the `agent` user, the redirect's code
  and state are handed back.
- The client-credentials provider does the same with a machine client's id and secret.
Each lists the tools and calls `get_transaction` through the gateway.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from test_auth import AGENT_TOOLS

pytestmark = pytest.mark.anyio

PUBLIC_CLIENT = "kosha-dev-mcp"
REDIRECT = "http://127.0.0.1:33418/callback"


class Memory(TokenStorage):
    """Tokens and client information in memory; a pre-registered client from the start."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class ScriptedLogin:
    """The person at the browser: opens the page, picks `username`, returns the code."""

    def __init__(self, username: str) -> None:
        self.username = username
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            action = re.search(r'<form method="post" action="([^"]+)"', page.text).group(1)
            fields = dict(re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page.text))
            assert f'value="{self.username}"' in page.text
            login = await http.post(urljoin(authorization_url, action), data={**fields, "username": self.username})
        assert login.status_code in (302, 303), login.text
        location = urlparse(login.headers["location"])
        assert location.geturl().startswith(REDIRECT)
        query = parse_qs(location.query)
        self.result = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def list_and_read(gateway_url: str, auth: httpx2.Auth) -> set[str]:
    http = httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30.0, read=60.0))
    async with http:
        transport = streamable_http_client(gateway_url, http_client=http, terminate_on_close=False)
        async with transport as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                result = await session.call_tool("get_transaction", {"transaction_id": "txn_000001"})
    assert result.is_error is not True, result.structured_content
    assert result.structured_content["transaction"]["transaction_id"] == "txn_000001"
    return names


async def test_a_person_logs_in_with_the_authorization_code_provider(gateway_url):
    login = ScriptedLogin("agent")
    storage = Memory(OAuthClientInformationFull(
        client_id=PUBLIC_CLIENT, redirect_uris=[REDIRECT], token_endpoint_auth_method="none",
        grant_types=["authorization_code"], response_types=["code"],
    ))
    provider = OAuthClientProvider(
        server_url=gateway_url,
        client_metadata=OAuthClientMetadata(
            client_name="kosha e2e", redirect_uris=[REDIRECT], token_endpoint_auth_method="none",
            grant_types=["authorization_code"], response_types=["code"],
        ),
        storage=storage,
        redirect_handler=login.redirect,
        callback_handler=login.callback,
    )
    names = await list_and_read(gateway_url, provider)
    assert AGENT_TOOLS <= names
    # The 401 named the agent scope, so that is what the client asked for and was granted.
    assert storage.tokens is not None and storage.tokens.scope == "kosha/agent"
    assert len(login.pages) == 1


async def test_a_machine_logs_in_with_the_client_credentials_provider(stack, gateway_url):
    storage = Memory()
    provider = ClientCredentialsOAuthProvider(
        server_url=gateway_url,
        storage=storage,
        client_id=stack["KOSHA_M2M_AGENT_CLIENT_ID"],
        client_secret=stack["KOSHA_M2M_AGENT_CLIENT_SECRET"],
        issuer=stack["KOSHA_JWT_ISSUER"],
    )
    names = await list_and_read(gateway_url, provider)
    assert AGENT_TOOLS <= names
    assert storage.tokens is not None and storage.tokens.scope == "kosha/agent"


def test_the_issuer_serves_what_it_advertises(stack):
    issuer = stack["KOSHA_JWT_ISSUER"]
    origin = "{0.scheme}://{0.netloc}".format(urlparse(issuer))
    rfc8414 = httpx.get(f"{origin}/.well-known/oauth-authorization-server{urlparse(issuer).path}", timeout=5)
    assert rfc8414.status_code == 200
    doc = rfc8414.json()
    assert doc["issuer"] == issuer
    assert doc["grant_types_supported"] == ["authorization_code", "client_credentials"]
    assert doc["code_challenge_methods_supported"] == ["S256"]
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        r = httpx.request("POST" if name == "token_endpoint" else "GET", doc[name], timeout=5)
        assert r.status_code not in (404, 405), (name, r.status_code)
    # A browser client on loopback may read the metadata and call the token endpoint.
    r = httpx.options(doc["token_endpoint"], headers={
        "origin": "http://localhost:6274", "access-control-request-method": "POST",
        "access-control-request-headers": "content-type"}, timeout=5)
    assert r.headers.get("access-control-allow-origin") == "http://localhost:6274"
