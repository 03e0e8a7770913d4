"""More mcp-gateways on the e2e stack, each with its own policy file (SPEC §5a–§5b).

One is the stack's debug binary (`cmd/mcp-gateway.bin` of the stack's dev dir) with the stack
gateway's whole environment (`cmd/mcp-gateway.env`, recorded by scripts/lib/stack.sh: the
issuer, the database proxy, the AWS emulator's endpoints, the chaos and confirmation secrets'
ids), its own free port, `KOSHA_POLICY_FILE`, and any further settings. The stack's own gateway
keeps the built-in set. Used by tests/e2e/test_policies.py and tests/e2e/test_confirm.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from kosha_py import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "crates" / "authz" / "src" / "builtin.cedar"
EXAMPLES = ROOT / "docs" / "policies"
# Seconds a gateway may take to answer /healthz (or exit).
START_S = 20


def deployed(example_text: str) -> str:
    """What `cat builtin.cedar docs/policies/<example>` writes: the file an operator deploys."""
    return BUILTIN.read_text() + example_text


def gateway_env(stack: dict[str, str]) -> dict[str, str]:
    """The stack gateway's whole environment (scripts/lib/stack.sh records it, NUL-separated),
    without its span export: these gateways' spans are not the trace tests' business."""
    raw = (Path(stack["KOSHA_DEV_DIR"]) / "cmd" / "mcp-gateway.env").read_bytes()
    env = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
    return {k: v for k, v in env.items() if not k.startswith("OTEL_")}


@dataclass
class Gateway:
    """One more mcp-gateway on the stack, with a policy file."""

    name: str
    url: str
    policy_file: Path
    now: int | None
    proc: subprocess.Popen
    log: Path


def launch(stack: dict[str, str], name: str, policy_text: str, now: int | None = None,
           env: dict[str, str] | None = None) -> Gateway:
    """Starts the stack's mcp-gateway binary as `name` with `policy_text` as its policy file
    (`now` as its policies' clock, `env` as further settings) on a free port; does not wait
    for it."""
    dev_dir = Path(stack["KOSHA_DEV_DIR"])
    policy_file = dev_dir / f"policy-{name}.cedar"
    policy_file.write_text(policy_text)
    port = free_port()
    full = {**gateway_env(stack), **(env or {}), "KOSHA_LISTEN": f"127.0.0.1:{port}",
            "KOSHA_POLICY_FILE": str(policy_file)}
    if now is not None:
        full["KOSHA_POLICY_NOW"] = str(now)
    binary = (dev_dir / "cmd" / "mcp-gateway.bin").read_text().strip()
    log = dev_dir / "logs" / f"policy-{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([binary], env=full, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return Gateway(name, f"http://127.0.0.1:{port}/mcp", policy_file, now, proc, log)


def healthy(gw: Gateway) -> bool:
    try:
        return httpx.get(gw.url.removesuffix("/mcp") + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_up(gw: Gateway) -> None:
    """Waits until `gw` answers /healthz; fails with its log's tail if it exits or stays
    silent for START_S."""
    up = wait_until(lambda: healthy(gw) or gw.proc.poll() is not None, START_S)
    assert up and gw.proc.poll() is None, f"{gw.name} did not start: {gw.log.read_text()[-2000:]}"


def stop(gw: Gateway) -> None:
    gw.proc.terminate()
    try:
        gw.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        gw.proc.kill()
        gw.proc.wait(timeout=5)


def exit_code(stack: dict[str, str], name: str, policy_text: str) -> tuple[int, str]:
    """Starts a gateway with `policy_text` that is expected to refuse it: its exit code and
    log (stopped, and failing the test, if it is still up after START_S)."""
    gw = launch(stack, name, policy_text)
    try:
        code = gw.proc.wait(timeout=START_S)
    finally:
        if gw.proc.poll() is None:
            stop(gw)
    return code, gw.log.read_text()


@contextmanager
def running(stack: dict[str, str], gateways: dict[str, tuple[str, int | None, dict[str, str] | None]]
            ) -> Iterator[dict[str, Gateway]]:
    """Every gateway of `gateways` (name -> (policy text, clock, further settings)), started
    side by side and up; stopped on exit."""
    started = {name: launch(stack, name, text, now, env) for name, (text, now, env) in gateways.items()}
    try:
        for gw in started.values():
            wait_up(gw)
        yield started
    finally:
        for gw in started.values():
            stop(gw)
