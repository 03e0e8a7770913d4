"""End-to-end fixtures: a running stack described by stack.env (started by scripts/test)."""

from __future__ import annotations

import pytest

from kosha_client import load_stack_env


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def stack() -> dict[str, str]:
    return load_stack_env()


@pytest.fixture(scope="session")
def gateway_url(stack: dict[str, str]) -> str:
    return stack["KOSHA_GATEWAY_URL"]


@pytest.fixture(scope="session")
def agent_token(stack: dict[str, str]) -> str | None:
    return stack.get("KOSHA_AGENT_TOKEN")
