#!/usr/bin/env python3
"""Peak RSS of a function binary in local mode after N HTTP requests (issue 6: <= 30 MB after
10,000). A benchmark, not a test (docs/benchmarks.md, "Lambda packaging and cold start (issue 6)").

Starts CMD with KOSHA_LISTEN=127.0.0.1:<free port>, waits for the port, sends --requests
requests over one keep-alive connection (loopback only, bounded count and time), then reads
VmHWM from /proc/<pid>/status and stops the process.

  local_rss.py [--requests 10000] [--method POST --path /mcp --body-file F]
               [--header 'Authorization: Bearer ...'] [--env KEY=VALUE] -- CMD [ARGS...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "lib"))
from kosha_py import free_port, wait_port  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--method", default="GET")
    parser.add_argument("--path", default="/healthz")
    parser.add_argument("--body-file")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--max-seconds", type=float, default=600)
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("CMD is required after --")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_RUNTIME_API"}
    env.update(dict(item.split("=", 1) for item in args.env))
    env["KOSHA_LISTEN"] = f"127.0.0.1:{port}"
    cmd = [c.replace("{port}", str(port)) for c in cmd]
    body = Path(args.body_file).read_bytes() if args.body_file else None
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {k.strip(): v.strip() for k, v in headers.items()}
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_port(port, proc, 30):
            print(json.dumps({"error": "the process did not listen", "cmd": cmd}))
            return 1
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        statuses: dict[int, int] = {}
        start = time.monotonic()
        sent = 0
        tool_errors = 0
        for sent in range(1, args.requests + 1):
            conn.request(args.method, args.path, body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
            statuses[response.status] = statuses.get(response.status, 0) + 1
            # an MCP tool error rides in a 200: count them so a run of failures is visible
            tool_errors += b'"isError":true' in answer
            if time.monotonic() - start > args.max_seconds:
                break
        elapsed = time.monotonic() - start
        hwm = rss = None
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        print(json.dumps({"requests": sent, "seconds": round(elapsed, 1), "statuses": statuses,
                          "tool_errors": tool_errors,
                          "peak_rss_kb": hwm, "rss_kb": rss,
                          "target_ok": hwm is not None and hwm <= 30 * 1024}))
        return 0 if sent == args.requests else 1
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
