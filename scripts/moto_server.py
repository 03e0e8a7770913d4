"""moto server that handles one request at a time (started by scripts/moto).

DynamoDB applies each conditional write atomically. moto's threaded server does not: the
condition check of one request can interleave with another request's write, so two
compare-and-set writes against the same item can both succeed (seen in the rate-limit
concurrency test as lost updates between a PutItem and an UpdateItem). Serializing requests
restores DynamoDB's per-item atomicity; the emulator answers each request in a few
milliseconds, so tests do not notice the queue.

Connections: werkzeug's server closes every connection after its response (its HTTP/1.1
keep-alive is off by design), so each AWS SDK call opens a new TCP connection, which a client
of AWS itself would not (it keeps a pool). With KOSHA_MOTO_KEEP_ALIVE=1 the same serialized
app is served by waitress instead, which keeps HTTP/1.1 connections open; scripts/bench-load
measures the gateway both ways (docs/benchmarks.md).

Usage: [KOSHA_MOTO_KEEP_ALIVE=1] python moto_server.py HOST PORT
"""

import os
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # Materialize the body inside the lock: the work may happen while iterating.
            return list(app(environ, start_response))

    if os.environ.get("KOSHA_MOTO_KEEP_ALIVE") == "1":
        from waitress import serve

        # Threads only read and write sockets: the lock above still serializes the work.
        serve(serialized, host=host, port=port, threads=8, connection_limit=256, _quiet=True)
    else:
        run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
