"""The AWS control plane through the running stack (issue 4, SPEC §6, §8, §10):
the DynamoDB token bucket, fleet-wide forced-open overrides, and failing open when the
state table is unreachable."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from kosha_client import emf_total, session
from kosha_py import dev, ops
from test_auth import mint

ROOT = Path(__file__).resolve().parents[2]
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def call(url: str, token: str, rid: int, name: str, arguments: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx.post(url, json=body, headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=10)


def test_tools_call_spends_from_the_dynamodb_bucket(gateway_url, stack):
    """The refusal's shape is tested in process (functions/mcp-gateway/tests/edge.rs) and the
    bucket maths and leases against the emulator (crates/state/tests/rate_limit.rs); here:
    the tools/calls of the running gateway go through the `rl#<client_id>` item (SPEC §6, §8)."""
    import boto3

    token = mint(stack, "--role", "agent", "--client-id", "kosha-e2e-limited")
    before = time.time()
    for i in range(3):
        assert call(gateway_url, token, 1000 + i, "get_service_health", {}).status_code == 200
    ddb = boto3.client("dynamodb", endpoint_url=stack["AWS_ENDPOINT_URL"], region_name=stack["AWS_REGION"],
                       aws_access_key_id="test", aws_secret_access_key="test")
    item = ddb.get_item(TableName=stack["KOSHA_STATE_TABLE"], Key={"pk": {"S": "rl#kosha-e2e-limited"}})["Item"]
    capacity = float(stack["KOSHA_RATE_CAPACITY"])
    assert float(item["tokens"]["N"]) <= capacity - 1  # the calls took tokens (in leases, SPEC §6)
    assert abs(int(item["updated_at"]["N"]) / 1000 - time.time()) < 30
    assert int(item["expires_at"]["N"]) >= int(before) + 3600 - 5


def drain_bucket(stack: dict[str, str], client_id: str, hold_s: float = 5.0) -> dict:
    """Empties `client_id`'s bucket: tokens 0, last written `hold_s` ahead, so even the e2e
    stack's fast refill (KOSHA_RATE_PER_SEC=1000) adds nothing until then. Returns the item."""
    import boto3

    now_ms = int(time.time() * 1000)
    item = {
        "pk": {"S": f"rl#{client_id}"},
        "tokens": {"N": "0"},
        "updated_at": {"N": str(now_ms + int(hold_s * 1000))},
        "expires_at": {"N": str(now_ms // 1000 + 3600)},
    }
    ddb = boto3.client("dynamodb", endpoint_url=stack["AWS_ENDPOINT_URL"], region_name=stack["AWS_REGION"],
                       aws_access_key_id="test", aws_secret_access_key="test")
    ddb.put_item(TableName=stack["KOSHA_STATE_TABLE"], Item=item)
    return ddb


@pytest.mark.anyio
async def test_an_empty_bucket_is_a_rate_limited_tool_error_through_the_sdk(gateway_url, stack):
    """SPEC §6: a tools/call the bucket refuses is a tool error the model reads (HTTP 200,
    `isError`, `structuredContent.error` {code: rate_limited, message, retry_after_s}), so the
    official Python client returns it as a result (it raised MCPError on the old 429). The
    SDK has validated it against the tool's outputSchema. Initializing again does not reset
    the bucket, refused calls spend nothing, and tools/list stays free."""
    client_id = "kosha-e2e-drained"
    token = mint(stack, "--role", "agent", "--client-id", client_id)
    ddb = drain_bucket(stack, client_id)
    key = {"pk": {"S": f"rl#{client_id}"}}
    before = ddb.get_item(TableName=stack["KOSHA_STATE_TABLE"], Key=key, ConsistentRead=True)["Item"]
    for _ in range(2):  # a second session: a new initialize handshake
        async with session(gateway_url, token) as s:
            assert (await s.list_tools()).tools  # free, and the outputSchema the SDK validates with
            result = await s.call_tool("get_transaction", {"transaction_id": "txn_000001"})
            assert result.is_error is True, result
            err = result.structured_content["error"]
            assert err["code"] == "rate_limited", err
            assert isinstance(err["retry_after_s"], int) and err["retry_after_s"] >= 1, err
            assert "retry after" in err["message"], err
            assert len(result.content) == 1 and result.content[0].type == "text"
            assert json.loads(result.content[0].text) == result.structured_content
    after = ddb.get_item(TableName=stack["KOSHA_STATE_TABLE"], Key=key, ConsistentRead=True)["Item"]
    assert after == before, "refused calls wrote nothing"


@pytest.mark.anyio
async def test_forced_open_override_fails_fast_then_clears(gateway_url, agent_token, stack):
    args = {"transaction_id": "txn_000200"}
    forced = ops(stack, "breaker", "force-open", "core-api", "--reason", "e2e drill", "--operator", "e2e")
    assert forced.returncode == 0, forced.stderr
    try:
        listed = [json.loads(line) for line in ops(stack, "breaker", "list").stdout.splitlines()]
        assert any(item["dependency"] == "core-api" for item in listed)
        async with session(gateway_url, agent_token) as s:
            deadline = time.monotonic() + 6
            err = None
            while time.monotonic() < deadline:
                r = await s.call_tool("get_transaction", args)
                if r.is_error:
                    err = r.structured_content["error"]
                    break
                time.sleep(0.25)
            assert err is not None, "override not honoured within 6 s"
            assert err["code"] == "dependency_unavailable" and err["retry_after_s"] >= 1
            health = (await s.call_tool("get_service_health", {})).structured_content
            dep = health["dependencies"]["core-api"]
            assert health["status"] == "degraded"
            assert dep["breaker"] == "forced_open"
            assert dep["override"]["reason"] == "e2e drill" and dep["override"]["set_by"] == "e2e"
    finally:
        cleared = ops(stack, "breaker", "clear", "core-api")
    assert cleared.returncode == 0, cleared.stderr
    async with session(gateway_url, agent_token) as s:
        deadline = time.monotonic() + 6
        ok = False
        while time.monotonic() < deadline:
            r = await s.call_tool("get_transaction", args)
            if not r.is_error:
                ok = True
                break
            time.sleep(0.25)
    assert ok, "still failing 6 s after clear"


def restart_gateway() -> None:
    dev("stop", "mcp-gateway")
    dev("start", "mcp-gateway")


@pytest.mark.anyio
async def test_a_new_instance_honours_an_override_from_its_first_call(gateway_url, agent_token, stack):
    """SPEC §8: a fresh instance reads the override before it admits a protected call, so the
    first tools/call after a restart is refused; clearing it is seen within one read interval
    (5 s) plus one read."""
    args = {"transaction_id": "txn_000300"}
    forced = ops(stack, "breaker", "force-open", "core-api", "--reason", "cold start drill", "--operator", "e2e")
    assert forced.returncode == 0, forced.stderr
    try:
        restart_gateway()
        async with session(gateway_url, agent_token) as s:
            first = await s.call_tool("get_transaction", args)
        assert first.is_error, first.structured_content
        assert first.structured_content["error"]["code"] == "dependency_unavailable"
    finally:
        cleared = ops(stack, "breaker", "clear", "core-api")
    assert cleared.returncode == 0, cleared.stderr
    start = time.monotonic()
    async with session(gateway_url, agent_token) as s:
        while time.monotonic() - start < 10:
            r = await s.call_tool("get_transaction", args)
            if not r.is_error:
                break
            time.sleep(0.5)
    took = time.monotonic() - start
    assert not r.is_error, "still refusing 10 s after clear"
    assert took < 7, f"cleared after {took:.1f} s"


def test_unknown_dependency_is_refused_with_exit_2(stack):
    r = ops(stack, "breaker", "force-open", "mainframe", "--reason", "x")
    assert r.returncode == 2
    assert r.stderr.strip() and len(r.stderr.strip().splitlines()) == 1


def test_state_table_down_fails_open_and_is_counted(gateway_url, agent_token, stack):
    dev_dir = stack["KOSHA_DEV_DIR"]
    log = Path(dev_dir) / "logs" / "mcp-gateway.log"
    env = {**os.environ, "KOSHA_DEV_DIR": dev_dir}
    subprocess.run([str(ROOT / "scripts" / "moto"), "stop"], env=env, check=True, capture_output=True)
    try:
        # Past the lease the agent may hold (KOSHA_LEASE_SECONDS, default 5; SPEC §6): each call
        # below then needs a bucket write, and each write fails open.
        time.sleep(5.5)
        for i in range(5):
            r = call(gateway_url, agent_token, 2000 + i, "get_transaction", {"transaction_id": "txn_000300"})
            assert r.status_code == 200
            assert r.json()["result"].get("isError") is not True
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and emf_total(log, "rate_limit", decision="fail_open") < 5:
            time.sleep(0.2)
        assert emf_total(log, "rate_limit", decision="fail_open") >= 5
    finally:
        subprocess.run([str(ROOT / "scripts" / "moto"), "start"], env=env, check=True, capture_output=True)
        boot = ops(stack, "bootstrap")
        assert boot.returncode == 0, boot.stderr
        # The restarted emulator lost the chaos secret: bootstrap (given the stack's environment)
        # recreates it with the key stack.env holds, so chaos headers signed with it still verify.
        assert f"KOSHA_CHAOS_KEY={stack['KOSHA_CHAOS_KEY']}" in boot.stdout.splitlines()


def test_a_testers_signed_chaos_header_injects_its_fault_and_forgeries_do_nothing(gateway_url, stack):
    """SPEC §9 on the live stack (CHAOS_ENABLED=true locally): an error fault on core-api from
    a tester fails the call as core-api being unavailable; the same header from an agent-only
    principal, or a tampered one, changes nothing; none of it spends more than the call."""
    signed = ops(stack, "chaos", "sign", "--target", "core-api", "--fault", "error", "--ttl", "5m")
    assert signed.returncode == 0, signed.stderr
    chaos = signed.stdout.strip()
    args = {"transaction_id": "txn_000400"}

    def get(token: str, header: str) -> dict:
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "get_transaction", "arguments": args}}
        r = httpx.post(gateway_url, json=body, timeout=10,
                       headers={**HEADERS, "authorization": f"Bearer {token}", "x-kosha-chaos": header})
        assert r.status_code == 200, r.text
        return r.json()["result"]

    faulted = get(stack["KOSHA_TESTER_TOKEN"], chaos)
    assert faulted.get("isError") is True
    assert faulted["structuredContent"]["error"]["code"] == "dependency_unavailable"
    assert get(stack["KOSHA_AGENT_TOKEN"], chaos).get("isError") is not True
    assert get(stack["KOSHA_TESTER_TOKEN"], chaos.replace("fault=error", "fault=reset")).get("isError") is not True
