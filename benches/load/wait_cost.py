"""How the CPU of one bucket write depends on how long DynamoDB takes to answer (issue 16).

    python3 benches/load/wait_cost.py [--bucket-load target/profiling/bucket-load]
                                      [--delays "0 0.5 2 5"] [--seconds 6]

Runs `bucket-load` (the gateway's own limiter and DynamoDB client, C = 1) against a stand-in
DynamoDB endpoint that answers every request `{}` after a fixed delay, once per delay, and
once more per delay with a lowest-priority busy loop on the generator's CPU. The busy loop
keeps that vCPU from idling between takes but yields to the generator at once. The stand-in
runs on the last CPU and the generator on CPU 0 (`taskset`; at least 2 CPUs). The generator's
whole CPU time (user + system, from `wait4`) is divided by its takes, and the user share is
given. Every take sends the same request and reads the same answer, so the instructions per
take do not depend on the delay. What changes with the delay is only how long the process
sleeps between a request and its answer.

Prints one markdown table row per run. The figures are in docs/benchmarks.md. Everything
stays on 127.0.0.1, and each run is bounded by --seconds.

    python3 benches/load/wait_cost.py serve --delay-ms D

is the stand-in by itself. It prints its URL and serves HTTP/1.1 keep-alive, one thread per
connection, with Nagle off.
"""

import argparse
import http.server
import json
import os
import subprocess
import sys
import time


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    delay_s = 0.0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.delay_s:
            time.sleep(self.delay_s)
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(delay_ms):
    _Handler.delay_s = delay_ms / 1000
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def run(bucket_load, delay_ms, seconds, spinner):
    last_cpu = str(os.cpu_count() - 1)
    fake = subprocess.Popen(
        ["taskset", "-c", last_cpu, sys.executable, __file__, "serve", "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE, text=True,
    )
    spin = None
    try:
        url = fake.stdout.readline().strip()
        if spinner:
            spin = subprocess.Popen(["taskset", "-c", "0", "nice", "-n", "19", "sh", "-c", "while :; do :; done"])
        env = dict(os.environ, AWS_ENDPOINT_URL=url, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench", AWS_EC2_METADATA_DISABLED="true",
                   KOSHA_STATE_TABLE="kosha-state", KOSHA_RATE_CAPACITY="1000000000",
                   KOSHA_RATE_PER_SEC="1000000")
        gen = subprocess.Popen(["taskset", "-c", "0", bucket_load, "--seconds", str(seconds)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        out = gen.stdout.read()
        _, status, usage = os.wait4(gen.pid, 0)
        if status != 0:
            sys.exit(f"wait_cost: bucket-load failed (status {status})")
        summary = json.loads(out)
        takes = summary["requests"]
        cpu_s = usage.ru_utime + usage.ru_stime
        cpu_us = cpu_s / max(takes, 1) * 1e6
        user_pct = usage.ru_utime / cpu_s * 100 if cpu_s else 0
        spun = "yes" if spinner else "no"
        print(f"| {delay_ms:g} | {spun} | {takes} | {summary['p50_ms']:.3f} | {cpu_us:.1f} | {user_pct:.0f} |",
              flush=True)
    finally:
        if spin:
            spin.kill()
            spin.wait()
        fake.kill()
        fake.wait()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        p = argparse.ArgumentParser(prog="wait_cost.py serve")
        p.add_argument("--delay-ms", type=float, default=0.0)
        serve(p.parse_args(sys.argv[2:]).delay_ms)
        return
    p = argparse.ArgumentParser()
    p.add_argument("--bucket-load", default="target/profiling/bucket-load")
    p.add_argument("--delays", default="0 0.5 2 5")
    p.add_argument("--seconds", type=float, default=6.0)
    a = p.parse_args()
    if (os.cpu_count() or 1) < 2:
        sys.exit("wait_cost: needs at least 2 CPUs (the stand-in on the last, the generator on CPU 0)")
    if not os.access(a.bucket_load, os.X_OK):
        sys.exit(f"wait_cost: {a.bucket_load} is not built (cargo build --profile profiling -p bucket-load)")
    print("| DynamoDB answers after (ms) | busy loop on the generator's CPU | takes | p50 ms | CPU µs per take | user % |")
    print("|---|---|---|---|---|---|")
    for spinner in (False, True):
        for delay in a.delays.split():
            run(a.bucket_load, float(delay), a.seconds, spinner)


if __name__ == "__main__":
    main()
