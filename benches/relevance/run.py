#!/usr/bin/env python3
"""Relevance benchmark of core-api's knowledge search (issue 13): recall@5 and nDCG@5.

Sends every query of queries.jsonl to `POST {core-api}/v1/knowledge/search`
(`{"query", "top_k"}` -> `{"results": [{"article_id", ...}], "degraded", ...}`) and scores the
ranked article ids against the labels:

  recall@5  share of the query's grade-2 articles found in the first 5 results, over
            min(number of grade-2 articles, 5); averaged over the queries.
  nDCG@5    graded: gain 2^grade - 1 (grade 2 -> 3, grade 1 -> 1), discount log2(rank + 1),
            divided by the ideal ordering's DCG@5; averaged over the queries.
  MRR       reciprocal rank of the first grade-2 article (0 when none in the results).
  separation  the score of the best hit of each query (0 without a result): the lowest of
            the on-topic queries must be above the highest of the `off_topic` ones, which no
            article answers (issue 45: the score is a relevance comparable across queries).

recall@5, nDCG@5 and MRR are averaged over the on-topic queries only.

`--mode` names the ranking being measured and is checked against what core-api says: a
`hybrid` run fails (exit 2) if any answer came back `degraded: true`, since the embeddings were
then not used. A `full-text` run accepts any answer: today's core-api ranks by full text only,
and a hybrid core-api is measured in full-text mode by forcing its fallback (the
`breaker#openai` override, or the embeddings server stopped), which it reports as degraded.

Only the standard library is used. Examples:

  benches/relevance/run.py --mode both                         # hybrid and full text, compared
  benches/relevance/run.py --mode full-text                    # URL from .dev/stack.env
  benches/relevance/run.py --url http://127.0.0.1:PORT --mode hybrid --misses --json out.json

`--mode both` needs the local stack (`scripts/dev up`): it measures hybrid, forces the
`breaker#openai` override with the stack's kosha-ops (so core-api itself falls back to full
text, as in an outage), measures again, clears it, and exits 1 unless hybrid has the higher
recall@5. Any run with hybrid exits 1 unless its scores separate on- from off-topic queries.
`--repeat N` runs the queries N times for the latency percentiles.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

from kosha_py import percentile  # noqa: E402

K = 5
OFF_TOPIC = "off_topic"


def core_api_url(explicit: str | None) -> str:
    if explicit:
        return explicit.rstrip("/")
    if os.environ.get("KOSHA_CORE_API_URL"):
        return os.environ["KOSHA_CORE_API_URL"].rstrip("/")
    dev = Path(os.environ.get("KOSHA_DEV_DIR", HERE.parents[1] / ".dev"))
    env_file = dev / "stack.env"
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            if line.startswith("KOSHA_CORE_API_URL="):
                return line.split("=", 1)[1].strip().rstrip("/")
    raise SystemExit("no core-api URL: pass --url, set KOSHA_CORE_API_URL, or run scripts/dev up")


def search(url: str, query: str, top_k: int, timeout: float) -> tuple[dict, float]:
    body = json.dumps({"query": query, "top_k": top_k}).encode()
    request = urllib.request.Request(
        f"{url}/v1/knowledge/search",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.load(response)
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")[:300]
        raise SystemExit(f"core-api answered {err.code} to {query!r}: {detail}") from None
    return payload, (time.perf_counter() - started) * 1000


def recall_at(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    primary = {a for a, g in grades.items() if g >= 2}
    found = len(primary.intersection(ranked[:k]))
    return found / min(len(primary), k)


def ndcg_at(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    def dcg(gains: list[int]) -> float:
        return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains[:k]))

    ideal = dcg(sorted(grades.values(), reverse=True))
    return dcg([grades.get(a, 0) for a in ranked]) / ideal if ideal else 0.0


def reciprocal_rank(ranked: list[str], grades: dict[str, int]) -> float:
    for i, article in enumerate(ranked):
        if grades.get(article, 0) >= 2:
            return 1 / (i + 1)
    return 0.0


def stack_env() -> dict[str, str]:
    """KEY=value lines of the stack's .dev/stack.env (empty when absent)."""
    dev = Path(os.environ.get("KOSHA_DEV_DIR", HERE.parents[1] / ".dev"))
    env_file = dev / "stack.env"
    values: dict[str, str] = {}
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip()
    return values


def measure(url: str, rows: list[dict], top_k: int, timeout: float, repeat: int) -> list[dict]:
    """Every query once for relevance; `repeat` - 1 more passes only add latency samples."""
    results = []
    for row in rows:
        payload, ms = search(url, row["query"], top_k, timeout)
        hits = payload.get("results", [])
        ranked = [hit["article_id"] for hit in hits]
        grades = row["relevant"]
        on_topic = row["kind"] != OFF_TOPIC
        results.append({
            "id": row["id"],
            "query": row["query"],
            "kind": row["kind"],
            "relevant": grades,
            "ranked": ranked,
            "scores": [hit["score"] for hit in hits],
            "top_score": hits[0]["score"] if hits else 0.0,
            "degraded": bool(payload.get("degraded")),
            "degraded_reason": payload.get("degraded_reason"),
            "recall@5": recall_at(ranked, grades) if on_topic else None,
            "ndcg@5": ndcg_at(ranked, grades) if on_topic else None,
            "rr": reciprocal_rank(ranked, grades) if on_topic else None,
            "ms": [ms],
        })
    for _ in range(repeat - 1):
        for result in results:
            payload, ms = search(url, result["query"], top_k, timeout)
            result["ms"].append(ms)
            result["degraded"] = result["degraded"] or bool(payload.get("degraded"))
    return results


def on_topic(results: list[dict]) -> list[dict]:
    return [r for r in results if r["kind"] != OFF_TOPIC]


def mean(key: str, subset: list[dict]) -> float:
    """`key` averaged over the on-topic results of `subset`."""
    scored = on_topic(subset)
    return sum(r[key] for r in scored) / len(scored)


def separation(results: list[dict]) -> tuple[dict, dict | None]:
    """The on-topic result with the lowest top score and the off-topic one with the highest
    (None when the run has no off-topic query)."""
    lowest = min(on_topic(results), key=lambda r: r["top_score"])
    off = [r for r in results if r["kind"] == OFF_TOPIC]
    return lowest, max(off, key=lambda r: r["top_score"]) if off else None


def separated(results: list[dict]) -> bool:
    lowest, highest = separation(results)
    return highest is None or lowest["top_score"] > highest["top_score"]


def report(results: list[dict], mode: str, url: str, misses: bool) -> None:
    print(f"relevance benchmark: {len(on_topic(results))} queries and "
          f"{len(results) - len(on_topic(results))} off-topic ones, mode {mode}, core-api {url}")
    print(f"{'kind':<12} {'n':>3}  {'recall@5':>8}  {'nDCG@5':>7}  {'MRR':>6}")
    kinds = sorted({r["kind"] for r in on_topic(results)})
    for kind in kinds + ["all"]:
        subset = on_topic(results) if kind == "all" else [r for r in results if r["kind"] == kind]
        print(f"{kind:<12} {len(subset):>3}  {mean('recall@5', subset):>8.3f}  "
              f"{mean('ndcg@5', subset):>7.3f}  {mean('rr', subset):>6.3f}")
    degraded = sum(r["degraded"] for r in results)
    empty = sum(not r["ranked"] for r in results)
    times = [ms for r in results for ms in r["ms"]]
    print(f"degraded answers: {degraded}/{len(results)}; empty result lists: {empty}; "
          f"latency per search (client side, sequential, {len(times)} searches) "
          f"p50 {percentile(times, 0.50):.1f} ms, p99 {percentile(times, 0.99):.1f} ms")
    lowest, highest = separation(results)
    if highest is not None:
        verdict = "separated" if separated(results) else "NOT separated"
        print(f"top score: lowest on-topic {lowest['top_score']:.3f} ({lowest['id']} "
              f"{lowest['query']!r}), highest off-topic {highest['top_score']:.3f} "
              f"({highest['id']} {highest['query']!r}): {verdict}")
    if misses:
        print("\nqueries with recall@5 < 1 (query -> first results):")
        for r in on_topic(results):
            if r["recall@5"] < 1:
                primary = [a for a, g in r["relevant"].items() if g >= 2]
                print(f"  {r['id']} {r['query']!r} wants {','.join(primary)} "
                      f"got {','.join(r['ranked'][:5]) or '-'}")


class ForcedFullText:
    """`breaker#openai` forced open for the full-text pass of `--mode both` (SPEC §8): set with
    the stack's kosha-ops, waited for until core-api's answers are degraded (its override cache
    refreshes every 5 s), and cleared on exit, waiting until hybrid answers come back."""

    def __init__(self, url: str, timeout: float) -> None:
        env = stack_env()
        ops = env.get("KOSHA_OPS")
        if not ops:
            raise SystemExit("--mode both needs the stack's .dev/stack.env (scripts/dev up)")
        self.ops = ops
        self.env = {**os.environ, **env}
        self.url = url
        self.timeout = timeout

    def ops_run(self, *args: str) -> None:
        subprocess.run([self.ops, *args], env=self.env, check=True, stdout=subprocess.DEVNULL)

    def wait_for(self, degraded: bool) -> None:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            payload, _ = search(self.url, "chargeback", 1, self.timeout)
            if bool(payload.get("degraded")) == degraded:
                return
            time.sleep(0.5)
        raise SystemExit(f"core-api answers did not become degraded={degraded} within 30 s")

    def __enter__(self) -> "ForcedFullText":
        self.ops_run("breaker", "force-open", "openai", "--reason",
                     "relevance benchmark: full-text pass", "--ttl", "10m")
        self.wait_for(True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.ops_run("breaker", "clear", "openai")
        self.wait_for(False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="core-api base URL (default: KOSHA_CORE_API_URL or .dev/stack.env)")
    parser.add_argument("--mode", required=True, choices=["full-text", "hybrid", "both"],
                        help="the ranking measured; hybrid fails if any answer was degraded; "
                             "both measures hybrid, then full text with breaker#openai forced "
                             "open (kosha-ops, the local stack), and fails unless hybrid has "
                             "the higher recall@5")
    parser.add_argument("--queries", type=Path, default=HERE / "queries.jsonl")
    parser.add_argument("--top-k", type=int, default=K, help="results asked for (default 5)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    parser.add_argument("--repeat", type=int, default=1,
                        help="passes over the queries for the latency figures (default 1)")
    parser.add_argument("--misses", action="store_true", help="list queries with recall@5 < 1")
    parser.add_argument("--json", type=Path, help="also write per-query results here")
    args = parser.parse_args()

    url = core_api_url(args.url)
    rows = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()]
    runs: dict[str, list[dict]] = {}
    if args.mode in ("hybrid", "both"):
        runs["hybrid"] = measure(url, rows, args.top_k, args.timeout, args.repeat)
    if args.mode == "full-text":
        runs["full-text"] = measure(url, rows, args.top_k, args.timeout, args.repeat)
    if args.mode == "both":
        with ForcedFullText(url, args.timeout):
            runs["full-text"] = measure(url, rows, args.top_k, args.timeout, args.repeat)
    for mode, results in runs.items():
        report(results, mode, url, args.misses)
        print()
    if args.json:
        args.json.write_text(json.dumps({"url": url, "runs": runs}, indent=1))
    status = 0
    if "hybrid" in runs and (degraded := sum(r["degraded"] for r in runs["hybrid"])):
        print(f"error: {degraded} hybrid answers were degraded, so this is not a hybrid run",
              file=sys.stderr)
        status = 2
    if "hybrid" in runs and not separated(runs["hybrid"]):
        print("error: an off-topic query's best hit scores at least an on-topic query's",
              file=sys.stderr)
        status = status or 1
    if args.mode == "both":
        if not all(r["degraded"] for r in runs["full-text"]):
            print("error: some full-text answers were not degraded", file=sys.stderr)
            status = 2
        hybrid, full = mean("recall@5", runs["hybrid"]), mean("recall@5", runs["full-text"])
        verdict = "beats" if hybrid > full else "does NOT beat"
        print(f"hybrid recall@5 {hybrid:.3f} {verdict} full text {full:.3f} "
              f"(nDCG@5 {mean('ndcg@5', runs['hybrid']):.3f} vs "
              f"{mean('ndcg@5', runs['full-text']):.3f})")
        if hybrid <= full:
            status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
