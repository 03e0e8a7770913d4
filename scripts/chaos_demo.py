"""The degradation matrix (SPEC §10) driven against the running local stack: run by
`scripts/chaos-demo` (see there and docs/operations.md, "Chaos testing").

Every row injects one fault — a tester's signed `X-Kosha-Chaos` header (`kosha-ops chaos
sign`, SPEC §9), the screening simulator's `/admin/chaos` knob, or one component stopped with
`scripts/dev stop NAME` where a header cannot express the fault — calls a tool through the
official MCP Python client as an agent would, and compares what the agent saw with the
matrix. Whatever a row stopped is started again (and the core-api breaker let close) before
the next row. A row whose tool the gateway does not serve yet prints `not built` and does not
fail. Exit status 1 when any row fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "scripts" / "lib")]

from kosha_client import load_stack_env  # noqa: E402
from kosha_py import dev, sign  # noqa: E402

NOT_BUILT, PASS, FAIL = "not built", "PASS", "FAIL"
# How long core-api's breaker may take to close after an outage row, and how long deferred
# work (a screening the worker completes, an outbox event the relay publishes) may take.
RECOVERY_S = float(os.environ.get("KOSHA_DEMO_RECOVERY_S", "45"))
LATER_S = float(os.environ.get("KOSHA_DEMO_LATER_S", "120"))
# How long one call may wait on the bucket (a `rate_limited` tool error, SPEC §6).
RATE_WAIT_S = 60.0
TXN = {"transaction_id": "txn_000042"}


@dataclass
class Seen:
    """What the agent saw from one tool call."""

    status: str = "-"
    code: str = "-"
    degraded: str = "-"
    retry_after_s: str = "-"
    latency_ms: int = 0
    content: dict | None = None

    @property
    def error(self) -> dict:
        return (self.content or {}).get("error") or {}


@dataclass
class Row:
    name: str
    fault: str
    expected: str
    seen: Seen | None = None
    verdict: str = FAIL
    note: str = ""


class Stack:
    """The running stack of .dev/stack.env (or $KOSHA_STACK_ENV)."""

    def __init__(self) -> None:
        self.env = load_stack_env()
        self.url = self.env["KOSHA_GATEWAY_URL"]
        self.dev_dir = Path(self.env["KOSHA_DEV_DIR"])
        self.stopped: set[str] = set()

    def sign(self, target: str, fault: str, ms: int | None = None, p: float = 1.0) -> str:
        return sign(self.env, target, fault, ms=ms, p=p)

    def dev(self, action: str, name: str) -> None:
        dev(action, name, stack=self.env)
        (self.stopped.add if action == "stop" else self.stopped.discard)(name)

    @contextlib.contextmanager
    def down(self, name: str):
        """`name` stopped for the block, started again after it whatever happens."""
        self.dev("stop", name)
        try:
            yield
        finally:
            self.dev("start", name)

    def restore(self) -> None:
        for name in sorted(self.stopped):
            with contextlib.suppress(Exception):
                self.dev("start", name)

    def running(self, name: str) -> bool:
        return (self.dev_dir / "pids" / f"{name}.pid").exists()

    def sql(self, query: str) -> str:
        out = subprocess.run(["psql", self.env["DATABASE_URL"], "-tAc", query],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip() if out.returncode == 0 else ""


class Agent:
    """An MCP client session with one bearer token and, optionally, a chaos header."""

    def __init__(self, session: ClientSession, statuses: list[int]) -> None:
        self.session = session
        self.statuses = statuses

    async def call(self, name: str, args: dict) -> Seen:
        """One tool call as the agent sees it. A rate-limited call (the tool error
        `rate_limited`, SPEC §6: a default stack's bucket holds 20 calls, refilled at 1/s) is
        retried after its `retry_after_s`, as a well-behaved agent would, so the demo paces
        itself under the bucket."""
        waited = 0.0
        while True:
            started = time.monotonic()
            try:
                result = await self.session.call_tool(name, args)
            except Exception as e:  # a JSON-RPC error: what the agent saw
                error = getattr(e, "error", None)
                code = getattr(error, "code", type(e).__name__)
                return Seen(status=self.last_status(), code=f"rpc {code}",
                            latency_ms=round((time.monotonic() - started) * 1000))
            limited = (result.structured_content or {}).get("error") if result.is_error else None
            if limited and limited.get("code") == "rate_limited" and waited < RATE_WAIT_S:
                pause = float(limited.get("retry_after_s") or 1)
                print(f"    rate limited: waiting {pause:.0f} s", file=sys.stderr)
                await asyncio.sleep(pause)
                waited += pause
                continue
            break
        ms = round((time.monotonic() - started) * 1000)
        content = result.structured_content or {}
        err = content.get("error") if result.is_error else None
        return Seen(
            status=self.last_status(),
            code=(err or {}).get("code", "ok") if result.is_error else "ok",
            degraded=str(content["degraded"]).lower() if "degraded" in content else "-",
            retry_after_s=str((err or content).get("retry_after_s", "-")),
            latency_ms=ms,
            content=content,
        )

    def last_status(self) -> str:
        return str(self.statuses[-1]) if self.statuses else "-"


@contextlib.asynccontextmanager
async def agent(stack: Stack, token_key: str, chaos: str | None = None) -> AsyncIterator[Agent]:
    headers = {"Authorization": f"Bearer {stack.env[token_key]}"}
    if chaos:
        headers["X-Kosha-Chaos"] = chaos
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    timeout = httpx2.Timeout(30.0, read=60.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout,
                                  event_hooks={"response": [record]}) as http:
        async with streamable_http_client(stack.url, http_client=http, terminate_on_close=False) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield Agent(s, statuses)


async def served_tools(stack: Stack) -> set[str]:
    async with agent(stack, "KOSHA_TESTER_TOKEN") as a:
        return {t.name for t in (await a.session.list_tools()).tools}


async def breaker(a: Agent) -> str:
    health = await a.call("get_service_health", {})
    return ((health.content or {}).get("dependencies", {}).get("core-api") or {}).get("breaker", "?")


def rejected_by_open_breaker(seen: Seen) -> bool:
    """The answer of core-api's open breaker (SPEC §6): `dependency_unavailable` naming
    core-api with a `retry_after_s` (core-api's own 503s name postgres; a refused connection
    has no hint)."""
    e = seen.error
    return e.get("code") == "dependency_unavailable" and e.get("dependency") == "core-api" \
        and e.get("retry_after_s") is not None


async def until_open(a: Agent, name: str, args: dict, calls: int = 60) -> Seen:
    """Calls until core-api's breaker answers; that answer."""
    seen = await a.call(name, args)
    for _ in range(calls):
        if rejected_by_open_breaker(seen):
            break
        seen = await a.call(name, args)
    return seen


async def until_recovered(stack: Stack) -> bool:
    """Waits until an agent's get_transaction succeeds again with the breaker closed."""
    end = time.monotonic() + RECOVERY_S
    async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
        while time.monotonic() < end:
            if (await a.call("get_transaction", TXN)).code == "ok" and await breaker(a) == "closed":
                return True
            await asyncio.sleep(1)
    return False


# ---------------------------------------------------------------------------------- rows
# Each takes the stack and the served tools and fills in its Row.

async def openai(stack: Stack, tools: set[str]) -> Row:
    row = Row("OpenAI", "header openai/error p=1", "ok, degraded=true, embeddings_unavailable")
    args = {"query": "how do I dispute a card transaction", "top_k": 3}
    if "search_knowledge_base" not in tools:
        return built_not(row)
    async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
        plain = await a.call("search_knowledge_base", args)
    health = fetch_json(stack.env["KOSHA_CORE_API_URL"] + "/v1/health")
    if plain.degraded == "-" or "embed" not in json.dumps(health):
        return built_not(row, "search has no degraded field or core-api no embedder yet")
    async with agent(stack, "KOSHA_TESTER_TOKEN", stack.sign("openai", "error")) as a:
        seen = await a.call("search_knowledge_base", args)
    c = seen.content or {}
    return judge(row, seen, seen.code == "ok" and c.get("degraded") is True
                 and c.get("degraded_reason") == "embeddings_unavailable" and bool(c.get("results")))


async def screening_header(stack: Stack, tools: set[str]) -> Row:
    row = Row("screening-sim", "header screening-sim/error p=1",
              "ok, status=deferred, retry_after_s>=5; get_screening_result finds it, completed")
    if "screen_entity" not in tools:
        return built_not(row)
    async with agent(stack, "KOSHA_TESTER_TOKEN", stack.sign("screening-sim", "error")) as a:
        seen = await a.call("screen_entity", {"name": f"Chaos Demo {uuid.uuid4().hex[:8]}"})
    return await deferred_then_completed(stack, row, seen, "KOSHA_TESTER_TOKEN")


async def screening_admin(stack: Stack, tools: set[str]) -> Row:
    row = Row("screening-sim", "sim /admin/chaos down",
              "ok, status=deferred, retry_after_s>=5; completed after the sim recovers")
    base, token = stack.env.get("KOSHA_SCREENING_URL"), stack.env.get("KOSHA_SIM_ADMIN_TOKEN")
    if "screen_entity" not in tools or not base or not token:
        return built_not(row)
    admin = {"Authorization": f"Bearer {token}"}
    httpx2.post(f"{base}/admin/chaos", json={"down": True, "ttl_s": 120}, headers=admin, timeout=5).raise_for_status()
    try:
        async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
            for _ in range(30):
                seen = await a.call("screen_entity", {"name": f"Chaos Demo {uuid.uuid4().hex[:8]}"})
                if (seen.content or {}).get("status") == "deferred":
                    break
    finally:
        httpx2.delete(f"{base}/admin/chaos", headers=admin, timeout=5)
    return await deferred_then_completed(stack, row, seen, "KOSHA_AGENT_TOKEN")


async def deferred_then_completed(stack: Stack, row: Row, seen: Seen, token: str) -> Row:
    """`token` names the token that screened: a screening is its client's only (SPEC §4)."""
    c = seen.content or {}
    ok = seen.code == "ok" and c.get("status") == "deferred" and int(c.get("retry_after_s") or 0) >= 5
    seen.retry_after_s = str(c.get("retry_after_s", "-"))
    if ok:
        end, status = time.monotonic() + LATER_S, None
        async with agent(stack, token) as a:
            while time.monotonic() < end:
                got = await a.call("get_screening_result", {"screening_id": c["screening_id"]})
                status = (got.content or {}).get("status")
                if got.code == "ok" and status in ("clear", "potential_match"):
                    break
                await asyncio.sleep(1)
        row.note = f"later: {status}"
        ok = status in ("clear", "potential_match")
    return judge(row, seen, ok)


async def dynamodb(stack: Stack, tools: set[str]) -> Row:
    row = Row("DynamoDB", "scripts/dev stop dynamodb", "ok (rate limit fails open), < 3 s")
    with stack.down("dynamodb"):
        async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
            seens = [await a.call("get_transaction", TXN) for _ in range(3)]
    seen = max(seens, key=lambda s: s.latency_ms)
    return judge(row, seen, all(s.code == "ok" for s in seens) and seen.latency_ms < 3000)


async def sqs(stack: Stack, tools: set[str]) -> Row:
    row = Row("SQS", "scripts/dev stop sqs",
              "ok, created=true; event waits in ops.outbox, published once SQS is back")
    if "flag_transaction_for_review" not in tools:
        return built_not(row)
    args = {"transaction_id": f"txn_{random.randint(1, 5000):06d}", "reason": f"chaos demo {uuid.uuid4()}"}
    with stack.down("sqs"):
        async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
            seen = await a.call("flag_transaction_for_review", args)
        review = str((seen.content or {}).get("review_id", ""))
        if not re.fullmatch(r"rev_[0-9A-Z]{26}", review):  # quoted into SQL below
            return judge(row, seen, False)
        waiting = stack.sql(f"select count(*) from ops.outbox where aggregate_id = '{review}' "
                            "and published_at is null") == "1"
    ok = seen.code == "ok" and (seen.content or {}).get("created") is True and waiting
    row.note = "in ops.outbox while SQS was down" if waiting else "no unpublished outbox row"
    if ok and stack.running("outbox-relay"):
        end = time.monotonic() + LATER_S
        while time.monotonic() < end and stack.sql(
                f"select count(*) from ops.outbox where aggregate_id = '{review}' and published_at is not null") != "1":
            await asyncio.sleep(1)
        published = stack.sql(f"select count(*) from ops.outbox where aggregate_id = '{review}' "
                              "and published_at is not null") == "1"
        row.note += "; published after" if published else "; NOT published after SQS came back"
        ok = published
    return judge(row, seen, ok)


async def postgres_header(stack: Stack, tools: set[str]) -> Row:
    row = Row("PostgreSQL", "header postgres/error p=1", "dependency_unavailable (postgres)")
    async with agent(stack, "KOSHA_TESTER_TOKEN", stack.sign("postgres", "error")) as a:
        seen = await a.call("get_transaction", TXN)
    return judge(row, seen, seen.code == "dependency_unavailable" and seen.error.get("dependency") == "postgres")


async def postgres_stopped(stack: Stack, tools: set[str]) -> Row:
    row = Row("PostgreSQL", "scripts/dev stop postgres",
              "dependency_unavailable, retry_after_s, once the breaker opens")
    with stack.down("postgres"):
        async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
            seen = await until_open(a, "get_transaction", TXN)
            is_open = await breaker(a) == "open"
    ok = seen.code == "dependency_unavailable" and seen.retry_after_s not in ("-", "None") and is_open
    return await recovered(stack, judge(row, seen, ok))


async def core_api_header(stack: Stack, tools: set[str]) -> Row:
    row = Row("core-api", "header core-api/latency 400 ms", "ok, latency >= 400 ms, < 3 s")
    async with agent(stack, "KOSHA_TESTER_TOKEN", stack.sign("core-api", "latency", ms=400)) as a:
        seen = await a.call("get_transaction", TXN)
    return judge(row, seen, seen.code == "ok" and 400 <= seen.latency_ms < 3000)


async def core_api_stopped(stack: Stack, tools: set[str]) -> Row:
    row = Row("core-api", "scripts/dev stop core-api",
              "dependency_unavailable, retry_after_s; get_service_health answers (degraded)")
    with stack.down("core-api"):
        async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
            seen = await until_open(a, "get_transaction", TXN)
            health = await a.call("get_service_health", {})
    h = health.content or {}
    ok = (seen.code == "dependency_unavailable" and seen.retry_after_s not in ("-", "None")
          and health.code == "ok" and h.get("status") == "degraded"
          and h.get("dependencies", {}).get("core-api", {}).get("breaker") == "open")
    row.note = f"health: {h.get('status')}, core-api breaker {h.get('dependencies', {}).get('core-api', {}).get('breaker')}"
    return await recovered(stack, judge(row, seen, ok))


async def jwks(stack: Stack, tools: set[str]) -> Row:
    row = Row("JWKS", "jwks.json removed", "ok: cached keys (10 min + 50 min grace)")
    path = stack.dev_dir / "jwks.json"
    away = path.with_suffix(".json.chaos-demo")
    async with agent(stack, "KOSHA_AGENT_TOKEN") as a:
        await a.call("get_service_health", {})  # the keys are cached
        shutil.move(path, away)
        try:
            seen = await a.call("get_transaction", TXN)
        finally:
            shutil.move(away, path)
    return judge(row, seen, seen.code == "ok")


ROWS: list[Callable[[Stack, set[str]], Awaitable[Row]]] = [
    openai, screening_header, screening_admin, dynamodb, sqs, postgres_header, postgres_stopped,
    core_api_header, core_api_stopped, jwks,
]


def built_not(row: Row, note: str = "tool not in tools/list yet") -> Row:
    row.verdict, row.note = NOT_BUILT, note
    return row


def judge(row: Row, seen: Seen, ok: bool) -> Row:
    row.seen, row.verdict = seen, PASS if ok else FAIL
    return row


async def recovered(stack: Stack, row: Row) -> Row:
    """After an outage row: the breaker must close again (recovery is part of the row)."""
    if not await until_recovered(stack):
        row.verdict, row.note = FAIL, (row.note + "; " if row.note else "") + "did not recover"
    return row


def fetch_json(url: str) -> object:
    try:
        return httpx2.get(url, timeout=5).json()
    except Exception:
        return None


def table(rows: list[Row]) -> str:
    head = ["row", "fault injected", "status", "code", "degraded", "retry_after_s", "latency", "expected", "result"]
    lines = []
    for r in rows:
        s = r.seen or Seen()
        lat = f"{s.latency_ms} ms" if r.seen else "-"
        result = r.verdict + (f" ({r.note})" if r.note else "")
        lines.append([r.name, r.fault, s.status, s.code, s.degraded, s.retry_after_s, lat, r.expected, result])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*map(str, line)) for line in lines]
    return "\n".join(out)


async def main() -> int:
    stack = Stack()
    print(f"chaos demo against {stack.url} (SPEC §10)", file=sys.stderr)
    tools = await served_tools(stack)
    rows: list[Row] = []
    try:
        for run in ROWS:
            print(f"  {run.__name__} …", file=sys.stderr)
            try:
                rows.append(await run(stack, tools))
            except Exception as e:  # a row that cannot run is a failed row, not a crash
                rows.append(Row(run.__name__, "-", "-", note=f"error: {e}"))
    finally:
        stack.restore()
    print(table(rows))
    failed = [r for r in rows if r.verdict == FAIL]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows pass or are not built; {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
