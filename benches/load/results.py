"""The load benchmark's results (scripts/bench-load, docs/benchmarks.md): what the script
computed inline before 2026-12-05, one subcommand each. Standard library only.

    python3 benches/load/results.py per-call SECONDS SUMMARY.json
        µs of CPU per request: SECONDS of CPU over the requests of wrk's SUMMARY.json.
    python3 benches/load/results.py own-time LOG OFFSET
        "p50_ms p99_ms n" of the gateway's `overhead_us` in the `tool call` lines of LOG
        from byte OFFSET on (0 0 0 for none; kosha_py.percentile's rule).
    python3 benches/load/results.py record KEY=VALUE...
        One result line, a JSON object (each VALUE parsed as JSON, else kept as a string).
    python3 benches/load/results.py summary RESULTS.jsonl
        The markdown table of the run and its ratios (issue 29's floors).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

from kosha_py import percentile  # noqa: E402


def per_call(cpu_s: str, summary: str) -> None:
    n = json.loads(Path(summary).read_text())["requests"]
    print(round(float(cpu_s) / max(n, 1) * 1e6, 1))


def own_time(log: str, offset: str) -> None:
    values = []
    with open(log, "rb") as f:
        f.seek(int(offset))
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("message") == "tool call" and "overhead_us" in rec:
                values.append(rec["overhead_us"] / 1000)
    print(f"{percentile(values, 0.5):.3f} {percentile(values, 0.99):.3f} {len(values)}")


def record(*pairs: str) -> None:
    out = {}
    for kv in pairs:
        k, v = kv.split("=", 1)
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    print(json.dumps(out))


def summary(results: str) -> None:
    rows = [json.loads(line) for line in open(results)]
    print()
    print("| emulator | C | target | req/s | p50 ms | p99 ms | failed | CPU µs/call | user % | own p50 ms | own p99 ms | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        w = r["wrk"]
        if r["target"] == "gateway-callgrind":
            layers = r["layers"]
            print(f'| {r["emulator"]} | 1 | gateway instructions per {r.get("request", "get_transaction")} (callgrind, {w["requests"]} calls, '
                  f'{layers.get("dynamodb_requests_per_call", 0):.3f} DynamoDB requests per call) | | | | '
                  f'{w.get("non_2xx", 0) + w.get("unexpected", 0)} | {layers["total"]:,} instr | | | | |')
            for name, n in layers["layers"].items():
                print(f'| | | of which {name} | | | | | {n:,} ({n / layers["total"] * 100:.0f} %) | | | | |')
            continue
        if r["target"] == "floor-callgrind":
            print(f'| {r["emulator"]} | 1 | {r["request"]} floor instructions per request (callgrind, {w["requests"]} calls) | | | | '
                  f'{w.get("non_2xx", 0) + w.get("unexpected", 0)} | {r["layers"]["total"]:,} instr | | | | |')
            continue
        if r["target"] == "gateway-peak-rss":
            print(f'| {r["emulator"]} | | gateway peak RSS (VmHWM) | | | | | | | | | {r["peak_rss_kb"] / 1024:.1f} MiB |')
            continue
        failed = w.get("non_2xx", 0) + w.get("unexpected", 0) + w.get("socket_errors", 0) + w.get("fail_open", 0)
        print(f'| {r["emulator"]} | {r["concurrency"]} | {r["target"]} | {w["throughput_per_s"]:.0f} | '
              f'{w["p50_ms"]:.2f} | {w["p99_ms"]:.2f} | {failed} | {r.get("cpu_us_per_call", "")} | '
              f'{r.get("user_pct", "")} | {r.get("own_p50_ms", "")} | {r.get("own_p99_ms", "")} | |')
    # Issue 29: each gateway figure over its floor, both counted in the same run.
    cg = {r["request"]: r["layers"] for r in rows if r["target"] == "gateway-callgrind"}
    floors = {r["request"]: r["layers"]["total"] for r in rows if r["target"] == "floor-callgrind"}
    BUCKET = "token bucket (lease, or DynamoDB PutItem through the AWS SDK)"
    for request, floor, less_bucket, target in (
        ("get_transaction", "forwarding", False, 2.5),
        ("get_service_health", "fixed-answer", True, 2.0),
        ("ping", "fixed-answer", False, None),
    ):
        if request not in cg or floor not in floors:
            continue
        n = cg[request]["total"] - (cg[request]["layers"].get(BUCKET, 0) if less_bucket else 0)
        what = f"{request} less its bucket write" if less_bucket else request
        goal = f" (target <= {target}x)" if target else ""
        print(f"{what}: {n:,} instr = {n / floors[floor]:.2f}x the {floor} floor ({floors[floor]:,}){goal}; "
              f"{cg[request].get('dynamodb_requests_per_call', 0):.3f} DynamoDB requests per call")
    pinned = " (the emulator on a CPU of its own)" if rows and rows[0].get("pinned_emulator") else ""
    for emulator in sorted({r["emulator"] for r in rows}):
        by = {(r["concurrency"], r["target"]): r["wrk"]["throughput_per_s"] for r in rows if r["emulator"] == emulator}
        cpu = {(r["concurrency"], r["target"]): r.get("cpu_us_per_call") for r in rows if r["emulator"] == emulator}
        for c in sorted({c for c, _ in by}):
            if (c, "gateway") in by and (c, "core-api") in by and (c, "bucket") in by:
                bound = min(by[(c, "core-api")], by[(c, "bucket")])
                which = "core-api" if by[(c, "core-api")] <= by[(c, "bucket")] else "the bucket"
                print(f"{emulator}, C={c}: gateway {by[(c, 'gateway')]:.0f}/s = "
                      f"{by[(c, 'gateway')] / bound * 100:.0f} % of the slower dependency ({which}, {bound:.0f}/s){pinned}")
            # The gateway's CPU per call beyond the one write SPEC §6 requires of every tools/call.
            if cpu.get((c, "gateway")) and cpu.get((c, "bucket")):
                print(f"{emulator}, C={c}: gateway CPU {cpu[(c, 'gateway')]:.0f} µs per call = the bucket write alone "
                      f"{cpu[(c, 'bucket')]:.0f} µs + {cpu[(c, 'gateway')] - cpu[(c, 'bucket')]:.0f} µs")


COMMANDS = {"per-call": per_call, "own-time": own_time, "record": record, "summary": summary}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: results.py {{{','.join(COMMANDS)}}} ARGS... (the module doc)")
    COMMANDS[sys.argv[1]](*sys.argv[2:])
