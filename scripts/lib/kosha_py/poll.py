"""Waiting for something without guessing a fixed sleep: `free_port`, `wait_until` (and its
async twin `await_until`), `wait_port`.

Each wait polls a check every `every_s` seconds until it returns something truthy or
`timeout_s` seconds (monotonic clock) have passed, and returns the check's last result, so a
caller asserts on what it saw. `await_until` sleeps with `asyncio.sleep`, never blocking the
event loop of an async test (issue 42).
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check: Callable[[], T], timeout_s: float, every_s: float = 0.1) -> T:
    """Calls `check` until it returns a truthy value or `timeout_s` has passed; its last result."""
    end = time.monotonic() + timeout_s
    while True:
        got = check()
        if got or time.monotonic() >= end:
            return got
        time.sleep(every_s)


async def await_until(check: Callable[[], T | Awaitable[T]], timeout_s: float, every_s: float = 0.1) -> T:
    """`wait_until` for async code: `check` may be a plain or a coroutine function; between
    tries it awaits `asyncio.sleep`."""
    end = time.monotonic() + timeout_s
    while True:
        got = check()
        if inspect.isawaitable(got):
            got = await got
        if got or time.monotonic() >= end:
            return got
        await asyncio.sleep(every_s)


def wait_port(port: int, proc: subprocess.Popen, timeout_s: float) -> bool:
    """Whether 127.0.0.1:`port` accepts a connection within `timeout_s` while `proc` runs."""

    def settled() -> str | None:
        if proc.poll() is not None:
            return "exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return "accepts"
        except OSError:
            return None

    return wait_until(settled, timeout_s, 0.05) == "accepts"
