"""The demo agent session run by `scripts/dev up`: initialize, tools/list, one call of each
read tool, then a dispute raised twice (the repeat replays it: `created: false`) and its
`dispute.opened` event read from the events queue, printed as a human reads it. Exits
non-zero if anything the agent saw is wrong."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from kosha_client import load_stack_env, session  # noqa: E402


def show(title: str, value: object) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    lines = text.splitlines()
    if len(lines) > 24:
        lines = lines[:24] + [f"  … ({len(lines) - 24} more lines)"]
    print(f"\n--- {title}")
    print("\n".join(lines))


async def main() -> int:
    env = load_stack_env()
    url = env["KOSHA_GATEWAY_URL"]
    token = env.get("KOSHA_AGENT_TOKEN")
    print(f"agent session against {url}")
    failures = 0
    async with session(url, token) as s:
        tools = await s.list_tools()
        print("\ntools/list:", ", ".join(t.name for t in tools.tools))
        calls = [
            ("search_knowledge_base", {"query": "how do I dispute a card transaction", "top_k": 3}),
            ("get_transaction", {"transaction_id": "txn_000042"}),
            ("list_transactions", {"account_id": "acc_0007", "limit": 3}),
            ("get_service_health", {}),
        ]
        for name, args in calls:
            result = await s.call_tool(name, args)
            if result.is_error:
                failures += 1
            show(f"{name}({json.dumps(args)}){'  [ERROR]' if result.is_error else ''}", result.structured_content)
        # A paraphrase that shares almost no word with the article (hybrid search, issue 13):
        # the card-fraud articles must come back, ranked by meaning, not degraded.
        args = {"query": "someone used my card without asking", "top_k": 5}
        paraphrase = await s.call_tool("search_knowledge_base", args)
        found = paraphrase.structured_content or {}
        titles = [hit["title"] for hit in found.get("results", [])]
        show(f"search_knowledge_base({json.dumps(args)}) -> titles", {"degraded": found.get("degraded"), "titles": titles})
        if paraphrase.is_error or found.get("degraded") or not any("card fraud" in t.lower() for t in titles):
            print("  expected a card-fraud article from a hybrid (not degraded) search")
            failures += 1
        # Sanctions screening (issue 12): one clear name, one listed person written another
        # way (Latin transliteration, reordered), each read back by its screening_id.
        screenings = [
            ({"name": "Hiroshi Tanaka", "country": "JP"}, "clear"),
            ({"name": "Haddad, Nabeel Sameer", "country": "EG"}, "potential_match"),
        ]
        for args, expected in screenings:
            result = await s.call_tool("screen_entity", args)
            out = result.structured_content or {}
            status = out.get("status")
            show(f"screen_entity({json.dumps(args, ensure_ascii=False)})", out)
            if result.is_error or status not in (expected, "deferred"):
                failures += 1
                continue
            back = await s.call_tool("get_screening_result", {"screening_id": out["screening_id"]})
            show(f"get_screening_result({out['screening_id']})", back.structured_content)
            if back.is_error:
                failures += 1
        calls += [("screen_entity", a) for a, _ in screenings]
        bad = await s.call_tool("get_transaction", {"transaction_id": "txn_999999"})
        show("get_transaction(unknown id) -> tool error as the agent sees it", bad.structured_content)
        if not bad.is_error:
            failures += 1
        dispute_failures = await dispute(s, env)
    writes = "dispute raised, replayed and its event delivered" if not dispute_failures else "dispute check FAILED"
    print(f"\nagent session finished: {len(calls) + 1 - failures} of {len(calls) + 1} tool calls answered; {writes}")
    return 1 if failures or dispute_failures else 0


async def dispute(s, env: dict[str, str]) -> int:
    """Raises a dispute, repeats the same call, and waits for its event on the queue."""
    # Each session picks a transaction of its own (the database outlives `up`), and moves on
    # when one already has an open dispute from an earlier session.
    start = int(time.time()) % 4000
    args: dict[str, object] = {}
    first = None
    for n in range(start, start + 20):
        args = {"transaction_id": f"txn_{n + 1:06d}", "reason": f"agent session {int(time.time())}: charged twice"}
        first = await s.call_tool("raise_dispute", args)
        code = (first.structured_content or {}).get("error", {}).get("code")
        if code != "conflict":
            break
    assert first is not None
    show(f"raise_dispute({json.dumps(args)}){'  [ERROR]' if first.is_error else ''}", first.structured_content)
    if first.is_error:
        return 1
    dispute_id = first.structured_content["dispute_id"]
    print(f"dispute {dispute_id} created: {first.structured_content['created']}")
    again = await s.call_tool("raise_dispute", args)
    show("raise_dispute(the same arguments again) -> replayed, not written twice", again.structured_content)
    failures = 0
    if again.is_error or again.structured_content.get("dispute_id") != dispute_id or again.structured_content.get("created") is not False:
        failures += 1
    event = wait_for_event(env, dispute_id)
    if event is None:
        print(f"\n--- no event for {dispute_id} on the events queue within 20 s (is outbox-relay running? scripts/dev status)")
        return failures + 1
    show(f"event on the events queue (published by outbox-relay, attribute event_type={event['attribute']})", event["body"])
    return failures


def wait_for_event(env: dict[str, str], aggregate_id: str) -> dict | None:
    """The events-queue message about `aggregate_id`, or None after 20 s. The session acts as
    the queue's consumer: every message it reads is deleted (one left unread is redelivered,
    and after 5 receives the redrive policy moves it to the DLQ)."""
    import boto3

    sqs = boto3.client("sqs", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_REGION"],
                       aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    queue = env["KOSHA_EVENTS_QUEUE_URL"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        answer = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                     MessageAttributeNames=["All"])
        for m in answer.get("Messages", []):
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
            body = json.loads(m["Body"])
            if body.get("aggregate_id") == aggregate_id:
                attribute = m.get("MessageAttributes", {}).get("event_type", {}).get("StringValue")
                return {"body": body, "attribute": attribute}
    return None


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
