"""Deferred-screening figures (issue 12, docs/benchmarks.md), against a running local stack:

1. deferral latency: screening-sim down through its /admin/chaos knob, the gateway's
   screening breaker open, N `screen_entity` calls through the official MCP client, each
   answered `deferred` (item + queue message written) — p50 / p95 / max, client-side;
2. recovery to completion: K screenings deferred during an outage of OUTAGE_S seconds, then
   the knob cleared at t0; the time until `get_screening_result` shows each one finished
   (polled every 250 ms) — median / max.

The stack needs a generous bucket (the script makes a few hundred calls as one agent):
    KOSHA_RATE_CAPACITY=100000 KOSHA_RATE_PER_SEC=1000 scripts/dev up
    .dev/venv/bin/python scripts/bench_screening.py [N] [K] [OUTAGE_S]
Prints one JSON line."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from kosha_client import load_stack_env, session  # noqa: E402


def chaos(env: dict[str, str], method: str, body: dict | None = None) -> None:
    r = httpx.request(method, env["KOSHA_SCREENING_URL"] + "/admin/chaos", json=body,
                      headers={"Authorization": f"Bearer {env['KOSHA_SIM_ADMIN_TOKEN']}"}, timeout=5)
    r.raise_for_status()


async def breaker(s) -> str:
    health = await s.call_tool("get_service_health", {})
    return health.structured_content["dependencies"]["screening-sim"]["breaker"]


async def deferred(s, name: str) -> str:
    r = await s.call_tool("screen_entity", {"name": name})
    out = r.structured_content
    if r.is_error or out["status"] != "deferred":
        raise SystemExit(f"expected deferred, got {out}")
    return out["screening_id"]


async def main(n: int, k: int, outage_s: float) -> None:
    env = load_stack_env()
    async with session(env["KOSHA_GATEWAY_URL"], env["KOSHA_AGENT_TOKEN"]) as s:
        chaos(env, "POST", {"down": True, "ttl_s": 600})
        try:
            for i in range(30):
                await deferred(s, f"Open Breaker {i}")
                if await breaker(s) == "open":
                    break
            latencies = []
            for i in range(n):
                started = time.perf_counter()
                await deferred(s, f"Jane Example {i}")
                latencies.append((time.perf_counter() - started) * 1000)
            ids = [await deferred(s, f"John Example {i}") for i in range(k)]
            await asyncio.sleep(max(0.0, outage_s))
        finally:
            chaos(env, "DELETE")
        t0 = time.monotonic()
        left, done = set(ids), {}
        while left and time.monotonic() - t0 < 120:
            for sid in list(left):
                r = await s.call_tool("get_screening_result", {"screening_id": sid})
                if r.structured_content.get("status") not in ("pending", None):
                    done[sid] = time.monotonic() - t0
                    left.discard(sid)
            await asyncio.sleep(0.25)
    latencies.sort()
    figures = {
        "deferral_ms": {
            "n": n,
            "p50": round(statistics.median(latencies), 1),
            "p95": round(latencies[max(0, int(0.95 * n) - 1)], 1),
            "max": round(latencies[-1], 1),
        },
        "recovery_to_completion_s": {
            "k": k,
            "outage_s": outage_s,
            "completed": len(done),
            "median": round(statistics.median(done.values()), 1) if done else None,
            "max": round(max(done.values()), 1) if done else None,
        },
    }
    print(json.dumps(figures))
    if left:
        raise SystemExit(f"{len(left)} screenings still pending 120 s after recovery")


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(int(args[0]) if args else 50, int(args[1]) if len(args) > 1 else 10,
                     float(args[2]) if len(args) > 2 else 60.0))
