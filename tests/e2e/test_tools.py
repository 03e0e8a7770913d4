"""The four read tools through the official MCP client: schemas, results, tool errors, bad input."""

from __future__ import annotations

import jsonschema
import pytest
from mcp.shared.exceptions import MCPError

from kosha_client import session

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {
    "search_knowledge_base", "get_transaction", "list_transactions", "get_service_health",
    "screen_entity", "get_screening_result", "raise_dispute", "flag_transaction_for_review",
}
ERROR_CODES = {
    "invalid_argument", "not_found", "conflict", "deadline_exceeded",
    "dependency_unavailable", "overloaded", "rate_limited", "internal",
}
SQL_META = "'; DROP TABLE core.accounts; -- \" % _ \\"


async def tools_by_name(s):
    return {t.name: t for t in (await s.list_tools()).tools}


def assert_tool_error(result, code: str, field: str | None = None) -> dict:
    assert result.is_error is True
    err = result.structured_content["error"]
    assert err["code"] == code, err
    assert err["code"] in ERROR_CODES
    assert isinstance(err["message"], str) and err["message"]
    if field is not None:
        assert field in err["message"], err
    # the text block mirrors structuredContent
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert "Traceback" not in err["message"] and "panicked" not in err["message"]
    return err


async def test_tools_list_declares_schemas_and_annotations(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        tools = await tools_by_name(s)
    assert EXPECTED_TOOLS <= set(tools)
    for t in tools.values():
        assert t.input_schema["type"] == "object"
        assert t.output_schema is not None and t.output_schema["type"] == "object"
        a = t.annotations
        assert a is not None
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert getattr(a, hint) is not None, (t.name, hint)
    assert tools["search_knowledge_base"].input_schema["properties"]["top_k"]["maximum"] == 20


CALLS = [
    ("search_knowledge_base", {"query": "chargeback on a card payment", "top_k": 3}),
    ("get_transaction", {"transaction_id": "txn_000001"}),
    ("list_transactions", {"account_id": "acc_0001", "limit": 5}),
    ("get_service_health", {}),
]


@pytest.mark.parametrize(("name", "args"), CALLS, ids=[c[0] for c in CALLS])
async def test_every_tool_result_matches_its_output_schema(gateway_url, agent_token, name, args):
    async with session(gateway_url, agent_token) as s:
        schema = (await tools_by_name(s))[name].output_schema
        result = await s.call_tool(name, args)
    assert result.is_error is not True, result.structured_content
    jsonschema.validate(result.structured_content, schema)
    # the same JSON as one text block
    import json
    assert json.loads(result.content[0].text) == result.structured_content


async def test_seed_data_is_real(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        txn = (await s.call_tool("get_transaction", {"transaction_id": "txn_000001"})).structured_content
        kb = (await s.call_tool("search_knowledge_base", {"query": "chargeback", "top_k": 5})).structured_content
        page = (await s.call_tool("list_transactions", {"account_id": "acc_0001", "limit": 100})).structured_content
    for result in (txn, kb, page):
        assert "error" not in result, result
    t = txn["transaction"]
    assert t["transaction_id"] == "txn_000001"
    assert t["account_id"].startswith("acc_") and isinstance(t["amount_minor"], int)
    assert kb["results"] and kb["results"][0]["article_id"].startswith("kb_")
    assert "chargeback" in (kb["results"][0]["title"] + kb["results"][0]["snippet"]).lower()
    assert kb["degraded"] is False
    assert len(page["transactions"]) >= 20
    assert all(x["account_id"] == "acc_0001" for x in page["transactions"])


async def test_pagination_walks_an_account_without_gaps(gateway_url, agent_token):
    seen: list[str] = []
    async with session(gateway_url, agent_token) as s:
        cursor = None
        for _ in range(100):
            args = {"account_id": "acc_0002", "limit": 7}
            if cursor:
                args["cursor"] = cursor
            page = (await s.call_tool("list_transactions", args)).structured_content
            seen += [t["transaction_id"] for t in page["transactions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        full = (await s.call_tool("list_transactions", {"account_id": "acc_0002", "limit": 100})).structured_content
    assert len(seen) == len(set(seen)) >= 20
    assert seen[: len(full["transactions"])] == [t["transaction_id"] for t in full["transactions"]]


async def test_unknown_transaction_is_not_found(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        result = await s.call_tool("get_transaction", {"transaction_id": "txn_999999"})
    assert_tool_error(result, "not_found")


async def test_unknown_account_is_not_found(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        result = await s.call_tool("list_transactions", {"account_id": "acc_9999"})
    assert_tool_error(result, "not_found")


BAD_ARGS = [
    ("search_knowledge_base", {"query": "fees", "top_k": 0}, "top_k"),
    ("search_knowledge_base", {"query": "fees", "top_k": 10000}, "top_k"),
    ("search_knowledge_base", {"query": "fees", "top_k": "five"}, "top_k"),
    ("search_knowledge_base", {}, "query"),
    ("search_knowledge_base", {"query": ""}, "query"),
    ("search_knowledge_base", {"query": "x" * 513}, "query"),
    ("search_knowledge_base", {"query": "fees", "extra": 1}, "extra"),
    ("get_transaction", {}, "transaction_id"),
    ("get_transaction", {"transaction_id": 42}, "transaction_id"),
    ("get_transaction", {"transaction_id": "txn_1"}, "transaction_id"),
    ("list_transactions", {"account_id": "acc_0001", "limit": 0}, "limit"),
    ("list_transactions", {"account_id": "acc_0001", "limit": 101}, "limit"),
    ("list_transactions", {"account_id": "acc_0001", "from": "yesterday"}, "from"),
    ("list_transactions", {"account_id": "acc_0001", "to": "2026-13-01T00:00:00Z"}, "to"),
    ("list_transactions", {"account_id": "acc_0001", "from": "2026-06-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "from"),
    ("list_transactions", {"account_id": "acc_0001", "cursor": "not-a-cursor"}, "cursor"),
    ("list_transactions", {"account_id": "0001"}, "account_id"),
    ("get_service_health", {"verbose": True}, "verbose"),
]


@pytest.mark.parametrize(("name", "args", "field"), BAD_ARGS, ids=[f"{n}-{f}-{i}" for i, (n, _, f) in enumerate(BAD_ARGS)])
async def test_bad_arguments_are_tool_errors_naming_the_field(gateway_url, agent_token, name, args, field):
    async with session(gateway_url, agent_token) as s:
        result = await s.call_tool(name, args)
    assert_tool_error(result, "invalid_argument", field)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("search_knowledge_base", {"query": SQL_META}),
        ("get_transaction", {"transaction_id": SQL_META}),
        ("list_transactions", {"account_id": SQL_META}),
        ("list_transactions", {"account_id": "acc_0001", "cursor": SQL_META}),
        ("list_transactions", {"account_id": "acc_0001", "from": SQL_META}),
    ],
)
async def test_sql_metacharacters_are_harmless(gateway_url, agent_token, name, args):
    async with session(gateway_url, agent_token) as s:
        result = await s.call_tool(name, args)
        if result.is_error:
            assert_tool_error(result, "invalid_argument")
        # the data is still there afterwards
        after = await s.call_tool("get_transaction", {"transaction_id": "txn_000001"})
    assert after.is_error is not True


async def test_unknown_tool_is_a_jsonrpc_invalid_params_error(gateway_url, agent_token):
    async with session(gateway_url, agent_token) as s:
        with pytest.raises(MCPError) as info:
            await s.call_tool("drop_all_tables", {})
    assert info.value.error.code == -32602
