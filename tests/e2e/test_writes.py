"""The write tools (raise_dispute, flag_transaction_for_review; SPEC §4, issue 11) through the
official MCP client against the whole stack: idempotency (replay, conflict, a derived key for a
repeated call, principals that share a key), the open-dispute rule, bad input that writes
nothing, and the event arriving on the events queue through outbox-relay."""

from __future__ import annotations

import json
import random
import subprocess
import time
import uuid

import boto3
import jsonschema
import pytest

from kosha_client import session
from kosha_py import dev

pytestmark = pytest.mark.anyio
WRITE_TOOLS = ("raise_dispute", "flag_transaction_for_review")


def unique_reason(label: str) -> str:
    return f"e2e {label} {uuid.uuid4()}"


async def fresh_dispute(s, label: str):
    """Raises a dispute on a random transaction without an open one; (args, result)."""
    for _ in range(20):
        args = {"transaction_id": f"txn_{random.randint(1, 5000):06d}", "reason": unique_reason(label)}
        result = await s.call_tool("raise_dispute", args)
        if result.is_error and result.structured_content["error"]["code"] == "conflict":
            continue
        return args, result
    raise AssertionError("no transaction without an open dispute in 20 tries")


def events_queue(stack: dict[str, str]):
    sqs = boto3.client("sqs", endpoint_url=stack["AWS_ENDPOINT_URL"], region_name=stack["AWS_REGION"],
                       aws_access_key_id=stack["AWS_ACCESS_KEY_ID"], aws_secret_access_key=stack["AWS_SECRET_ACCESS_KEY"])
    return sqs, stack["KOSHA_EVENTS_QUEUE_URL"]


# Every events-queue message these tests received, by aggregate id. The tests are the queue's
# only consumer, and each message is deleted once read: a message received and left would be
# redelivered, and after 5 receives the queue's redrive policy moves it to the DLQ.
_RECEIVED: dict[str, list[dict]] = {}


def events_about(stack: dict[str, str], aggregate_id: str, wait_s: float = 20) -> list[dict]:
    """Every message about `aggregate_id` received within `wait_s` (and any earlier)."""
    sqs, queue = events_queue(stack)
    until = time.monotonic() + wait_s
    while time.monotonic() < until:
        answer = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                     MessageAttributeNames=["All"])
        for m in answer.get("Messages", []):
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
            body = json.loads(m["Body"])
            _RECEIVED.setdefault(body.get("aggregate_id"), []).append(
                {"body": body, "attributes": m.get("MessageAttributes", {})})
        if aggregate_id in _RECEIVED:
            # Give a duplicate a moment to show up, then stop.
            until = min(until, time.monotonic() + 3)
    return _RECEIVED.get(aggregate_id, [])


async def test_write_tools_are_keyed_writes_for_agents(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    for name in WRITE_TOOLS:
        t = tools[name]
        a = t.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == (False, False, True), name
        assert set(t.input_schema["required"]) == {"transaction_id", "reason"}
        assert "idempotency_key" in t.input_schema["properties"]
    assert tools["raise_dispute"].input_schema["properties"]["amount_minor"]["minimum"] == 1


async def test_a_repeated_dispute_replays_and_its_event_arrives_once(gateway_url, agent_token, stack):
    async with session(gateway_url, agent_token) as s:
        schema = {t.name: t for t in (await s.list_tools()).tools}["raise_dispute"].output_schema
        args, first = await fresh_dispute(s, "replay")
        assert first.is_error is not True, first.structured_content
        jsonschema.validate(first.structured_content, schema)
        assert first.structured_content["created"] is True
        assert first.structured_content["status"] == "open"
        again = await s.call_tool("raise_dispute", dict(reversed(list(args.items()))))
    assert again.is_error is not True, again.structured_content
    assert again.structured_content == {**first.structured_content, "created": False}
    dispute_id = first.structured_content["dispute_id"]
    events = events_about(stack, dispute_id)
    assert len(events) == 1, events
    event = events[0]
    assert event["body"]["type"] == "dispute.opened"
    assert event["attributes"]["event_type"]["StringValue"] == "dispute.opened"
    assert event["body"]["payload"]["dispute_id"] == dispute_id
    assert set(event["body"]) == {"event_id", "type", "occurred_at", "aggregate_id", "payload"}


async def test_an_explicit_key_replays_and_refuses_other_arguments(gateway_url, agent_token):
    key = f"e2e-{uuid.uuid4()}"
    args = {"transaction_id": "txn_000321", "reason": unique_reason("key"), "idempotency_key": key}
    async with session(gateway_url, agent_token) as s:
        first = await s.call_tool("flag_transaction_for_review", args)
        replay = await s.call_tool("flag_transaction_for_review", args)
        other = await s.call_tool("flag_transaction_for_review", {**args, "reason": unique_reason("other")})
    assert first.structured_content["created"] is True
    assert first.structured_content["status"] == "pending_review"
    assert replay.structured_content["review_id"] == first.structured_content["review_id"]
    assert replay.structured_content["created"] is False
    assert other.is_error is True
    assert other.structured_content["error"]["code"] == "conflict"


async def test_two_principals_with_the_same_key_do_not_collide(gateway_url, agent_token, stack):
    key = f"e2e-shared-{uuid.uuid4()}"
    args = {"transaction_id": "txn_000322", "reason": unique_reason("shared"), "idempotency_key": key}
    async with session(gateway_url, agent_token) as s:
        a = await s.call_tool("flag_transaction_for_review", args)
    async with session(gateway_url, stack["KOSHA_TESTER_TOKEN"]) as s:
        b = await s.call_tool("flag_transaction_for_review", args)
    assert a.structured_content["created"] is True and b.structured_content["created"] is True
    assert a.structured_content["review_id"] != b.structured_content["review_id"]


async def test_a_second_open_dispute_is_a_conflict_naming_the_first(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        args, first = await fresh_dispute(s, "first")
        second = await s.call_tool("raise_dispute", {**args, "reason": unique_reason("second")})
    assert second.is_error is True
    err = second.structured_content["error"]
    assert err["code"] == "conflict"
    assert first.structured_content["dispute_id"] in err["message"]


BAD = [
    ({"amount_minor": 0}, "invalid_argument"),
    ({"amount_minor": -1}, "invalid_argument"),
    ({"amount_minor": 2**62}, "invalid_argument"),
    ({"amount_minor": 2**63}, "invalid_argument"),
    ({"reason": ""}, "invalid_argument"),
    ({"reason": "x" * 1001}, "invalid_argument"),
    ({"reason": "tab\tok but nul \x00 is not"}, "invalid_argument"),
    ({"reason": "escape \x1b[31m"}, "invalid_argument"),
    ({"transaction_id": "txn_999999"}, "not_found"),
    ({"transaction_id": "txn_12"}, "invalid_argument"),
    ({"transaction_id": "txn_000001' OR '1'='1"}, "invalid_argument"),
    ({"idempotency_key": ""}, "invalid_argument"),
    ({"idempotency_key": "é"}, "invalid_argument"),
]


def written(stack: dict[str, str]) -> str:
    """Rows in every table a write touches, read with psql from the stack's database."""
    sql = ("SELECT (SELECT count(*) FROM core.disputes) || ',' || (SELECT count(*) FROM core.reviews)"
           " || ',' || (SELECT count(*) FROM ops.outbox) || ',' || (SELECT count(*) FROM ops.idempotency_keys)")
    return subprocess.run(["psql", stack["DATABASE_URL"], "-tAc", sql], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize(("change", "code"), BAD, ids=[json.dumps(b[0])[:40] for b in BAD])
async def test_bad_input_is_a_tool_error_and_writes_nothing(gateway_url, agent_token, stack, change, code):
    args = {"transaction_id": "txn_000323", "reason": unique_reason("bad"), **change}
    before = written(stack)
    async with session(gateway_url, agent_token) as s:
        bad = await s.call_tool("raise_dispute", args)
        flagged = await s.call_tool("flag_transaction_for_review", {k: v for k, v in args.items() if k != "amount_minor"}) \
            if "amount_minor" not in change else bad
    for result in (bad, flagged):
        assert result.is_error is True, result.structured_content
        assert result.structured_content["error"]["code"] == code, result.structured_content
    assert written(stack) == before


async def test_health_lists_the_write_backend(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        health = (await s.call_tool("get_service_health", {})).structured_content
    writes = health["dependencies"]["core-api-writes"]
    assert writes["capacity"] == 16
    assert writes["breaker"] in {"closed", "half_open", "open", "forced_open"}


async def test_disputes_raised_while_the_relay_is_down_all_arrive_when_it_is_back(gateway_url, agent_token, stack):
    """SPEC §10's SQS row from the outside: writes do not wait for the relay; events do."""
    dev("stop", "outbox-relay")
    try:
        ids = []
        async with session(gateway_url, agent_token) as s:
            for i in range(5):
                _, result = await fresh_dispute(s, f"relay-down-{i}")
                assert result.is_error is not True, result.structured_content
                ids.append(result.structured_content["dispute_id"])
        assert events_about(stack, ids[0], wait_s=3) == []
    finally:
        dev("start", "outbox-relay")
    for dispute_id in ids:
        assert len(events_about(stack, dispute_id)) == 1, dispute_id


async def test_sqs_down_writes_still_succeed_and_every_event_arrives_once_it_is_back(gateway_url, agent_token, stack):
    """SPEC §10's SQS row: the relay's SQS is cut at its fault proxy; the tests read the
    emulator directly."""
    dev("stop", "sqs")
    try:
        ids = []
        async with session(gateway_url, agent_token) as s:
            for i in range(5):
                _, result = await fresh_dispute(s, f"sqs-down-{i}")
                assert result.is_error is not True, result.structured_content
                ids.append(result.structured_content["dispute_id"])
        assert events_about(stack, ids[0], wait_s=4) == []
    finally:
        dev("start", "sqs")
    # The relay's SQS breaker may have opened (30 s): allow for it.
    assert len(events_about(stack, ids[0], wait_s=45)) == 1
    for dispute_id in ids[1:]:
        assert len(events_about(stack, dispute_id)) == 1, dispute_id


async def test_postgres_down_write_tools_answer_unavailable_then_shed_with_retry_after(gateway_url, agent_token):
    """core-api's PostgreSQL cut at its proxy: each write is core-api's 503 naming postgres
    until the write breaker opens; then the gateway sheds with retry_after_s. Last in the file:
    it waits for writes to recover (the breaker's 15 s) before it ends."""
    errors = []
    dev("stop", "postgres")
    try:
        async with session(gateway_url, agent_token) as s:
            for i in range(25):
                r = await s.call_tool("flag_transaction_for_review",
                                      {"transaction_id": "txn_000324", "reason": unique_reason(f"pg-down-{i}")})
                assert r.is_error is True, r.structured_content
                errors.append(r.structured_content["error"])
                if errors[-1]["dependency"] == "core-api":
                    break
    finally:
        dev("start", "postgres")
    assert all(e["code"] == "dependency_unavailable" for e in errors), errors
    assert errors[0]["dependency"] == "postgres", errors[0]
    assert errors[-1]["dependency"] == "core-api" and errors[-1]["retry_after_s"] >= 1, errors[-1]
    async with session(gateway_url, agent_token) as s:
        health = (await s.call_tool("get_service_health", {})).structured_content["dependencies"]
        assert health["core-api-writes"]["breaker"] == "open", health
        assert health["core-api"]["breaker"] == "closed", health
        end = time.monotonic() + 40
        while time.monotonic() < end:
            r = await s.call_tool("flag_transaction_for_review", {"transaction_id": "txn_000324", "reason": unique_reason("pg-back")})
            if not r.is_error:
                break
            time.sleep(1)
        assert r.is_error is not True, r.structured_content
