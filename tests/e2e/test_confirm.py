"""A person's confirmation (SPEC §5b, issue 47) on the real stack, through the official Python
SDK's `mcp.Client` (2.3) at MCP 2026-07-28.

One more gateway runs the example policy "Every dispute above 500.00 EUR needs its person's
yes" (docs/policies/confirm-disputes.cedar appended to the built-in set, as an operator deploys
it) with `KOSHA_CONFIRM_TTL_S=3`, so a state expires within the test; the sealing key is the
stack's (`kosha-ops bootstrap` creates `KOSHA_CONFIRM_SECRET_ID` on the emulator and the
gateway's environment names it).

- `Client(..., elicitation_callback=cb)` declares form elicitation in each request's `_meta`
  and drives the rounds itself: the callback is the person.
- `client.session.call_tool(..., allow_input_required=True)` gives the rounds one by one, for
  the states a test keeps, alters or hands to someone else.

Each dispute is raised on a seeded EUR transaction over 500.00 EUR without an open dispute, used
by no other call here; the database says whether it was raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateways import EXAMPLES, deployed, exit_code, running
from kosha_client import session
from test_auth import machine_token, mint

pytestmark = pytest.mark.anyio

POLICY = deployed((EXAMPLES / "confirm-disputes.cedar").read_text())
TTL_S = 3
# A confirmation rule whose evaluation fails: the product overflows a Long for any amount.
BROKEN = deployed("""
@id("confirm-overflowing")
forbid (principal, action == Kosha::Action::"raise_dispute", resource)
when { context.input.amount_minor * 9223372036854775807 > 0 }
unless { context.confirmed };
""")
# context.confirmed read for a tool that cannot be confirmed: the schema has no such attribute.
READ_CONFIRMED = deployed("""
@id("confirm-reads")
forbid (principal, action == Kosha::Action::"get_transaction", resource)
unless { context.confirmed };
""")


@pytest.fixture(scope="module")
def gateways(stack):
    env = {"KOSHA_CONFIRM_TTL_S": str(TTL_S)}
    with running(stack, {"confirm": (POLICY, None, env), "confirm-broken": (BROKEN, None, env)}) as started:
        yield {name: gw.url for name, gw in started.items()}


@pytest.fixture(scope="module")
def tokens(stack) -> dict[str, str]:
    """`agent` (the stack's user of kosha-dev-agent), `other` (another user of the same app
    client) and `machine` (the issuer's machine client, client-credentials grant)."""
    return {
        "agent": stack["KOSHA_AGENT_TOKEN"],
        "other": mint(stack, "--role", "agent", "--client-id", "kosha-dev-agent", "--user", "e2e-confirm-other"),
        "machine": machine_token(stack),
    }


def psql(stack: dict[str, str], sql: str) -> str:
    out = subprocess.run(["psql", stack["DATABASE_URL"], "-tAc", sql], check=True, capture_output=True, text=True)
    return out.stdout.strip()


class Ledger:
    """The seed's EUR transactions over 500.00 EUR without a dispute; `take` hands each out once."""

    def __init__(self, stack: dict[str, str]) -> None:
        self.stack = stack
        rows = psql(stack, "SELECT json_agg(json_build_object('transaction_id', t.transaction_id,"
                    " 'account_id', t.account_id, 'amount_minor', t.amount_minor) ORDER BY t.transaction_id)"
                    " FROM core.transactions t WHERE t.currency = 'EUR' AND t.amount_minor > 60000"
                    " AND NOT EXISTS (SELECT 1 FROM core.disputes d WHERE d.transaction_id = t.transaction_id)")
        self.rows = json.loads(rows)

    def take(self) -> dict:
        assert self.rows, "no seeded transaction over 500.00 EUR left"
        return self.rows.pop()

    def disputes(self, t: dict) -> int:
        return int(psql(self.stack, "SELECT count(*) FROM core.disputes"
                                    f" WHERE transaction_id = '{t['transaction_id']}'"))


@pytest.fixture(scope="module")
def ledger(stack) -> Ledger:
    return Ledger(stack)


def over(t: dict) -> dict:
    """raise_dispute's arguments for 600.00 EUR of `t`."""
    return {"transaction_id": t["transaction_id"], "amount_minor": 60000, "reason": f"e2e confirm {uuid.uuid4()}"}


@dataclass
class Person:
    """An elicitation callback: answers every question with `answer`, keeping each question."""

    answer: types.ElicitResult
    asked: list[types.ElicitRequestParams] = field(default_factory=list)

    async def __call__(self, _context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return self.answer


YES = types.ElicitResult(action="accept", content={"confirm": True, "note": "yes, I asked for it"})
NO = types.ElicitResult(action="accept", content={"confirm": False})
DECLINE = types.ElicitResult(action="decline")
CANCEL = types.ElicitResult(action="cancel")


@contextlib.asynccontextmanager
async def client(url: str, token: str, person: Person | None = None) -> AsyncIterator[Client]:
    """`mcp.Client` (mode `auto`: 2026-07-28 with this gateway) with `token`; with `person` as
    its elicitation callback when given."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=60.0))
    async with http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with Client(transport, elicitation_callback=person) as c:
            assert c.protocol_version == "2026-07-28"
            yield c


def code_of(result: types.CallToolResult) -> str | None:
    """The tool error's code, or None for a result."""
    return result.structured_content["error"]["code"] if result.is_error else None


async def ask(c: Client, args: dict) -> types.InputRequiredResult:
    """The first round by hand: the question."""
    r = await c.session.call_tool("raise_dispute", args, allow_input_required=True)
    assert isinstance(r, types.InputRequiredResult), r
    assert list(r.input_requests) == ["confirm"] and r.request_state
    return r


async def answer(c: Client, args: dict, state: str, response: types.ElicitResult = YES):
    """A retry by hand: `args`, the echoed `state` and the person's `response`."""
    return await c.session.call_tool("raise_dispute", args, input_responses={"confirm": response},
                                     request_state=state, allow_input_required=True)


async def test_an_accepted_question_raises_one_dispute(gateways, tokens, ledger):
    person = Person(YES)
    t = ledger.take()
    async with client(gateways["confirm"], tokens["agent"], person) as c:
        r = await c.call_tool("raise_dispute", over(t))
        # Under the threshold: no question.
        small = await c.call_tool("raise_dispute", {**over(ledger.take()), "amount_minor": 1000})
    assert code_of(r) is None and r.structured_content["created"] is True, r.structured_content
    assert code_of(small) is None and small.structured_content["created"] is True
    assert len(person.asked) == 1
    question = person.asked[0]
    assert question.mode == "form"
    assert "600.00 EUR" in question.message and t["transaction_id"] in question.message, question.message
    assert t["account_id"] in question.message, question.message
    assert set(question.requested_schema["properties"]) >= {"confirm"}
    assert ledger.disputes(t) == 1


@pytest.mark.parametrize("response", [NO, DECLINE, CANCEL], ids=["confirm-false", "decline", "cancel"])
async def test_a_declined_or_cancelled_question_raises_nothing(gateways, tokens, ledger, response):
    person = Person(response)
    t = ledger.take()
    async with client(gateways["confirm"], tokens["agent"], person) as c:
        r = await c.call_tool("raise_dispute", over(t))
    assert code_of(r) == "declined", r.structured_content
    assert len(person.asked) == 1
    assert ledger.disputes(t) == 0


async def test_the_accepted_state_replayed_answers_the_first_result(gateways, tokens, ledger):
    t = ledger.take()
    args = over(t)
    async with client(gateways["confirm"], tokens["agent"], Person(YES)) as c:
        q = await ask(c, args)
        first = await answer(c, args, q.request_state)
        again = await answer(c, args, q.request_state)
    assert first.structured_content["created"] is True, first
    assert again.structured_content["created"] is False, again
    assert again.structured_content["dispute_id"] == first.structured_content["dispute_id"]
    assert ledger.disputes(t) == 1


async def test_a_state_not_ours_for_this_call_is_invalid(gateways, tokens, ledger):
    t = ledger.take()
    args = over(t)
    async with client(gateways["confirm"], tokens["agent"], Person(YES)) as c:
        q = await ask(c, args)
        state = q.request_state
        i = len(state) // 2
        tampered = state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1:]
        got = {
            "tampered": await answer(c, args, tampered),
            "changed arguments": await answer(c, {**args, "amount_minor": 50001}, state),
            "another reason": await answer(c, {**args, "reason": "something else"}, state),
        }
    async with client(gateways["confirm"], tokens["other"], Person(YES)) as other:
        got["another user"] = await answer(other, args, state)
    codes = {k: code_of(r) for k, r in got.items()}
    assert codes == dict.fromkeys(got, "invalid_argument"), {k: r.structured_content for k, r in got.items()}
    assert ledger.disputes(t) == 0


async def test_an_expired_state_asks_again(gateways, tokens, ledger):
    t = ledger.take()
    args = over(t)
    async with client(gateways["confirm"], tokens["agent"], Person(YES)) as c:
        q = await ask(c, args)
        await asyncio.sleep(TTL_S + 1.5)
        again = await answer(c, args, q.request_state)
        assert isinstance(again, types.InputRequiredResult), again
        assert list(again.input_requests) == ["confirm"] and again.request_state != q.request_state
        assert ledger.disputes(t) == 0
        # The new question answered in time runs.
        done = await answer(c, args, again.request_state)
    assert done.structured_content["created"] is True, done
    assert ledger.disputes(t) == 1


async def test_a_client_that_cannot_be_asked_gets_confirmation_required(gateways, tokens, ledger):
    """A 2025-11-25 client (the initialize handshake), a 2026-07-28 client without an
    elicitation callback, and a machine token whose client could answer: nobody to ask."""
    calls = {}
    async with session(gateways["confirm"], tokens["agent"]) as legacy:
        t = ledger.take()
        calls["2025-11-25"] = (t, await legacy.call_tool("raise_dispute", over(t)))
    async with client(gateways["confirm"], tokens["agent"]) as no_callback:
        t = ledger.take()
        calls["no elicitation"] = (t, await no_callback.call_tool("raise_dispute", over(t)))
    person = Person(YES)
    async with client(gateways["confirm"], tokens["machine"], person) as machine:
        t = ledger.take()
        calls["machine"] = (t, await machine.call_tool("raise_dispute", over(t)))
    codes = {k: code_of(r) for k, (_, r) in calls.items()}
    assert codes == dict.fromkeys(calls, "confirmation_required"), codes
    message = calls["no elicitation"][1].structured_content["error"]["message"]
    assert "person" in message, message
    assert person.asked == []
    assert all(ledger.disputes(t) == 0 for t, _ in calls.values())


async def test_a_confirmation_rule_that_fails_to_evaluate_refuses(gateways, tokens, ledger):
    person = Person(YES)
    t = ledger.take()
    async with client(gateways["confirm-broken"], tokens["agent"], person) as c:
        r = await c.call_tool("raise_dispute", over(t))
    assert code_of(r) == "forbidden", r.structured_content
    assert person.asked == [] and ledger.disputes(t) == 0


def test_a_policy_reading_confirmed_for_a_read_tool_stops_the_gateway(stack):
    code, log = exit_code(stack, "confirm-read", READ_CONFIRMED)
    assert code == 2, log[-2000:]
    assert "invalid value for KOSHA_POLICY_FILE: policy confirm-reads" in log, log[-2000:]
