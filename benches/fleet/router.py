"""Lambda-like instances and the router in front of them (issue 26).

- An instance is one `mcp-gateway` process in server mode (KOSHA_LISTEN) on its own port. It
  serves one request at a time. It is frozen (SIGSTOP) as soon as it has answered and thawed
  (SIGCONT) when its next request arrives, so no work happens between requests, as on Lambda.
- The router gives a request to an idle warm instance (`mru`: most recently used first, as
  Lambda does; `random`; `pinned`: client i to slot i mod N), or starts a new one in a free
  slot (cold start) when none is idle, up to N; with all N busy the request is throttled
  (HTTP 429 from the router, counted apart from the gateways' answers).
- An instance idle past `idle_kill_s` is thawed and killed without notice (SIGKILL); its slot
  is free for a cold start. `hold`/`release` take one instance out of routing (the freeze
  scenario).
- `close` kills every process it started (SIGCONT, SIGTERM, then SIGKILL after 2 s); the
  simulator calls it on every exit, interrupted or not.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from kosha_py import free_port

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}


@dataclass
class Record:
    """One agent call as the router saw it (times: seconds since the simulation started)."""

    client: int
    slot: int | None
    pid: int | None
    start: float
    end: float
    kind: str  # ok | refused | failed | limited | throttled | error
    code: str = ""
    cold: bool = False

    @property
    def latency(self) -> float:
        return self.end - self.start


def classify(status: int, body: dict | None) -> tuple[str, str]:
    """(kind, code) of a gateway answer: `ok`, `refused` (a breaker's fast refusal:
    `dependency_unavailable` with `retry_after_s`), `failed` (any other tool error: an attempt
    that failed), `limited` (the bucket's `rate_limited`: a tool error since SPEC §6's
    revision, or the per-principal limiter's JSON-RPC error), `error` (anything else)."""
    if body is None:
        return "error", f"http_{status}"
    if "error" in body:
        data = body["error"].get("data") or {}
        code = data.get("code", str(body["error"].get("code")))
        return ("limited" if code == "rate_limited" else "error"), code
    result = body.get("result", {})
    if not result.get("isError"):
        return "ok", ""
    err = (result.get("structuredContent") or {}).get("error", {})
    code = err.get("code", "?")
    if code == "rate_limited":
        return "limited", code
    if code == "dependency_unavailable" and err.get("retry_after_s") is not None:
        return "refused", code
    return "failed", code


@dataclass
class Instance:
    slot: int
    port: int
    proc: asyncio.subprocess.Process
    log_path: Path
    client: httpx.AsyncClient
    started: float
    busy: bool = True
    held: bool = False
    last_used: float = 0.0
    log_offset: int = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: int) -> None:
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass


@dataclass
class Router:
    binary: Path
    env: dict[str, str]
    size: int
    routing: str
    log_dir: Path
    t0: float
    idle_kill_s: float = 30.0
    slots: dict[int, Instance] = field(default_factory=dict)
    starting: set[int] = field(default_factory=set)
    records: list[Record] = field(default_factory=list)
    # (time, slot, pid, what): cold starts, kills, holds, for the picture and the summary.
    lifecycle: list[tuple[float, int, int, str]] = field(default_factory=list)
    # (time, slot, pid, state): the core-api breaker's transitions, from each instance's log
    # lines written while it served a request (an instance works only then).
    transitions: list[tuple[float, int, int, str]] = field(default_factory=list)
    # (time, slot, pid, reason) of each core-api breaker open: `own` or `fleet` (#27).
    opens: list[tuple[float, int, int, str]] = field(default_factory=list)
    # More environment for one slot's instances (a fault proxy of its own: `sick-instance`).
    slot_env: dict[int, dict[str, str]] = field(default_factory=dict)
    processes: list[Instance] = field(default_factory=list)
    _reaper: asyncio.Task | None = None

    def now(self) -> float:
        return time.monotonic() - self.t0

    # ---- processes ----
    async def _spawn(self, slot: int) -> Instance:
        port = free_port()
        log_path = self.log_dir / f"gateway-slot{slot}-{len(self.processes)}.log"
        env = dict(self.env, **self.slot_env.get(slot, {}), KOSHA_LISTEN=f"127.0.0.1:{port}")
        log = open(log_path, "wb")
        proc = await asyncio.create_subprocess_exec(
            str(self.binary), env=env, stdout=log, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(30.0),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        inst = Instance(slot, port, proc, log_path, client, self.now())
        self.processes.append(inst)
        await wait_healthy(client, "/healthz", proc, f"mcp-gateway (log: {log_path})")
        self.lifecycle.append((self.now(), slot, proc.pid, "cold_start"))
        return inst

    async def _kill(self, inst: Instance, why: str) -> None:
        inst.signal(signal.SIGCONT)
        inst.signal(signal.SIGKILL)
        await inst.proc.wait()
        await inst.client.aclose()
        self.lifecycle.append((self.now(), inst.slot, inst.pid, why))

    async def close(self) -> None:
        if self._reaper:
            self._reaper.cancel()
        for inst in self.processes:
            if inst.proc.returncode is None:
                inst.signal(signal.SIGCONT)
                inst.signal(signal.SIGTERM)
        end = time.monotonic() + 2
        for inst in self.processes:
            try:
                await asyncio.wait_for(inst.proc.wait(), max(0.05, end - time.monotonic()))
            except asyncio.TimeoutError:
                inst.signal(signal.SIGKILL)
                await inst.proc.wait()
            await inst.client.aclose()
        self.slots.clear()

    async def flush_all(self, seconds: float = 1.5) -> None:
        """Thaws every live instance for `seconds` so its metrics are flushed, then freezes it."""
        live = [i for i in self.slots.values() if not i.busy]
        for inst in live:
            inst.signal(signal.SIGCONT)
        await asyncio.sleep(seconds)
        for inst in live:
            if not inst.busy:
                inst.signal(signal.SIGSTOP)

    def start_reaper(self) -> None:
        async def reap() -> None:
            while True:
                await asyncio.sleep(1.0)
                now = self.now()
                for slot, inst in list(self.slots.items()):
                    if not inst.busy and not inst.held and now - inst.last_used > self.idle_kill_s:
                        del self.slots[slot]
                        await self._kill(inst, "idle_kill")
        self._reaper = asyncio.create_task(reap())

    # ---- routing ----
    def _pick(self, client: int) -> tuple[Instance | None, int | None]:
        """(a warm idle instance, None) or (None, a free slot to cold-start) or (None, None)."""
        if self.routing == "pinned":
            slot = client % self.size
            inst = self.slots.get(slot)
            if inst is not None:
                return (None, None) if inst.busy or inst.held else (inst, None)
            return (None, None) if slot in self.starting else (None, slot)
        idle = [i for i in self.slots.values() if not i.busy and not i.held]
        if idle:
            if self.routing == "random":
                return random.choice(idle), None
            return max(idle, key=lambda i: i.last_used), None
        for slot in range(self.size):
            if slot not in self.slots and slot not in self.starting:
                return None, slot
        return None, None

    async def call(self, client: int, payload: bytes, token: str, target: int | None = None) -> Record:
        start = self.now()
        cold = False
        if target is not None:
            inst = self.slots.get(target)
            if inst is None or inst.busy:
                return self._record(Record(client, target, None, start, self.now(), "throttled"))
        else:
            inst, slot = self._pick(client)
            if inst is None and slot is None:
                return self._record(Record(client, None, None, start, self.now(), "throttled"))
            if inst is None:
                self.starting.add(slot)
                try:
                    inst = await self._spawn(slot)
                finally:
                    self.starting.discard(slot)
                self.slots[slot] = inst
                cold = True
        inst.busy = True
        inst.signal(signal.SIGCONT)
        end = None
        try:
            r = await inst.client.post("/mcp", content=payload, headers=dict(HEADERS, Authorization=f"Bearer {token}"))
            # The agent has its answer here; the router's own work after it (parsing,
            # freezing, reading the log) is not the call's latency.
            end = self.now()
            try:
                body = r.json()
            except ValueError:
                body = None
            kind, code = classify(r.status_code, body)
        except httpx.HTTPError as e:
            kind, code = "error", type(e).__name__
        finally:
            inst.signal(signal.SIGSTOP)
            inst.busy = False
            inst.last_used = self.now()
            self._read_transitions(inst)
        return self._record(Record(client, inst.slot, inst.pid, start, end if end is not None else self.now(), kind, code, cold))

    def _read_transitions(self, inst: Instance) -> None:
        try:
            with open(inst.log_path, "rb") as f:
                f.seek(inst.log_offset)
                data = f.read()
        except OSError:
            return
        cut = data.rfind(b"\n") + 1
        inst.log_offset += cut
        for line in data[:cut].splitlines():
            if b"breaker state change" not in line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            fields = rec.get("fields", rec)
            if fields.get("dependency") == "core-api":
                self.transitions.append((self.now(), inst.slot, inst.pid, str(fields.get("to"))))
                if fields.get("to") == "open":
                    self.opens.append((self.now(), inst.slot, inst.pid, str(fields.get("reason"))))

    def _record(self, rec: Record) -> Record:
        self.records.append(rec)
        return rec

    def hold(self, slot: int) -> Instance | None:
        inst = self.slots.get(slot)
        if inst is not None:
            inst.held = True
            self.lifecycle.append((self.now(), slot, inst.pid, "freeze"))
        return inst

    def release(self, slot: int) -> None:
        inst = self.slots.get(slot)
        if inst is not None:
            inst.held = False
            self.lifecycle.append((self.now(), slot, inst.pid, "thaw"))


async def wait_healthy(client: httpx.AsyncClient, url: str, proc, what: str, seconds: float = 60.0) -> None:
    """Polls GET `url` with `client` until it answers 200; raises when `proc` (a started
    process, named `what` in the error) exits first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError(f"{what} exited while starting")
        try:
            if (await client.get(url, timeout=1.0)).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.02)
    raise RuntimeError(f"{what} did not answer {url} in {seconds:g} s")
