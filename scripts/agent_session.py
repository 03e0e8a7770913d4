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
        # Sanctions screening (issue 12): one clear name, one listed person written another
        # way (Latin transliteration, reordered), each read back by its screening_id.
        screenings = [
            ({"name": "Hiroshi Tanaka", "country": "JP"}, "clear"),
            ({"name": "Haddad, Nabeel Sameer", "country": "EG"}, "potential_match"),
        ]
        for args, expected in screenings:
            result = await s.call_tool("screen_entity", args)
            out = result.structured_content or {}
            status = out.get("status")
            show(f"screen_entity({json.dumps(args, ensure_ascii=False)})", out)
            if result.is_error or status not in (expected, "deferred"):
                failures += 1
                continue
            back = await s.call_tool("get_screening_result", {"screening_id": out["screening_id"]})
            show(f"get_screening_result({out['screening_id']})", back.structured_content)
            if back.is_error:
                failures += 1
        calls += [("screen_entity", a) for a, _ in screenings]
        bad = await s.call_tool("get_transaction", {"transaction_id": "txn_999999"})
        show("get_transaction(unknown id) -> tool error as the agent sees it", bad.structured_content)
        if not bad.is_error:
            failures += 1
    print(f"\nagent session finished: {len(calls) - failures} of {len(calls)} tool calls answered")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
