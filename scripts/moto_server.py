"""moto server that handles one request at a time (started by scripts/moto).

DynamoDB applies each conditional write atomically. moto's threaded server does not: the
condition check of one request can interleave with another request's write, so two
compare-and-set writes against the same item can both succeed (seen in the rate-limit
concurrency test as lost updates between a PutItem and an UpdateItem). Serializing requests
restores DynamoDB's per-item atomicity; the emulator answers each request in a few
milliseconds, so tests do not notice the queue.

Usage: python moto_server.py HOST PORT
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

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
