#!/usr/bin/env python3
"""Init time and peak RSS of Lambda binaries under a minimal Lambda Runtime API emulator.

Used by scripts/bench-lambda (docs/benchmarks.md, "Lambda packaging and cold start (issue 6)"); a benchmark,
not a test. For each binary it:

- init: starts the process with AWS_LAMBDA_RUNTIME_API pointing at this emulator and measures
  the time from just before spawn to its first `GET /2018-06-01/runtime/invocation/next`
  (= ready for the first event), serves one event, checks the response, kills the process;
  repeated --runs times (alternating between the binaries), reports min/median/max in ms, and
  the median time from spawn to the first event's response (init + first invocation: the
  whole cold start the caller sees);
- rss (--rss-events N): serves N events to one process, then reads its peak RSS (VmHWM) and
  its CPU time (utime + stime of /proc/PID/stat, init included) per event.

The emulator is in-process (stdlib http.server) rather than `cargo lambda watch`, whose own
cargo/compile step would be inside the measured time. Usage:

  lambda_init.py --event infra/events/function-url-get-healthz.json [--runs 20]
                 [--rss-events 10000] [--env KEY=VALUE ...] NAME=PATH [NAME=PATH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

API = "/2018-06-01/runtime"


class Emulator:
    """Serves `events` one by one; records when the first /next arrives and each response."""

    def __init__(self, event: bytes, events: int):
        self.event = event
        self.remaining = events
        self.first_next: float | None = None
        self.first_response: float | None = None
        self.responses: list[bytes] = []
        self.errors: list[bytes] = []
        self.cond = threading.Condition()
        self.stopped = False
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args):  # quiet
                pass

            def _reply(self, status: int, body: bytes = b"", headers: dict | None = None):
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                if self.path != f"{API}/invocation/next":
                    self._reply(404)
                    return
                now = time.perf_counter()
                with emulator.cond:
                    if emulator.first_next is None:
                        emulator.first_next = now
                    while emulator.remaining <= 0 and not emulator.stopped:
                        emulator.cond.wait(0.5)
                    if emulator.stopped:
                        return
                    emulator.remaining -= 1
                request_id = str(uuid.uuid4())
                deadline_ms = int(time.time() * 1000) + 10_000
                self._reply(200, emulator.event, {
                    "Content-Type": "application/json",
                    "Lambda-Runtime-Aws-Request-Id": request_id,
                    "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn":
                        "arn:aws:lambda:us-east-1:123456789012:function:bench",
                    "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000",
                })

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                now = time.perf_counter()
                with emulator.cond:
                    if emulator.first_response is None:
                        emulator.first_response = now
                    if self.path.endswith("/response"):
                        emulator.responses.append(body)
                    else:
                        emulator.errors.append(body)
                    emulator.cond.notify_all()
                self._reply(202, b'{"status":"OK"}', {"Content-Type": "application/json"})

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # the function is killed mid-poll at the end of every run: expected resets

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    def wait_done(self, count: int, timeout: float) -> bool:
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.responses) + len(self.errors) < count:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def close(self):
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()


def lambda_env(api: str, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_LAMBDA_")}
    env.update({
        "AWS_LAMBDA_RUNTIME_API": api,
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/bench",
        "AWS_REGION": env.get("AWS_REGION", "us-east-1"),
        "RUST_LOG": env.get("RUST_LOG", "warn"),
    })
    env.update(extra)
    return env


def status_of(response: bytes) -> int | None:
    try:
        return int(json.loads(response).get("statusCode"))
    except (ValueError, TypeError, AttributeError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of process `pid` in seconds, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(binary: str, event: bytes, events: int, extra: dict[str, str]):
    """(init s or None, first response s or None, status of the last response, peak RSS kB or
    None, CPU s or None, note); times are from just before spawn."""
    emulator = Emulator(event, events)
    start = time.perf_counter()
    proc = subprocess.Popen([binary], env=lambda_env(emulator.address, extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        done = False
        while not done:
            done = emulator.wait_done(events, 0.2)
            if proc.poll() is not None:
                break
        init = None if emulator.first_next is None else emulator.first_next - start
        first = None if emulator.first_response is None else emulator.first_response - start
        hwm = None
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        except OSError:
            pass
        cpu = cpu_seconds(proc.pid)
        note = ""
        if proc.poll() is not None and not done:
            err = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")
            note = f"exited with {proc.returncode} before serving {events} event(s) {err[-200:]}"
        last = emulator.responses[-1] if emulator.responses else b""
        return init, first, status_of(last), hwm, cpu, note
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        emulator.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--event", required=True, help="event JSON served to the function")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rss-events", type=int, default=0)
    parser.add_argument("--expect-status", type=int, default=None,
                        help="fail unless every response has this statusCode")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the process")
    parser.add_argument("binaries", nargs="+", help="NAME=PATH")
    args = parser.parse_args()
    event = Path(args.event).read_bytes()
    extra = dict(item.split("=", 1) for item in args.env)
    specs = [spec.partition("=")[::2] for spec in args.binaries]
    inits = {name: [] for name, _ in specs}
    firsts = {name: [] for name, _ in specs}
    statuses = {name: set() for name, _ in specs}
    notes = {name: set() for name, _ in specs}
    # Runs alternate between the binaries (A B A B ...), so that load from elsewhere on the
    # machine falls on all of them alike rather than on whichever ran during a busy minute.
    for _ in range(args.runs):
        for name, path in specs:
            init, first, status, _hwm, _cpu, note = one_run(path, event, 1, extra)
            if init is not None and first is not None and not note:
                inits[name].append(init * 1000)
                firsts[name].append(first * 1000)
            statuses[name].add(status)
            if note:
                notes[name].add(note)
    results = {}
    for name, path in specs:
        row = {"runs": args.runs, "ok": len(inits[name]),
               "statuses": sorted(map(str, statuses[name]))}
        if inits[name]:
            row.update(init_ms_min=round(min(inits[name]), 2),
                       init_ms_median=round(statistics.median(inits[name]), 2),
                       init_ms_max=round(max(inits[name]), 2),
                       first_response_ms_median=round(statistics.median(firsts[name]), 2))
        if args.rss_events:
            t0 = time.perf_counter()
            _init, _first, status, hwm, cpu, note = one_run(path, event, args.rss_events, extra)
            row.update(rss_events=args.rss_events, peak_rss_kb=hwm, last_status=status,
                       rss_seconds=round(time.perf_counter() - t0, 1))
            if cpu is not None:
                row["cpu_us_per_event"] = round(cpu / args.rss_events * 1e6, 1)
            if note:
                notes[name].add(note)
        if notes[name]:
            row["notes"] = sorted(notes[name])
        results[name] = row
        print(json.dumps({name: row}), flush=True)
    base = results.get("hello-lambda", {}).get("init_ms_median")
    for name, row in results.items():
        if base and name != "hello-lambda" and "init_ms_median" in row:
            print(f"{name}: init median {row['init_ms_median']} ms = "
                  f"{row['init_ms_median'] / base:.2f}x hello-lambda ({base} ms); target <= 1.25x (issue 29)")
    ok = all(r["ok"] == r["runs"] for r in results.values())
    if args.expect_status is not None:
        ok = ok and all(r["statuses"] == [str(args.expect_status)] for r in results.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
