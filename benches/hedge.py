"""get_transaction's tail under a latency fault, with and without hedged reads (issue #33).

Run by scripts/bench-hedge, which brings up the stack and a second gateway with hedging off.
Three runs of --calls sequential calls through the official MCP client: no fault (hedging
on), the fault with hedging off, the fault with hedging on. The fault is a signed chaos
header (SPEC §9): latency --ms on a fraction --p of core-api attempts. For each run: the
client-side latency percentiles, and from the gateway's `tool call` log lines (SPEC §12) the
requests sent and the hedges among them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "scripts" / "lib")]

from kosha_client import load_stack_env, session  # noqa: E402
from kosha_py import percentile, sign  # noqa: E402

TXN = {"transaction_id": "txn_000200"}


def tool_calls(log: Path, offset: int) -> list[dict]:
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    lines = []
    for line in text.splitlines():
        if line.startswith("{") and '"tool call"' in line:
            doc = json.loads(line)
            if doc.get("tool") == "get_transaction":
                lines.append(doc)
    return lines


async def run(name: str, url: str, token: str, headers: dict[str, str], calls: int, log: Path) -> dict:
    async with session(url, token, headers) as s:
        for _ in range(100):  # warm-up: connections, and the hedge histogram's first samples
            await s.call_tool("get_transaction", TXN)
        time.sleep(0.3)
        offset = log.stat().st_size
        took, errors = [], 0
        started = time.monotonic()
        for _ in range(calls):
            t0 = time.monotonic()
            r = await s.call_tool("get_transaction", TXN)
            took.append(time.monotonic() - t0)
            errors += int(bool(r.is_error))
        wall = time.monotonic() - started
    time.sleep(0.5)
    lines = tool_calls(log, offset)
    attempts = sum(l.get("attempts", 0) for l in lines)
    hedges = sum(l.get("hedges", 0) for l in lines)
    row = {
        "run": name, "calls": calls, "errors": errors, "wall_s": round(wall, 1),
        "p50_ms": round(percentile(took, 0.50) * 1000, 1),
        "p99_ms": round(percentile(took, 0.99) * 1000, 1),
        "p999_ms": round(percentile(took, 0.999) * 1000, 1),
        "max_ms": round(max(took) * 1000, 1),
        "logged": len(lines), "attempts": attempts, "hedges": hedges,
        "hedges_per_call_pct": round(100 * hedges / max(1, len(lines)), 2),
    }
    print(json.dumps(row), flush=True)
    return row


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--ms", type=int, default=1000)
    ap.add_argument("--p", type=float, default=0.03)
    ap.add_argument("--no-hedge-url", required=True)
    ap.add_argument("--logs", required=True)
    a = ap.parse_args()
    stack = load_stack_env()
    token = stack["KOSHA_TESTER_TOKEN"]
    logs = Path(a.logs)
    header = {"x-kosha-chaos": sign(stack, "core-api", "latency", ms=a.ms, p=a.p, ttl="15m")}
    hedged_log, plain_log = logs / "mcp-gateway.log", logs / "mcp-gateway-nohedge.log"
    base = await run("no fault, hedging on", stack["KOSHA_GATEWAY_URL"], token, {}, a.calls, hedged_log)
    off = await run(f"latency {a.ms} ms p {a.p}, hedging off", a.no_hedge_url, token, header, a.calls, plain_log)
    on = await run(f"latency {a.ms} ms p {a.p}, hedging on", stack["KOSHA_GATEWAY_URL"], token, header, a.calls, hedged_log)
    print()
    print("| run | p50 ms | p99 ms | p99.9 ms | max ms | hedges / calls |")
    print("|---|---|---|---|---|---|")
    for r in (base, off, on):
        print(f"| {r['run']} | {r['p50_ms']} | {r['p99_ms']} | {r['p999_ms']} | {r['max_ms']} | {r['hedges']} / {r['logged']} ({r['hedges_per_call_pct']} %) |")
    ratio = on["p99_ms"] / base["p99_ms"]
    print(f"\nhedged p99 / no-fault p99 = {ratio:.2f} (target ≤ 3); extra core-api requests ≤ {on['hedges_per_call_pct']} % (target ≤ 5 %)")


if __name__ == "__main__":
    asyncio.run(main())
