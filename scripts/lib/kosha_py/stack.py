"""The running stack's command-line tools, as the tests, scripts and benchmarks call them:
`dev()` (scripts/dev: stop or start one component), `ops()` (kosha-ops) and `sign()` (a signed
`X-Kosha-Chaos` header, SPEC §9).

`stack` is stack.env's entries (SPEC §2; `tests/e2e/kosha_client.load_stack_env`); the tools
run with the caller's environment plus its `AWS_*` and `KOSHA_*` entries. A failed `dev()` or
`sign()` raises RuntimeError with the tool's standard error; `ops()` returns the finished
process, for callers that assert on a refusal.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def child_env(stack: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus `stack`'s `AWS_*` and `KOSHA_*` entries."""
    env = dict(os.environ)
    env.update({k: v for k, v in (stack or {}).items() if k.startswith(("AWS_", "KOSHA_"))})
    return env


def dev(*args: str, stack: Mapping[str, str] | None = None, timeout_s: float = 120) -> None:
    """Runs `scripts/dev ARGS...` (e.g. `dev("stop", "core-api")`) on the stack of
    `$KOSHA_DEV_DIR` (or `stack`'s)."""
    out = subprocess.run([str(ROOT / "scripts" / "dev"), *args], env=child_env(stack),
                         capture_output=True, text=True, timeout=timeout_s)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/dev {' '.join(args)} failed: {out.stderr.strip()}")


def ops(stack: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Runs `kosha-ops ARGS...` (stack.env's `KOSHA_OPS`), output captured as text."""
    return subprocess.run([stack["KOSHA_OPS"], *args], env=child_env(stack),
                          capture_output=True, text=True, timeout=30)


def sign(stack: Mapping[str, str], target: str, fault: str, ms: int | None = None, p: float = 1.0,
         ttl: str = "5m") -> str:
    """A chaos header `kosha-ops chaos sign` signs with the stack's key: `fault` on `target`
    with probability `p`, `ms` of latency or hang where the fault takes one, valid for `ttl`."""
    args = ["chaos", "sign", "--target", target, "--fault", fault, "--p", str(p), "--ttl", ttl]
    if ms is not None:
        args += ["--ms", str(ms)]
    out = ops(stack, *args)
    if out.returncode != 0:
        raise RuntimeError(f"kosha-ops chaos sign failed: {out.stderr.strip()}")
    return out.stdout.strip()
