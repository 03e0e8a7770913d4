"""End-to-end fixtures: a running stack described by stack.env (started by scripts/test).
The shared helpers (scripts/lib/kosha_py) are importable from every test module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

from kosha_client import load_stack_env


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "after_all: runs after every other selected test (it reads what they left, e.g. the logs)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Moves the tests marked `after_all` behind all others (a stable sort: each group keeps its
    order), after any other plugin reordered them, so no test relies on its file's name."""
    items.sort(key=lambda item: item.get_closest_marker("after_all") is not None)


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
