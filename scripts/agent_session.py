"""The demo agent session run by `scripts/dev up`: initialize, tools/list, one call of each
tool, printed as a human reads it. Exits non-zero if anything the agent saw is wrong."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from kosha_client import load_stack_env, session  # noqa: E402


def show(title: str, value: object) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    lines = text.splitlines()
    if len(lines) > 24:
        lines = lines[:24] + [f"  … ({len(lines) - 24} more lines)"]
    print(f"\n--- {title}")
    print("\n".join(lines))


async def main() -> int:
    env = load_stack_env()
    url = env["KOSHA_GATEWAY_URL"]
    token = env.get("KOSHA_AGENT_TOKEN")
    print(f"agent session against {url}")
    failures = 0
    async with session(url, token) as s:
        tools = await s.list_tools()
        print("\ntools/list:", ", ".join(t.name for t in tools.tools))
        calls = [
            ("search_knowledge_base", {"query": "how do I dispute a card transaction", "top_k": 3}),
            ("get_transaction", {"transaction_id": "txn_000042"}),
            ("list_transactions", {"account_id": "acc_0007", "limit": 3}),
            ("get_service_health", {}),
        ]
        for name, args in calls:
            result = await s.call_tool(name, args)
            if result.is_error:
                failures += 1
            show(f"{name}({json.dumps(args)}){'  [ERROR]' if result.is_error else ''}", result.structured_content)
        # A paraphrase that shares almost no word with the article (hybrid search, issue 13):
        # the card-fraud articles must come back, ranked by meaning, not degraded.
        args = {"query": "someone used my card without asking", "top_k": 5}
        paraphrase = await s.call_tool("search_knowledge_base", args)
        found = paraphrase.structured_content or {}
        titles = [hit["title"] for hit in found.get("results", [])]
        show(f"search_knowledge_base({json.dumps(args)}) -> titles", {"degraded": found.get("degraded"), "titles": titles})
        if paraphrase.is_error or found.get("degraded") or not any("card fraud" in t.lower() for t in titles):
            print("  expected a card-fraud article from a hybrid (not degraded) search")
            failures += 1
        bad = await s.call_tool("get_transaction", {"transaction_id": "txn_999999"})
        show("get_transaction(unknown id) -> tool error as the agent sees it", bad.structured_content)
        if not bad.is_error:
            failures += 1
    print(f"\nagent session finished: {len(calls) + 1 - failures} of {len(calls) + 1} tool calls answered")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
