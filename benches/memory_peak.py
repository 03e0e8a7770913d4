#!/usr/bin/env python3
"""Peak RSS of the gateway under concurrent worst-case 1 MiB bodies (issue 16; a benchmark,
not a test: docs/benchmarks.md, "The edge under hostile input").

- bodies: writes the worst-case bodies (each just under 1 MiB) into --out-dir, and a Lambda
  Function URL event per body for benches/lambda_init.py.
- server: starts CMD in local mode (KOSHA_LISTEN on a free loopback port), sends --rounds
  rounds of --concurrency simultaneous requests (one connection per sender, all released
  together), cycling through the bodies, then reads VmHWM from /proc/<pid>/status.

The shapes (all authenticated, all within 1 MiB):
  string   `ping` whose params._meta holds one ~1 MiB string: passes every bound, so the edge
           and rmcp both parse it whole.
  values   `tools/call search_knowledge_base` with 9,900 short strings in its arguments (within
           the 10,000-value bound): parsed, schema-checked, refused as invalid_argument.
  keys     `ping` whose params._meta holds 90,000 keys: refused at the 256-key bound.
  deep     nesting 100,000 levels deep: refused at the depth bound.

  memory_peak.py bodies --out-dir DIR --token T
  memory_peak.py server --bodies DIR --token T [--concurrency 64] [--rounds 5] [--env K=V] -- CMD
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "lib"))
from kosha_py import free_port, wait_port  # noqa: E402

LIMIT = 1024 * 1024


def dumps(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def shapes() -> dict[str, bytes]:
    def ping(meta) -> dict:
        return {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta}}

    out = {}
    out["string"] = dumps(ping({"s": "x" * (LIMIT - 200)}))
    args = {"query": "refund", "pad": ["y" * 95] * 9_900}
    out["values"] = dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "search_knowledge_base", "arguments": args}})
    out["keys"] = dumps(ping({f"k{i}": 0 for i in range(90_000)}))
    out["deep"] = b"[" * 100_000 + b"]" * 100_000
    for name, body in out.items():
        assert len(body) <= LIMIT, (name, len(body))
    return out


def write_bodies(out_dir: Path, token: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    template = json.loads(
        (Path(__file__).resolve().parent.parent / "infra/events/function-url-post-mcp.json")
        .read_text())
    for name, body in shapes().items():
        (out_dir / f"{name}.json").write_bytes(body)
        event = json.loads(json.dumps(template))
        event["headers"]["authorization"] = f"Bearer {token}"
        event["headers"]["content-length"] = str(len(body))
        event["body"] = body.decode()
        (out_dir / f"{name}.event.json").write_text(json.dumps(event))
        print(f"{name}: {len(body)} bytes")


def hwm_kb(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def server(args) -> int:
    bodies = [(p.stem, p.read_bytes()) for p in sorted(Path(args.bodies).glob("*.json"))
              if not p.name.endswith(".event.json")]
    port = free_port()
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    env["KOSHA_LISTEN"] = f"127.0.0.1:{port}"
    proc = subprocess.Popen(args.cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    statuses: dict[str, dict[int, int]] = {}
    lock = threading.Lock()
    try:
        if not wait_port(port, proc, 30):
            print("server did not start", proc.stderr.read().decode()[-500:], file=sys.stderr)
            return 1
        idle = hwm_kb(proc.pid)
        for round_no in range(args.rounds):
            barrier = threading.Barrier(args.concurrency)

            def send(i: int) -> None:
                name, body = bodies[(i + round_no) % len(bodies)]
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                barrier.wait()
                conn.request("POST", "/mcp", body=body, headers={
                    "Host": "localhost", "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-11-25",
                    "Authorization": f"Bearer {args.token}"})
                status = conn.getresponse().status
                conn.close()
                with lock:
                    by_status = statuses.setdefault(name, {})
                    by_status[status] = by_status.get(status, 0) + 1

            threads = [threading.Thread(target=send, args=(i,)) for i in range(args.concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        peak = hwm_kb(proc.pid)
        print(json.dumps({"mode": "server", "concurrency": args.concurrency,
                          "rounds": args.rounds, "idle_hwm_kb": idle, "peak_hwm_kb": peak,
                          "peak_mb": round((peak or 0) / 1024, 1), "statuses": statuses}))
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=35)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bodies")
    b.add_argument("--out-dir", required=True)
    b.add_argument("--token", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bodies", required=True)
    s.add_argument("--token", required=True)
    s.add_argument("--concurrency", type=int, default=64)
    s.add_argument("--rounds", type=int, default=5)
    s.add_argument("--env", action="append", default=[])
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.what == "bodies":
        write_bodies(Path(args.out_dir), args.token)
        return 0
    args.cmd = [c for c in args.cmd if c != "--"]
    return server(args)


if __name__ == "__main__":
    sys.exit(main())
