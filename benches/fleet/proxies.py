"""The fleet simulator's DynamoDB proxy (issue 26), asyncio, loopback only.

- `DynamoProxy`: in front of the AWS emulator's DynamoDB endpoint (the gateways'
  AWS_ENDPOINT_URL_DYNAMODB). Each HTTP request takes a round trip of `delay_s` (what a Lambda
  sees in-region, default 5 ms): it goes to the emulator at once and is answered `delay_s`
  after it arrived, or when the emulator answers if that is later (the emulator's own time,
  2-5 ms here, counts toward the round trip instead of adding to it, which made it 8-10 ms
  before 2026-12-04). It is counted by operation (`X-Amz-Target`) and item kind (the
  prefix of each key's `pk` before `#`: `rl` bucket, `breaker` override, `trip`, ...). One
  upstream connection per request (the emulator closes after each answer); the client's
  connection is kept alive, as DynamoDB does. Bucket writes are also counted by client id
  (#28). Each fleet trip written (`UpdateItem` on
  `trip#<breaker>` answered 200) is kept with its time, breaker and instance id (#27).

core-api's switch (`pass`, `hang`, `refuse`) is the stack's own fault proxy,
`kosha_py.fault_proxy.FaultProxy` (scripts/lib).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

CHUNK = 64 * 1024

# What each DynamoDB operation does to an item, for the summary.
WRITES = ("UpdateItem", "PutItem", "DeleteItem")


def item_kinds(operation: str, body: bytes) -> list[str]:
    """The kinds of item a DynamoDB request touches: key prefixes (`rl`, `breaker`, ...)."""
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        return ["?"]
    keys = []
    if operation == "BatchGetItem":
        for spec in doc.get("RequestItems", {}).values():
            keys.extend(spec.get("Keys", []))
    elif operation == "BatchWriteItem":
        for reqs in doc.get("RequestItems", {}).values():
            for r in reqs:
                inner = r.get("PutRequest", {}).get("Item") or r.get("DeleteRequest", {}).get("Key")
                if inner:
                    keys.append(inner)
    else:
        key = doc.get("Key") or doc.get("Item")
        if key:
            keys.append(key)
    kinds = sorted({k.get("pk", {}).get("S", "").split("#", 1)[0] for k in keys})
    return kinds or ["-"]


def bucket_of(body: bytes) -> str:
    """The client id of a bucket write (`rl#<client_id>`)."""
    doc = json.loads(body)
    key = doc.get("Key") or doc.get("Item") or {}
    return key.get("pk", {}).get("S", "").split("#", 1)[-1]


def trip_of(body: bytes) -> tuple[str, str]:
    """(breaker, instance id) of a trip write: `SET instances.#me` or `SET instances = :m`."""
    doc = json.loads(body)
    breaker = doc["Key"]["pk"]["S"].split("#", 1)[1]
    me = doc.get("ExpressionAttributeNames", {}).get("#me")
    if me is None:
        me = next(iter(doc.get("ExpressionAttributeValues", {}).get(":m", {}).get("M", {})), "?")
    return breaker, me


class DynamoProxy:
    """Delays and counts DynamoDB requests (module doc)."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.counts: Counter[tuple[str, str]] = Counter()
        # (monotonic end, seconds) of each override read: "one read" in the verdicts.
        self.override_reads: list[tuple[float, float]] = []
        # Every request's round trip here (s), in order.
        self.round_trips: list[float] = []
        # (monotonic end, breaker, instance id) of each trip written.
        self.trip_writes: list[tuple[float, str, str]] = []
        # Bucket writes (`UpdateItem`/`PutItem` on `rl#<client_id>`) by client id (#28).
        self.bucket_writes: Counter[str] = Counter()
        # Of those, the ones DynamoDB refused (a failed condition: a stale cache or a race).
        self.bucket_write_failures: Counter[str] = Counter()
        # Consistent reads of `rl#<client_id>` (`GetItem`) by client id: an instance without
        # the item cached, or whose cache other instances' writes keep making stale, reads
        # it before writing (a read request unit instead of a failed write's write unit).
        self.bucket_reads: Counter[str] = Counter()
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server:
            self._server.close()

    def snapshot(self) -> Counter[tuple[str, str]]:
        return Counter(self.counts)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                operation = headers.get("x-amz-target", "?").rsplit(".", 1)[-1]
                kinds = item_kinds(operation, body)
                for kind in kinds:
                    self.counts[(operation, kind)] += 1
                bucket = bucket_of(body) if kinds == ["rl"] and operation in ("UpdateItem", "PutItem") else None
                if bucket is not None:
                    self.bucket_writes[bucket] += 1
                if kinds == ["rl"] and operation == "GetItem":
                    self.bucket_reads[bucket_of(body)] += 1
                started = time.monotonic()
                answer = await self._forward(head, body)
                await asyncio.sleep(max(0.0, self.delay_s - (time.monotonic() - started)))
                self.round_trips.append(time.monotonic() - started)
                writer.write(answer)
                await writer.drain()
                if bucket is not None and not answer.startswith(b"HTTP/1.1 200"):
                    self.bucket_write_failures[bucket] += 1
                if operation == "BatchGetItem" and "breaker" in kinds:
                    now = time.monotonic()
                    self.override_reads.append((now, now - started))
                if operation == "UpdateItem" and kinds == ["trip"] and answer.startswith(b"HTTP/1.1 200"):
                    self.trip_writes.append((time.monotonic(), *trip_of(body)))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _forward(self, head: bytes, body: bytes) -> bytes:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        try:
            up_w.write(head + body)
            await up_w.drain()
            resp_head = await up_r.readuntil(b"\r\n\r\n")
            lines = resp_head.decode("latin-1").split("\r\n")
            length = None
            kept = [lines[0]]
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if not name:
                    continue
                low = name.strip().lower()
                if low == "content-length":
                    length = int(value.strip())
                if low == "connection":
                    continue  # the client keeps its connection to us alive
                kept.append(line)
            resp_body = await (up_r.readexactly(length) if length is not None else up_r.read())
            if length is None:
                kept.append(f"Content-Length: {len(resp_body)}")
            return ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1") + resp_body
        finally:
            up_w.close()
