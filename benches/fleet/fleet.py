"""The fleet simulator (issue 26): many Lambda-like mcp-gateway instances in one command.

Run by scripts/bench-fleet, which builds the binaries, prepares PostgreSQL, starts the AWS
emulator, bootstraps the state table and the dev signing key, then runs this with their
paths. This process runs, on loopback: the DynamoDB delay/counting proxy, core-api behind
its fault proxy, the router and its instances (router.py), the agents, and each requested
scenario (scenarios.py) on a fresh fleet. Output: one table on stdout, one JSON line per run
in OUT/results.jsonl, one PNG per run in OUT. Exit 1 when a verdict fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

import picture  # noqa: E402
import scenarios  # noqa: E402
from kosha_py import free_port  # noqa: E402
from kosha_py.fault_proxy import FaultProxy  # noqa: E402
from proxies import DynamoProxy  # noqa: E402
from router import Router, wait_healthy  # noqa: E402


# The app client the `rate-user` agents sign in through.
USER_APP = "fleet-app"


class Sim:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.instances = args.instances
        self.seconds = args.seconds
        self.rate_seconds = args.rate_seconds or args.seconds
        self.clients = args.clients or 2 * args.instances
        self.rate_capacity = args.rate_capacity
        self.rate_per_s = args.rate_per_sec
        self.bin = Path(args.bin_dir)
        self.out = Path(args.out_dir)
        self.tokens: list[str] = []
        # The `rate-user` agents: people behind one app client (KOSHA_RATE_KEY=user, issue 44).
        self.user_tokens: list[str] = []
        self.rows: list[dict] = []
        self.ddb: DynamoProxy | None = None
        self.core_proxy: FaultProxy | None = None
        self.core: asyncio.subprocess.Process | None = None
        self.router: Router | None = None
        self._reads_from = 0.0

    # ---- set-up ----
    def aws_env(self) -> dict[str, str]:
        keep = ("PATH", "HOME", "LANG", "TZ")
        env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("AWS_")}
        env.update(AWS_ENDPOINT_URL=self.args.aws_url, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="fleet",
                   AWS_SECRET_ACCESS_KEY="fleet", AWS_EC2_METADATA_DISABLED="true",
                   KOSHA_STATE_TABLE=self.args.table)
        return env

    async def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        n_tokens = max(self.clients, scenarios.OUTAGE_AGENTS) + self.instances
        ids = [f"fleet-agent-{i}" for i in range(n_tokens)]
        for cid in ids:
            self.tokens.append(self.mint("--client-id", cid))
        if "rate-user" in self.args.scenario:
            self.user_tokens = [self.mint("--client-id", USER_APP, "--user", user)
                                for user in self.user_subs()]
        self.client_ids = ids + [USER_APP]
        moto_port = int(self.args.aws_url.rsplit(":", 1)[1].split("/")[0])
        self.ddb = DynamoProxy(moto_port, self.args.ddb_delay_ms / 1000)
        await self.ddb.start()
        core_port = free_port()
        log = open(self.out / "core-api.log", "wb")
        self.core = await asyncio.create_subprocess_exec(
            str(self.bin / "core-api"), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(self.aws_env(), DATABASE_URL=self.args.db_url, KOSHA_LISTEN=f"127.0.0.1:{core_port}",
                     RUST_LOG="warn"), start_new_session=True)
        log.close()
        async with httpx.AsyncClient() as c:
            await wait_healthy(c, f"http://127.0.0.1:{core_port}/v1/health", self.core,
                               f"core-api (log: {self.out / 'core-api.log'})")
        self.core_port = core_port
        self.core_proxy = FaultProxy(core_port)
        await self.core_proxy.start()

    def mint(self, *who: str) -> str:
        """An agent token for `who` (`kosha-ops token mint` options), valid 2 h."""
        return subprocess.run(
            [str(self.bin / "kosha-ops"), "token", "mint", "--role", "agent", *who,
             "--key", self.args.key, "--issuer", self.args.issuer, "--ttl", "2h"],
            check=True, capture_output=True, text=True).stdout.strip()

    def user_subs(self) -> list[str]:
        """The `sub` of each `rate-user` agent."""
        return [f"fleet-user-{i}" for i in range(self.clients)]

    def gateway_env(self) -> dict[str, str]:
        env = self.aws_env()
        env.update(
            AWS_ENDPOINT_URL_DYNAMODB=f"http://127.0.0.1:{self.ddb.port}",
            KOSHA_CORE_API_URL=f"http://127.0.0.1:{self.core_proxy.port}",
            KOSHA_SCREENING_URL="http://127.0.0.1:9",
            KOSHA_JWT_ISSUER=self.args.issuer, KOSHA_JWKS_URL=f"file://{self.args.jwks}",
            KOSHA_ALLOWED_CLIENT_IDS=",".join(self.client_ids), KOSHA_PRINCIPAL_RPS="1000000",
            KOSHA_RATE_CAPACITY=f"{self.rate_capacity:g}", KOSHA_RATE_PER_SEC=f"{self.rate_per_s:g}",
            KOSHA_METRICS_FLUSH_MS="1000", RUST_LOG="info,rmcp=warn", CHAOS_ENABLED="false",
            # The emulator is one Python process behind the delay proxy; on a loaded machine
            # its writes take over the 100 ms that fails a real in-region call open, and
            # `rate` measures the bucket's accuracy, not that (docs/operations.md).
            KOSHA_RATE_CALL_TIMEOUT_MS="1000",
        )
        for kv in self.args.gateway_env:
            k, _, v = kv.partition("=")
            env[k] = v
        return env

    async def stop(self) -> None:
        if self.router:
            await self.router.close()
        if self.core_proxy:
            await self.core_proxy.stop()
        if self.ddb:
            await self.ddb.stop()
        if self.core and self.core.returncode is None:
            self.core.terminate()
            try:
                await asyncio.wait_for(self.core.wait(), 5)
            except asyncio.TimeoutError:
                self.core.kill()
                await self.core.wait()

    # ---- one run ----
    @contextlib.asynccontextmanager
    async def run(self, name: str, routing: str, env: dict[str, str] | None = None,
                  slot_env: dict[int, dict[str, str]] | None = None):
        """A fresh fleet for one scenario run: yields (router, DynamoDB counts of this run,
        filled when the block ends). `env` adds to every instance's environment, `slot_env`
        to one slot's."""
        await self.clear(None)
        await asyncio.to_thread(self.reset_buckets)
        await self.core_proxy.set_mode("pass")
        counts: dict = {}
        before = self.ddb.snapshot()
        self.router = Router(self.bin / "mcp-gateway", dict(self.gateway_env(), **(env or {})), self.instances,
                             routing, self.out, time.monotonic(), idle_kill_s=self.args.idle_kill,
                             slot_env=slot_env or {})
        self._reads_from = time.monotonic()
        self.router.start_reaper()
        self._name = f"{name}-{routing}-n{self.instances}" + "".join(f"-{v}" for v in (env or {}).values())
        print(f"fleet: {self._name}: {self.seconds:g} s, {self.clients} agents", file=sys.stderr, flush=True)
        try:
            yield self.router, counts
            await self.router.flush_all()
        finally:
            after = self.ddb.snapshot()
            counts.update({k: after[k] - before.get(k, 0) for k in after})
            await self.router.close()

    def reset_buckets(self) -> None:
        """Deletes every agent's `rl#` and `rl#u#` item, so each run starts with full buckets."""
        import boto3

        ddb = boto3.client("dynamodb", endpoint_url=self.args.aws_url, region_name="us-east-1",
                           aws_access_key_id="fleet", aws_secret_access_key="fleet")
        keys = [f"rl#{cid}" for cid in self.client_ids] + [f"rl#u#{sub}" for sub in self.user_subs()]
        for key in keys:
            ddb.delete_item(TableName=self.args.table, Key={"pk": {"S": key}})

    def row(self, router: Router, scenario: str, routing: str, events: dict | None = None,
            seconds: float | None = None, agents: int | None = None, **figures) -> dict:
        png = self.out / f"fleet-{self._name}.png"
        title = f"bench-fleet {scenario}, routing {routing}, N = {self.instances}: {figures.get('verdict')}"
        seconds = seconds or self.seconds
        picture.draw(png, title, router, events or {}, seconds)
        cold = sum(1 for e in router.lifecycle if e[3] == "cold_start")
        row = dict(scenario=scenario, routing=routing, instances=self.instances, seconds=seconds,
                   agents=agents or self.clients, cold_starts=cold, profile=self.args.profile,
                   **{k: round(v, 2) if isinstance(v, float) else v for k, v in (events or {}).items()},
                   **figures, picture=str(png))
        return row

    @contextlib.asynccontextmanager
    async def forwarding_floor(self):
        """benches/mcp-floor on a port of its own, forwarding to core-api through the same
        fault proxy as the gateways: yields an httpx client on it (the `latency` scenario's
        minimal proxy). Stopped on exit."""
        binary = self.bin / "mcp-floor"
        if not binary.exists():
            raise RuntimeError(f"{binary} is not built: scripts/bench-fleet without --no-build builds it")
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            str(binary), "--listen", f"127.0.0.1:{port}", "--core-api-url", f"http://127.0.0.1:{self.core_proxy.port}",
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
        client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(30.0))
        try:
            await wait_healthy(client, "/healthz", proc, "mcp-floor", seconds=10.0)
            yield client
        finally:
            await client.aclose()
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()

    # ---- operator and measurements ----
    async def ops(self, *argv: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            str(self.bin / "kosha-ops"), *argv, env=self.aws_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = await proc.communicate()
        if proc.returncode not in (0,):
            raise RuntimeError(f"kosha-ops {' '.join(argv)}: {err.decode().strip()}")

    async def status_json(self) -> dict:
        """`kosha-ops status --json`: the overrides and fleet trips in force."""
        proc = await asyncio.create_subprocess_exec(
            str(self.bin / "kosha-ops"), "status", "--json", env=self.aws_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"kosha-ops status: {err.decode().strip()}")
        return json.loads(out)

    def trips_since(self, router: Router, t: float, breaker: str = "core-api") -> list[tuple[float, str]]:
        """(router time, instance id) of each `breaker` trip written after router time `t`."""
        return [(end - router.t0, inst) for end, b, inst in self.ddb.trip_writes
                if b == breaker and end - router.t0 >= t]

    def open_duration_s(self) -> float:
        """core-api reads' breaker open duration as the instances run it."""
        return float(self.gateway_env().get("KOSHA_POLICY_CORE_API_READ_BREAKER_OPEN_MS", "15000")) / 1000

    async def force_open(self, router: Router | None) -> float:
        await self.ops("breaker", "force-open", "core-api", "--reason", "fleet simulator")
        return router.now() if router else 0.0

    async def clear(self, router: Router | None) -> float:
        proc = await asyncio.create_subprocess_exec(
            str(self.bin / "kosha-ops"), "breaker", "clear", "core-api", env=self.aws_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await proc.wait()  # "nothing to clear" is not an error here
        return router.now() if router else 0.0

    def read_after(self, router: Router, t: float | None) -> float | None:
        """How long the first override read that started after router time `t` took."""
        if t is None:
            return None
        start = router.t0 + t
        for end, d in self.ddb.override_reads:
            if end - d >= start:
                return d
        return None

    def longest_read(self) -> float:
        return max((d for t, d in self.ddb.override_reads if t >= self._reads_from), default=0.0)

    def fail_open(self, router: Router) -> int:
        """`rate_limit{decision=fail_open}` summed over the run's instances' EMF documents."""
        total = 0
        for inst in router.processes:
            try:
                lines = inst.log_path.read_bytes().splitlines()
            except OSError:
                continue
            for line in lines:
                if b"fail_open" not in line or b"_aws" not in line:
                    continue
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                if doc.get("decision") == "fail_open" and "rate_limit" in doc:
                    v = doc["rate_limit"]
                    total += int(sum(v) if isinstance(v, list) else v)
        return total

    def payload(self, client: int) -> bytes:
        txn = f"txn_{(client % 5000) + 1:06d}"
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "get_transaction", "arguments": {"transaction_id": txn}}}).encode()


COLUMNS = ("scenario", "routing", "instances", "verdict")


def table(rows: list[dict]) -> str:
    out = []
    for r in rows:
        head = " ".join(f"{r.get(c)}" for c in COLUMNS)
        rest = ", ".join(f"{k}={scenarios.fmt(v)}" for k, v in r.items()
                         if k not in COLUMNS + ("picture", "seconds", "profile", "why") and v is not None)
        out.append(f"{head:<32} {rest}" + (f"\n{'':<32} why: {r['why']}" if r.get("why") else ""))
    return "\n".join(out)


async def main_async(args: argparse.Namespace) -> int:
    sim = Sim(args)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await sim.start()
        for name in args.scenario:
            rows = await scenarios.SCENARIOS[name](sim, args.routing)
            with open(sim.out / "results.jsonl", "a") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
            sim.rows.extend(rows)
            print(table(rows), flush=True)
    except asyncio.CancelledError:
        print("fleet: interrupted; stopping every process", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print(f"fleet: error: {e}", file=sys.stderr)
        return 1
    finally:
        await sim.stop()
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
    failed = [r for r in sim.rows if r.get("verdict") == "fail"]
    void = [r for r in sim.rows if r.get("verdict") == "void"]
    print(f"fleet: {len(sim.rows) - len(failed) - len(void)} of {len(sim.rows)} verdicts pass, {len(failed)} fail, "
          f"{len(void)} void (not counted: see why); results in {sim.out / 'results.jsonl'}")
    return 1 if failed else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--instances", type=int, default=4)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--routing", choices=("mru", "random", "pinned"))
    p.add_argument("--scenario", action="append", choices=sorted(scenarios.SCENARIOS))
    p.add_argument("--rate-seconds", type=float, default=0.0, help="each rate run (default --seconds)")
    p.add_argument("--clients", type=int, default=0, help="agents (default 2 x instances)")
    p.add_argument("--ddb-delay-ms", type=float, default=5.0)
    p.add_argument("--idle-kill", type=float, default=30.0, help="seconds idle before an instance is killed")
    p.add_argument("--rate-capacity", type=float, default=20.0)
    p.add_argument("--rate-per-sec", type=float, default=1.0)
    p.add_argument("--gateway-env", action="append", default=[], metavar="KEY=VALUE")
    for name in ("bin-dir", "out-dir", "aws-url", "table", "issuer", "key", "jwks", "db-url"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--profile", default="debug")
    args = p.parse_args()
    args.scenario = args.scenario or ["rate", "rate-user", "latency", "override", "outage", "freeze", "sick-instance"]
    if args.instances < 1 or args.seconds <= 0:
        p.error("--instances >= 1 and --seconds > 0")
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
