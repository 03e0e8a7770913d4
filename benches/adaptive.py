"""Adaptive concurrency against fixed bulkheads when core-api slows under load (issue #33).

Run by scripts/bench-adaptive, which brings up the local stack and one extra gateway per
configuration, each calling core-api through `backend` below. Two commands:

- `backend`: a stand-in for a core-api with a fixed capacity in front of the real one: at most
  --workers requests are served at once, each held --service-ms before it is forwarded, the
  rest wait in line. So latency grows with the load offered (at 32 calls in flight and 4
  workers, 8 × the service time): a dependency whose latency triples under load.
- `run`: for each gateway (name=URL), --rate calls a second of `tools/call get_transaction`
  for --seconds, open loop (a call starts on schedule whatever the earlier ones are doing, as
  independent agents do); then per gateway: goodput (answers within the tool's 3 s budget per
  second), the other outcomes by code, the latency of the answers, and for the adaptive one the
  `bulkhead_limit` gauge's range from its log (SPEC §12).

Loopback only; every run is bounded by --seconds plus the 3 s budget and a 5 s client timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "lib"))
from kosha_py import percentile  # noqa: E402

BUDGET_S = 3.0  # get_transaction's budget (SPEC §4)
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


# ------------------------------------------------------------------ backend
def backend(args: argparse.Namespace) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    workers = asyncio.Semaphore(args.workers)
    core = httpx.AsyncClient(base_url=args.core_url, timeout=10.0)
    service = args.service_ms / 1000

    async def forward(request: Request) -> Response:
        async with workers:
            await asyncio.sleep(service)
            headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
            r = await core.request(request.method, request.url.path, params=request.query_params,
                                   headers=headers, content=await request.body())
        keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "retry-after")}
        return Response(r.content, r.status_code, headers=keep)

    app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


# ------------------------------------------------------------------ run
def outcome(response: httpx.Response | None) -> str:
    if response is None:
        return "client_timeout"
    try:
        body = response.json()
    except ValueError:
        return f"http_{response.status_code}"
    if "error" in body:
        return (body["error"].get("data") or {}).get("code", f"rpc_{body['error'].get('code')}")
    result = body.get("result", {})
    if result.get("isError"):
        return (result.get("structuredContent") or {}).get("error", {}).get("code", "tool_error")
    return "ok"


async def load(url: str, token: str, rate: float, seconds: float) -> list[tuple[str, float]]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "get_transaction", "arguments": {"transaction_id": "txn_000300"}}})
    headers = dict(HEADERS, authorization=f"Bearer {token}", **{"content-type": "application/json"})
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=200)
    results: list[tuple[str, float]] = []
    async with httpx.AsyncClient(timeout=5.0, limits=limits) as client:
        async def one() -> None:
            started = time.monotonic()
            try:
                r = await client.post(url, content=body, headers=headers)
            except httpx.HTTPError:
                r = None
            results.append((outcome(r), time.monotonic() - started))

        start = time.monotonic()
        tasks = []
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    return results


def limit_range(log: Path, offset: int) -> tuple[float, float] | None:
    """The smallest and largest `bulkhead_limit` gauge value for core-api in `log` past
    `offset` (EMF documents, SPEC §12), or None when it wrote none."""
    values = []
    with log.open("rb") as f:
        f.seek(offset)
        for line in f.read().decode(errors="replace").splitlines():
            if '"bulkhead_limit"' in line and line.startswith("{"):
                doc = json.loads(line)
                v = doc.get("bulkhead_limit")
                values += v if isinstance(v, list) else [v]
    return (min(values), max(values)) if values else None


async def run(args: argparse.Namespace) -> None:
    rows = []
    for spec in args.gateway:
        name, _, url = spec.partition("=")
        log = Path(args.logs) / f"mcp-gateway-{name}.log"
        offset = log.stat().st_size if log.exists() else 0
        # A few calls first: connections, the token cache and the bucket's lease.
        await load(url, args.token, 5, 1)
        await asyncio.sleep(1)
        results = await load(url, args.token, args.rate, args.seconds)
        codes = Counter(code for code, _ in results)
        good = [t for code, t in results if code == "ok" and t <= BUDGET_S]
        shed = [t for code, t in results if code == "overloaded"]
        row = {
            "gateway": name, "calls": len(results), "goodput_per_s": round(len(good) / args.seconds, 2),
            "ok_p50_ms": round(percentile(good, 0.5) * 1000, 1), "ok_p99_ms": round(percentile(good, 0.99) * 1000, 1),
            "overloaded_p50_ms": round(percentile(shed, 0.5) * 1000, 1), "outcomes": dict(codes),
        }
        if (r := limit_range(log, offset)) is not None:
            row["bulkhead_limit_min_max"] = r
        print(json.dumps(row), flush=True)
        rows.append(row)
        await asyncio.sleep(args.settle)  # the breaker and the backend's line drain
    print()
    print("| gateway | goodput /s | ok p50 ms | ok p99 ms | outcomes | bulkhead_limit min–max |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        lim = r.get("bulkhead_limit_min_max")
        lim = f"{lim[0]:g}–{lim[1]:g}" if lim else "—"
        print(f"| {r['gateway']} | {r['goodput_per_s']} | {r['ok_p50_ms']} | {r['ok_p99_ms']} | {outcomes} | {lim} |")
    fixed = [r["goodput_per_s"] for r in rows if r["gateway"] != "adaptive"]
    adaptive = [r["goodput_per_s"] for r in rows if r["gateway"] == "adaptive"]
    if fixed and adaptive:
        print(f"\nadaptive goodput {adaptive[0]} /s against the best fixed size's {max(fixed)} /s "
              f"(target: at least as much)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("backend")
    b.add_argument("--port", type=int, required=True)
    b.add_argument("--core-url", required=True)
    b.add_argument("--workers", type=int, default=4)
    b.add_argument("--service-ms", type=float, default=300.0)
    r = sub.add_parser("run")
    r.add_argument("--gateway", action="append", required=True, metavar="NAME=URL")
    r.add_argument("--token", required=True)
    r.add_argument("--rate", type=float, default=20.0)
    r.add_argument("--seconds", type=float, default=30.0)
    r.add_argument("--settle", type=float, default=5.0)
    r.add_argument("--logs", required=True)
    args = p.parse_args()
    if args.command == "backend":
        backend(args)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
