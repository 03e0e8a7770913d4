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

Environment: KOSHA_PROXY_LISTEN=127.0.0.1:PORT, KOSHA_PROXY_TARGET=HOST:PORT. Loopback only.
The proxy itself is scripts/lib/kosha_py/fault_proxy.py in its `pass` mode (the fleet
simulator switches the same one); standard library only.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from kosha_py.fault_proxy import FaultProxy  # noqa: E402


def address(name: str) -> tuple[str, int]:
    value = os.environ.get(name, "")
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        sys.exit(f"fault_proxy: {name} must be HOST:PORT")
    return host, int(port)


def main() -> None:
    listen, target = address("KOSHA_PROXY_LISTEN"), address("KOSHA_PROXY_TARGET")
    if listen[0] not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("fault_proxy: listens on loopback only")
    proxy = FaultProxy(target[1], target_host=target[0], host=listen[0], port=listen[1])
    asyncio.run(proxy.serve_forever())


if __name__ == "__main__":
    main()
