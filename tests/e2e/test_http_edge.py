"""The HTTP edge of POST /mcp, with raw HTTP where the SDK would hide the status (SPEC §3)."""

from __future__ import annotations

import httpx
import pytest

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
def client(agent_token):
    headers = dict(HEADERS)
    if agent_token:
        headers["authorization"] = f"Bearer {agent_token}"
    with httpx.Client(headers=headers, timeout=10) as c:
        yield c


def base(url: str) -> str:
    return url.rsplit("/mcp", 1)[0]


def test_healthz_needs_nothing(gateway_url):
    r = httpx.get(base(gateway_url) + "/healthz", timeout=5)
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_initialize_is_json_without_session(client, gateway_url):
    r = client.post(gateway_url, json=INIT)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in r.headers
    assert r.json()["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_supported_revisions(client, gateway_url, version):
    body = dict(INIT, params=dict(INIT["params"], protocolVersion=version))
    assert client.post(gateway_url, json=body).json()["result"]["protocolVersion"] == version


def test_unsupported_protocol_version_header_is_400(client, gateway_url):
    r = client.post(gateway_url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    headers={"mcp-protocol-version": "1999-01-01"})
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["id"] is None and r.json()["error"]["code"] == -32600


@pytest.mark.parametrize(("header", "value", "status"), [
    ("accept", "application/json", 406),
    ("content-type", "text/plain", 415),
])
def test_transport_refusals_are_json_rpc_errors(client, gateway_url, header, value, status):
    r = client.post(gateway_url, content=b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}',
                    headers={header: value, "mcp-protocol-version": "2025-11-25"})
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["error"]["code"] == -32600


@pytest.mark.parametrize(("body", "echo"), [
    ({"id": 4, "method": "tools/list"}, 4),
    ({"jsonrpc": "1.0", "id": "s", "method": "tools/list"}, "s"),
    ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}, None),
    ({"jsonrpc": "2.0", "id": 5, "method": 7}, 5),
    ({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": "x"}, 6),
])
def test_envelope_that_is_not_json_rpc_is_invalid_request(client, gateway_url, body, echo):
    r = client.post(gateway_url, json=body, headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["error"]["code"] == -32600 and r.json()["id"] == echo


def test_tools_call_with_array_params_is_invalid_params(client, gateway_url):
    r = client.post(gateway_url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": [1]},
                    headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32602 and r.json()["id"] == 7


def test_json_too_big_for_serde_is_invalid_request_not_parse_error(client, gateway_url):
    r = client.post(gateway_url, content=b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"n": 1e400}}',
                    headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32600


@pytest.mark.parametrize("query", ["refund\u0000", "\u001b[2J", "bell\u0007"])
def test_control_characters_in_arguments_are_invalid_argument(client, gateway_url, query):
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "search_knowledge_base", "arguments": {"query": query}}}
    r = client.post(gateway_url, json=call, headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 200
    result = r.json()["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_argument" and error["message"].startswith("query: ")


def test_malformed_json_is_parse_error(client, gateway_url):
    r = client.post(gateway_url, content=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32700


@pytest.mark.parametrize(("body", "code"), [
    (b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": "\\ud800"}}', -32700),
])
def test_duplicate_keys_and_lone_surrogates_are_refused(client, gateway_url, body, code):
    r = client.post(gateway_url, content=body, headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == code and r.json()["id"] is None


def test_batch_is_invalid_request(client, gateway_url):
    r = client.post(gateway_url, json=[INIT, INIT])
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32600


def test_body_over_one_mib_is_413(client, gateway_url):
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * (1024 * 1024 + 1)}}
    assert client.post(gateway_url, json=big).status_code == 413


def test_unknown_method_is_method_not_found(client, gateway_url):
    r = client.post(gateway_url, json={"jsonrpc": "2.0", "id": 5, "method": "tools/destroy"},
                    headers={"mcp-protocol-version": "2025-11-25"})
    assert r.json()["error"]["code"] == -32601


def test_notification_is_202_without_body(client, gateway_url):
    r = client.post(gateway_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 202 and r.content == b""


@pytest.mark.parametrize("body", [
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}},
])
def test_response_is_202_without_body(client, gateway_url, body):
    r = client.post(gateway_url, json=body, headers={"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 202 and r.content == b""


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_other_methods_are_405_allow_post(client, gateway_url, method):
    r = client.request(method, gateway_url)
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_foreign_origin_is_403(client, gateway_url):
    r = client.post(gateway_url, json=INIT, headers={"origin": "https://evil.example"})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == -32003


def test_foreign_host_is_403(client, gateway_url):
    r = client.post(gateway_url, json=INIT, headers={"host": "evil.example"})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == -32003


def test_subpath_is_not_mcp(client, gateway_url):
    assert client.post(gateway_url + "/extra", json=INIT).status_code == 404
