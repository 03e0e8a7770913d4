#!/usr/bin/env python3
"""Latency of one query's embedding through the local embeddings server (issue 13).

Sends N sequential `POST /v1/embeddings` requests of one query each (the queries of
queries.jsonl in turn, so the figure covers short and long queries) over one keep-alive
connection, as core-api's pooled client would, and prints p50/p90/p99/max of the round trip
(the time core-api would wait). A warm-up of 10 requests is not counted.

  benches/relevance/embed_latency.py --url http://127.0.0.1:PORT/v1 [--n 200]
  (the URL defaults to $KOSHA_EMBEDDINGS_URL or .dev/embeddings.url)

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

from kosha_py import percentile  # noqa: E402

MODEL = "wordllama-l2-supercat-256"


def default_url() -> str:
    if os.environ.get("KOSHA_EMBEDDINGS_URL"):
        return os.environ["KOSHA_EMBEDDINGS_URL"]
    dev = Path(os.environ.get("KOSHA_DEV_DIR", HERE.parents[1] / ".dev"))
    try:
        return (dev / "embeddings.url").read_text().strip()
    except OSError:
        raise SystemExit(
            "no URL: pass --url, set KOSHA_EMBEDDINGS_URL or run scripts/embeddings start"
        ) from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=None, help="OpenAI base URL, ending in /v1")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--n", type=int, default=200, help="measured requests (default 200)")
    args = parser.parse_args()

    url = urlsplit(args.url or default_url())
    queries = [json.loads(line)["query"] for line in (HERE / "queries.jsonl").read_text().splitlines() if line]
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    path = url.path.rstrip("/") + "/embeddings"

    def one(text: str) -> float:
        body = json.dumps({"model": args.model, "input": text})
        started = time.perf_counter()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise SystemExit(f"{response.status}: {payload[:200]!r}")
        return elapsed

    for i in range(10):
        one(queries[i % len(queries)])
    times = [one(queries[i % len(queries)]) for i in range(args.n)]
    print(
        f"embeddings round trip, {args.n} sequential single-query requests to "
        f"{url.geturl()} ({args.model}): p50 {percentile(times, 0.50):.2f} ms, "
        f"p90 {percentile(times, 0.90):.2f} ms, p99 {percentile(times, 0.99):.2f} ms, "
        f"max {max(times):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
