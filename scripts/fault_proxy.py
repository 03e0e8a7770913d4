#!/usr/bin/env python3
"""A TCP pass-through in front of one dependency of the local stack (issue 14: one outage at a
time). `scripts/dev stop NAME` kills it, so that dependency alone is down for the functions:
new connections are refused and open ones are cut, as when the real service goes away;
`scripts/dev start NAME` starts it again on the same port.

The stack runs one per switch (scripts/lib/stack.sh `start_proxies`): `dynamodb`, `sqs` and
`secretsmanager` in front of the AWS emulator (the functions reach them through the SDKs'
per-service endpoints AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS and
AWS_ENDPOINT_URL_SECRETS_MANAGER), and `postgres` in front of PostgreSQL for core-api's
DATABASE_URL (the machine's cluster itself is never stopped).

Environment: KOSHA_PROXY_LISTEN=127.0.0.1:PORT, KOSHA_PROXY_TARGET=HOST:PORT. Standard
library only; bytes are copied unchanged in both directions, one upstream connection per
client connection. Loopback only.
"""

from __future__ import annotations

import asyncio
import os
import sys

CHUNK = 64 * 1024


def address(name: str) -> tuple[str, int]:
    value = os.environ.get(name, "")
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        sys.exit(f"fault_proxy: {name} must be HOST:PORT")
    return host, int(port)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies until EOF or an error on either side, then closes the writing side."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*target)
        except OSError:
            client_w.close()  # the dependency behind us is down too: cut the client
            return
        await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))

    server = await asyncio.start_server(handle, *listen, reuse_address=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    listen, target = address("KOSHA_PROXY_LISTEN"), address("KOSHA_PROXY_TARGET")
    if listen[0] not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("fault_proxy: listens on loopback only")
    asyncio.run(serve(listen, target))


if __name__ == "__main__":
    main()
