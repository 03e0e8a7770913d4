"""A real MCP client session against the Kosha gateway, using the official Python `mcp` SDK.

Shared by the demo (`scripts/dev up`) and the end-to-end tests. Reads the stack's
`stack.env` (SPEC §2) for the gateway URL and the agent's token.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def load_stack_env(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Parses `KEY=value` lines of stack.env (default: $KOSHA_STACK_ENV or .dev/stack.env)."""
    root = Path(__file__).resolve().parents[2]
    path = Path(path or os.environ.get("KOSHA_STACK_ENV") or root / ".dev" / "stack.env")
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        env[key.strip()] = value.strip()
    return env


@contextlib.asynccontextmanager
async def session(url: str, token: str | None = None, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session to `url`, authenticated with `token` when given."""
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    timeout = httpx2.Timeout(30.0, read=60.0)
    async with httpx2.AsyncClient(headers=all_headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def emf_total(log: Path, metric: str, **dimensions: str) -> float:
    """Sum of `metric` over the CloudWatch EMF documents in a function's log whose dimensions
    match `dimensions` (SPEC §12: metrics are EMF lines on stdout)."""
    import json

    total = 0.0
    for line in log.read_text().splitlines():
        if '"_aws"' not in line:
            continue
        doc = json.loads(line)
        if metric in doc and all(doc.get(k) == v for k, v in dimensions.items()):
            total += float(doc[metric])
    return total
