"""moto server that handles one request at a time per AWS service (started by scripts/moto).

DynamoDB applies each conditional write atomically. moto's threaded server does not: the
condition check of one request can interleave with another request's write, so two
compare-and-set writes against the same item can both succeed (seen in the rate-limit
concurrency test as lost updates between a PutItem and an UpdateItem). Serializing a
service's requests restores DynamoDB's per-item atomicity; the emulator answers each request
in a few milliseconds, so tests do not notice the queue.

Each service has its own lock (issue #30): with one lock for all, an SQS long poll (the
screening-worker's ReceiveMessage waits up to 20 s) held every DynamoDB call behind it, so
the gateway's rate limiter failed open locally. The service is the one the request is signed
for (the SigV4 credential scope), else the `X-Amz-Target` prefix.

Connections: werkzeug's server closes every connection after its response (its HTTP/1.1
keep-alive is off by design), so each AWS SDK call opens a new TCP connection, which a client
of AWS itself would not (it keeps a pool). With KOSHA_MOTO_KEEP_ALIVE=1 the same serialized
app is served by waitress instead, which keeps HTTP/1.1 connections open; scripts/bench-load
measures the gateway both ways (docs/benchmarks.md).

Usage: [KOSHA_MOTO_KEEP_ALIVE=1] python moto_server.py HOST PORT
"""

import os
import re
import sys
import threading
from collections import defaultdict

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([a-z0-9-]+)/aws4_request")


def service_of(environ) -> str:
    """The AWS service a request is for: `dynamodb`, `sqs`, `secretsmanager`, … or `other`."""
    scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if scope:
        return scope.group(1)
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        return target.split(".", 1)[0].split("_", 1)[0].lower()
    return "other"


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    guard = threading.Lock()
    locks = defaultdict(threading.Lock)

    def serialized(environ, start_response):
        with guard:
            lock = locks[service_of(environ)]
        with lock:
            # Materialize the body inside the lock: the work may happen while iterating.
            return list(app(environ, start_response))

    if os.environ.get("KOSHA_MOTO_KEEP_ALIVE") == "1":
        from waitress import serve

        # Threads only read and write sockets: the locks above still serialize each service.
        serve(serialized, host=host, port=port, threads=8, connection_limit=256, _quiet=True)
    else:
        run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
