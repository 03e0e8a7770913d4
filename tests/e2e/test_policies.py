"""The example policies of docs/operations.md (docs/policies/*.cedar; SPEC §5a, issue 46) on the
real stack, through the official Python SDK.

Each example is appended to the built-in set (crates/authz/src/builtin.cedar), as an operator
deploys it, and given to one more mcp-gateway (tests/e2e/gateways.py: the stack's debug binary
with the stack gateway's environment, its own port, `KOSHA_POLICY_FILE`), for the
business-hours example with `KOSHA_POLICY_NOW` (one gateway per clock). The stack's gateway
keeps the built-in set. The confirmation example has its own module, test_confirm.py.

- A tool the listing rule hides is absent from `tools/list` and a call of it is an unknown
  tool (-32602); a call a policy refuses is the tool error `forbidden` with the policy's
  `@reason`; what the policy does not refuse runs.
- A file that does not validate stops the gateway at start (exit 2), naming the policy and
  its line.
- `kosha-ops policy test` gives the gateway's answer on 20 recorded calls.

Transactions come from the stack's database (the seed: 5,000 transactions on acc_0001 to
acc_0050); each write takes one without an open dispute, used by no other call here.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from mcp.shared.exceptions import MCPError

from gateways import EXAMPLES, Gateway, deployed, exit_code, gateway_env, running
from kosha_client import session
from test_auth import AGENT_TOOLS, machine_token, mint, mint_in_groups

# The tools whose readOnlyHint is true: all a read-only client may call.
READ_TOOLS = {"search_knowledge_base", "get_transaction", "list_transactions", "get_service_health",
              "get_screening_result"}
# The tools that address a transaction: the gateway reads it when a policy reads context.record.
RECORD_TOOLS = {"get_transaction", "raise_dispute", "flag_transaction_for_review"}
UNKNOWN_TOOL = -32602


def epoch(day: int, hour: int) -> int:
    """Seconds since the epoch of December `day`, 2026, `hour`:00 UTC (the 5th is a Saturday,
    the 7th a Monday)."""
    return int(datetime.datetime(2026, 12, day, hour, tzinfo=datetime.timezone.utc).timestamp())


SATURDAY_10 = epoch(5, 10)
MONDAY_07 = epoch(7, 7)
MONDAY_09 = epoch(7, 9)

# The example gateways: name -> (example file, KOSHA_POLICY_NOW).
GATEWAYS = {
    "read-only": ("read-only-client.cedar", None),
    "dispute-cap": ("dispute-cap.cedar", None),
    "accounts": ("accounts.cedar", None),
    "hours-saturday-10": ("business-hours.cedar", SATURDAY_10),
    "hours-monday-07": ("business-hours.cedar", MONDAY_07),
    "hours-monday-09": ("business-hours.cedar", MONDAY_09),
}


def reason_of(example: str) -> str:
    """The `@reason` of the example's (first) forbid."""
    text = (EXAMPLES / example).read_text()
    return text.split('@reason("', 1)[1].split('")', 1)[0]


@pytest.fixture(scope="module")
def gateways(stack):
    """Every example gateway, started side by side; stopped after the module."""
    with running(stack, {name: (deployed((EXAMPLES / example).read_text()), now, None)
                         for name, (example, now) in GATEWAYS.items()}) as started:
        yield started


@pytest.fixture(scope="module")
def tokens(stack) -> dict[str, str]:
    """The callers: `agent` (a user of kosha-dev-agent, group agent), `machine` (the issuer's
    machine client kosha-dev-m2m-agent, client-credentials grant), `app_user` (a user of
    kosha-dev-mcp, group agent), `supervisor` (a user of kosha-dev-agent, groups agent and
    supervisor)."""
    return {
        "agent": stack["KOSHA_AGENT_TOKEN"],
        "machine": machine_token(stack),
        "app_user": mint(stack, "--role", "agent", "--client-id", "kosha-dev-mcp", "--user", "e2e-app-user"),
        "supervisor": mint_in_groups(stack, "e2e-supervisor", "kosha-dev-agent", ["agent", "supervisor"]),
    }


class Ledger:
    """The seed's transactions without an open dispute; `take` hands each out once."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def take(self, pred: Callable[[dict], bool]) -> dict:
        for i, row in enumerate(self.rows):
            if pred(row):
                return self.rows.pop(i)
        raise AssertionError("no seeded transaction left that fits")


@pytest.fixture(scope="module")
def ledger(stack) -> Ledger:
    sql = ("SELECT json_agg(json_build_object('transaction_id', t.transaction_id, 'account_id', t.account_id,"
           " 'amount_minor', t.amount_minor, 'currency', t.currency) ORDER BY t.transaction_id)"
           " FROM core.transactions t WHERE NOT EXISTS (SELECT 1 FROM core.disputes d"
           " WHERE d.transaction_id = t.transaction_id AND d.status = 'open')")
    out = subprocess.run(["psql", stack["DATABASE_URL"], "-tAc", sql], check=True, capture_output=True, text=True)
    # Later in the id order first: the other write tests pick low ids more often.
    return Ledger(list(reversed(json.loads(out.stdout))))


def anywhere(_t: dict) -> bool:
    return True


def eur_over(amount: int) -> Callable[[dict], bool]:
    return lambda t: t["currency"] == "EUR" and t["amount_minor"] >= amount


def on_account(account: str) -> Callable[[dict], bool]:
    return lambda t: t["account_id"] == account


def dispute(t: dict, amount: int | None = None) -> dict:
    args = {"transaction_id": t["transaction_id"], "reason": f"e2e policy {uuid.uuid4()}"}
    return args if amount is None else {**args, "amount_minor": amount}


def flag(t: dict) -> dict:
    return {"transaction_id": t["transaction_id"], "reason": f"e2e policy {uuid.uuid4()}"}


@dataclass
class Outcome:
    """What the gateway answered a tools/call: `ok` (a result), a tool error's code (`forbidden`,
    `conflict`, ...) with its message, or `unknown_tool` (JSON-RPC -32602)."""

    kind: str
    message: str | None = None
    content: dict | None = None


async def call(s, tool: str, args: dict) -> Outcome:
    try:
        r = await s.call_tool(tool, args)
    except MCPError as e:
        assert e.error.code == UNKNOWN_TOOL, e.error
        return Outcome("unknown_tool", e.error.message)
    if r.is_error:
        err = r.structured_content["error"]
        return Outcome(err["code"], err["message"], r.structured_content)
    return Outcome("ok", None, r.structured_content)


async def listed(s) -> set[str]:
    return {t.name for t in (await s.list_tools()).tools}


@pytest.mark.anyio
async def test_a_read_only_client_lists_and_calls_only_the_read_tools(gateways, tokens, ledger):
    gw = gateways["read-only"]
    t = ledger.take(anywhere)
    async with session(gw.url, tokens["machine"]) as s:
        assert await listed(s) == READ_TOOLS
        got = await call(s, "get_transaction", {"transaction_id": t["transaction_id"]})
        assert got.kind == "ok" and got.content["transaction"]["transaction_id"] == t["transaction_id"]
        got = await call(s, "list_transactions", {"account_id": t["account_id"], "limit": 2})
        assert got.kind == "ok" and len(got.content["transactions"]) == 2
        for tool, args in [("raise_dispute", dispute(t)), ("flag_transaction_for_review", flag(t)),
                           ("screen_entity", {"name": "Jane Doe"})]:
            got = await call(s, tool, args)
            # As a tool that does not exist: nothing tells the model a policy is behind it.
            assert (got.kind, got.message) == ("unknown_tool", f"unknown tool: {tool}"), (tool, got)
    # Another client of the same gateway keeps every tool.
    async with session(gw.url, tokens["agent"]) as s:
        assert await listed(s) == AGENT_TOOLS
        got = await call(s, "flag_transaction_for_review", flag(ledger.take(anywhere)))
        assert got.kind == "ok" and got.content["created"] is True, got


@pytest.mark.anyio
async def test_disputes_over_500_eur_need_a_supervisor(gateways, tokens, ledger):
    gw = gateways["dispute-cap"]
    reason = reason_of("dispute-cap.cedar")
    async with session(gw.url, tokens["agent"]) as s:
        assert await listed(s) == AGENT_TOOLS  # a smaller dispute may be raised: listed
        over = await call(s, "raise_dispute", dispute(ledger.take(eur_over(60000)), 60000))
        assert (over.kind, over.message) == ("forbidden", reason)
        # No amount: the dispute is for the whole transaction, over the cap.
        whole = await call(s, "raise_dispute", dispute(ledger.take(eur_over(60000))))
        assert (whole.kind, whole.message) == ("forbidden", reason)
        small = await call(s, "raise_dispute", dispute(ledger.take(eur_over(60000)), 1000))
        assert small.kind == "ok" and small.content["created"] is True, small
        at_cap = await call(s, "raise_dispute", dispute(ledger.take(eur_over(50000)), 50000))
        assert at_cap.kind == "ok", at_cap
        # The currency is the transaction's: 600.00 of another currency is not capped.
        other = ledger.take(lambda t: t["currency"] != "EUR" and t["amount_minor"] >= 60000)
        not_eur = await call(s, "raise_dispute", dispute(other, 60000))
        assert not_eur.kind == "ok", not_eur
    async with session(gw.url, tokens["supervisor"]) as s:
        allowed = await call(s, "raise_dispute", dispute(ledger.take(eur_over(60000)), 60000))
    assert allowed.kind == "ok" and allowed.content["created"] is True, allowed


@pytest.mark.anyio
async def test_an_app_client_touches_only_its_named_accounts(gateways, tokens, ledger):
    gw = gateways["accounts"]
    reason = reason_of("accounts.cedar")
    mine, theirs = ledger.take(on_account("acc_0001")), ledger.take(on_account("acc_0003"))
    async with session(gw.url, tokens["app_user"]) as s:
        assert await listed(s) == AGENT_TOOLS
        got = await call(s, "list_transactions", {"account_id": "acc_0001", "limit": 3})
        assert got.kind == "ok" and {x["account_id"] for x in got.content["transactions"]} == {"acc_0001"}
        got = await call(s, "list_transactions", {"account_id": "acc_0003", "limit": 3})
        assert (got.kind, got.message) == ("forbidden", reason)
        got = await call(s, "get_transaction", {"transaction_id": mine["transaction_id"]})
        assert got.kind == "ok" and got.content["transaction"]["account_id"] == "acc_0001"
        # A transaction id of another account is judged on that account.
        for tool, args in [("get_transaction", {"transaction_id": theirs["transaction_id"]}),
                           ("raise_dispute", dispute(theirs, 100)), ("flag_transaction_for_review", flag(theirs))]:
            got = await call(s, tool, args)
            assert (got.kind, got.message) == ("forbidden", reason), (tool, got)
        got = await call(s, "flag_transaction_for_review", flag(ledger.take(on_account("acc_0002"))))
        assert got.kind == "ok" and got.content["created"] is True, got
    # The policy names one app client; others keep every account.
    async with session(gw.url, tokens["agent"]) as s:
        got = await call(s, "get_transaction", {"transaction_id": theirs["transaction_id"]})
    assert got.kind == "ok", got


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "open_"), [("hours-saturday-10", False), ("hours-monday-07", False),
                                             ("hours-monday-09", True)])
async def test_disputes_are_taken_in_business_hours_only(gateways, tokens, ledger, name, open_):
    gw = gateways[name]
    async with session(gw.url, tokens["agent"]) as s:
        assert await listed(s) == AGENT_TOOLS  # listed at any hour: clients cache their lists
        got = await call(s, "raise_dispute", dispute(ledger.take(anywhere), 100))
        other = await call(s, "get_transaction", {"transaction_id": "txn_000001"})
    if open_:
        assert got.kind == "ok" and got.content["created"] is True, got
    else:
        assert (got.kind, got.message) == ("forbidden", reason_of("business-hours.cedar"))
    assert other.kind == "ok", other


def test_a_policy_file_that_does_not_validate_stops_the_gateway(stack):
    """A typo in an attribute (`amount` for `amount_minor`) fails strict validation: exit 2
    before serving, the log naming the policy's @id and the line (of the deployed file)."""
    text = deployed((EXAMPLES / "dispute-cap.cedar").read_text().replace("input.amount_minor", "input.amount"))
    line = next(n for n, l in enumerate(text.splitlines(), 1) if "context.input.amount >" in l)
    code, log = exit_code(stack, "invalid", text)
    assert code == 2, log[-2000:]
    assert f"invalid value for KOSHA_POLICY_FILE: policy dispute-cap-500-eur at line {line}: " in log, log[-2000:]


@dataclass
class Recorded:
    """One call as `kosha-ops policy test` is given it, and what the gateway answered."""

    gateway: Gateway
    caller: str
    tool: str
    args: dict
    record: dict | None = None
    outcome: Outcome | None = None


def policy_test(stack: dict[str, str], call: Recorded, token: str) -> dict:
    """`kosha-ops policy test` on the call, with the gateway's file, clock and token settings
    (the token on stdin); its JSON line."""
    cmd = [stack["KOSHA_OPS"], "policy", "test", str(call.gateway.policy_file), "--token", "-",
           "--tool", call.tool, "--args", json.dumps(call.args)]
    if call.record is not None:
        cmd += ["--record", json.dumps(call.record)]
    if call.gateway.now is not None:
        cmd += ["--now", str(call.gateway.now)]
    out = subprocess.run(cmd, input=token, env=gateway_env(stack), capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, (call.tool, call.args, out.stderr)
    return json.loads(out.stdout)


@pytest.mark.anyio
async def test_kosha_ops_policy_test_agrees_with_the_gateway_on_20_recorded_calls(
        stack, gateway_url, gateways, tokens, ledger):
    """Each call is made on an example gateway and recorded (file, token, tool, arguments, the
    addressed transaction as the stack's gateway reads it, the answer); `kosha-ops policy test`
    must answer the same: `forbidden` is a forbid with the same reason, an unknown tool is not
    listed, a result or any other tool error is an allow of a listed tool."""
    take = ledger.take
    mine = take(on_account("acc_0002"))["transaction_id"]
    big_eur = [take(eur_over(60000)) for _ in range(4)]
    other_acc = [take(on_account("acc_0005")) for _ in range(2)]
    gw = gateways
    calls = [
        Recorded(gw["read-only"], "machine", "get_transaction", {"transaction_id": mine}),
        Recorded(gw["read-only"], "machine", "list_transactions", {"account_id": "acc_0004", "limit": 1}),
        Recorded(gw["read-only"], "machine", "raise_dispute", dispute(take(anywhere), 100)),
        Recorded(gw["read-only"], "machine", "flag_transaction_for_review", flag(take(anywhere))),
        Recorded(gw["read-only"], "machine", "screen_entity", {"name": "Jane Doe"}),
        Recorded(gw["read-only"], "agent", "flag_transaction_for_review", flag(take(anywhere))),
        Recorded(gw["dispute-cap"], "agent", "raise_dispute", dispute(big_eur[0], 60000)),
        Recorded(gw["dispute-cap"], "agent", "raise_dispute", dispute(big_eur[1])),
        Recorded(gw["dispute-cap"], "agent", "raise_dispute", dispute(big_eur[2], 1000)),
        Recorded(gw["dispute-cap"], "supervisor", "raise_dispute", dispute(big_eur[3], 60000)),
        Recorded(gw["accounts"], "app_user", "list_transactions", {"account_id": "acc_0002", "limit": 1}),
        Recorded(gw["accounts"], "app_user", "list_transactions", {"account_id": "acc_0005", "limit": 1}),
        Recorded(gw["accounts"], "app_user", "get_transaction", {"transaction_id": mine}),
        Recorded(gw["accounts"], "app_user", "get_transaction", {"transaction_id": other_acc[0]["transaction_id"]}),
        Recorded(gw["accounts"], "app_user", "raise_dispute", dispute(other_acc[1], 100)),
        Recorded(gw["accounts"], "agent", "get_transaction", {"transaction_id": other_acc[0]["transaction_id"]}),
        Recorded(gw["hours-saturday-10"], "agent", "raise_dispute", dispute(take(anywhere), 100)),
        Recorded(gw["hours-monday-07"], "agent", "raise_dispute", dispute(take(anywhere), 100)),
        Recorded(gw["hours-monday-07"], "agent", "flag_transaction_for_review", flag(take(anywhere))),
        Recorded(gw["hours-monday-09"], "agent", "raise_dispute", dispute(take(anywhere), 100)),
    ]
    assert len(calls) == 20
    async with session(gateway_url, tokens["agent"]) as plain:
        for c in calls:
            if c.tool in RECORD_TOOLS:
                read = await call(plain, "get_transaction", {"transaction_id": c.args["transaction_id"]})
                assert read.kind == "ok", read
                c.record = {k: read.content["transaction"][k] for k in ("account_id", "amount_minor", "currency")}
    for c in calls:
        async with session(c.gateway.url, tokens[c.caller]) as s:
            c.outcome = await call(s, c.tool, c.args)
    with ThreadPoolExecutor(max_workers=4) as pool:
        lines = list(pool.map(lambda c: policy_test(stack, c, tokens[c.caller]), calls))
    disagree = []
    for c, line in zip(calls, lines):
        kind = c.outcome.kind
        if kind == "unknown_tool":
            agrees = line["listed"] is False and line["decision"] == "forbid"
        elif kind == "forbidden":
            agrees = line["listed"] is True and line["decision"] == "forbid" and line.get("reason") == c.outcome.message
        else:
            agrees = line["listed"] is True and line["decision"] == "allow"
        if not agrees:
            disagree.append((c.gateway.name, c.caller, c.tool, c.args, kind, c.outcome.message, line))
    assert not disagree, disagree
    # The calls cover every answer, so agreeing is not agreeing on one thing.
    assert {c.outcome.kind for c in calls} >= {"ok", "forbidden", "unknown_tool"}
