"""One outage at a time on the local stack (issue 14): each dependency sits behind its own
fault proxy, so `scripts/dev stop NAME` cuts that one alone and `start` brings it back.

- `dynamodb`: rate limiting fails open (SPEC §10 "metric only") while SQS still answers;
- `sqs`: SQS refuses while DynamoDB and the tools are unaffected;
- the emulator itself: an SQS long poll does not hold DynamoDB calls behind it (issue #30);
- `postgres`: core-api's connection only (the cluster keeps serving everyone else): data tools
  answer `dependency_unavailable` naming postgres, and recover once it is back.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import boto3
import botocore.config
import botocore.exceptions
import pytest

from kosha_client import emf_total, session

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
TXN = {"transaction_id": "txn_000321"}


@contextlib.contextmanager
def down(name: str):
    subprocess.run([str(ROOT / "scripts" / "dev"), "stop", name], check=True, env=os.environ, capture_output=True)
    try:
        yield
    finally:
        subprocess.run([str(ROOT / "scripts" / "dev"), "start", name], check=True, env=os.environ,
                       capture_output=True)


def client(stack: dict[str, str], service: str, env_key: str):
    return boto3.client(service, endpoint_url=stack[env_key], region_name=stack["AWS_REGION"],
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=botocore.config.Config(retries={"max_attempts": 1}, connect_timeout=2))


def answers(call) -> bool:
    try:
        call()
        return True
    except (botocore.exceptions.EndpointConnectionError, botocore.exceptions.ConnectionClosedError):
        return False


def test_an_sqs_long_poll_does_not_hold_dynamodb_calls(stack):
    """Issue #30: the emulator served one request at a time, so a worker's 20 s long poll
    held every DynamoDB call (and the rate limiter failed open locally)."""
    sqs = client(stack, "sqs", "AWS_ENDPOINT_URL")
    ddb = client(stack, "dynamodb", "AWS_ENDPOINT_URL")
    url = sqs.create_queue(QueueName=f"long-poll-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    polling = threading.Thread(target=lambda: sqs.receive_message(QueueUrl=url, WaitTimeSeconds=3))
    polling.start()
    try:
        time.sleep(0.5)
        started = time.monotonic()
        ddb.list_tables()
        took = time.monotonic() - started
        assert polling.is_alive(), "the long poll ended before the DynamoDB call was timed"
    finally:
        polling.join()
        sqs.delete_queue(QueueUrl=url)
    assert took < 1.0, f"ListTables took {took:.2f} s behind a 3 s long poll"


def test_each_aws_service_has_its_own_switch(stack):
    ddb = client(stack, "dynamodb", "AWS_ENDPOINT_URL_DYNAMODB")
    sqs = client(stack, "sqs", "AWS_ENDPOINT_URL_SQS")
    tables, queues = ddb.list_tables, sqs.list_queues
    assert answers(tables) and answers(queues)
    with down("sqs"):
        assert not answers(queues)
        assert answers(tables)
    with down("dynamodb"):
        assert not answers(tables)
        assert answers(queues)
    assert answers(tables) and answers(queues)


async def test_dynamodb_down_fails_open(gateway_url, agent_token, stack):
    gw_log = Path(stack["KOSHA_DEV_DIR"]) / "logs" / "mcp-gateway.log"
    before = emf_total(gw_log, "rate_limit", decision="fail_open")
    with down("dynamodb"):
        async with session(gateway_url, agent_token) as s:
            for _ in range(3):
                assert not (await s.call_tool("get_transaction", TXN)).is_error
        end = time.monotonic() + 10
        while time.monotonic() < end and emf_total(gw_log, "rate_limit", decision="fail_open") < before + 3:
            time.sleep(0.2)
    assert emf_total(gw_log, "rate_limit", decision="fail_open") >= before + 3


async def test_postgres_down_is_core_apis_dependency_only(gateway_url, agent_token, stack):
    with down("postgres"):
        # The cluster itself still serves direct connections.
        direct = subprocess.run(["psql", stack["DATABASE_URL"], "-tAc", "select 1"], capture_output=True, text=True)
        assert direct.stdout.strip() == "1", direct.stderr
        async with session(gateway_url, agent_token) as s:
            r = await s.call_tool("get_transaction", TXN)
        err = r.structured_content["error"]
        assert err["code"] == "dependency_unavailable" and err["dependency"] == "postgres", err
    async with session(gateway_url, agent_token) as s:
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if not (await s.call_tool("get_transaction", TXN)).is_error:
                break
            time.sleep(0.5)
        assert not (await s.call_tool("get_transaction", TXN)).is_error
