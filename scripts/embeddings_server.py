#!/usr/bin/env python3
"""Local OpenAI-compatible embeddings server (SPEC §1), development and tests only.

Stands in for OpenAI's embeddings API on loopback, so core-api's real HTTP client, its
`openai` resilience policy and its degradation path (SPEC §10) are exercised locally. The
model is real: WordLlama `l2_supercat` at 256 dimensions, shipped inside the PyPI wheel
`wordllama` (pinned in scripts/requirements.txt); nothing is downloaded at run time. Why this
model and this server: docs/embeddings.md.

Endpoints (a subset of OpenAI's, same shapes):

  POST /v1/embeddings  {"model", "input": str | [str], "dimensions"?, "encoding_format"?, "user"?}
                       -> 200 {"object": "list",
                               "data": [{"object": "embedding", "index": i, "embedding": [...]}],
                               "model": <the requested model>,
                               "usage": {"prompt_tokens": n, "total_tokens": n}}
                       Vectors are L2-normalised float32 (cosine = dot product). `dimensions`
                       (1..256) keeps the first d components and normalises again (the model is
                       Matryoshka-trained, like OpenAI's text-embedding-3). `encoding_format`
                       "base64" gives the little-endian float32 bytes, base64-encoded, as
                       OpenAI does (the official Python SDK asks for it by default).
  GET  /v1/models      the one model served; GET /v1/models/<id> that model or 404.
  GET  /health         200 {"status": "ok", "model", "dimensions"}.

Errors use OpenAI's body, {"error": {"message", "type", "param", "code"}}: 400
`invalid_request_error` for a malformed body, a missing or wrongly typed field, an empty
string, more than 2048 inputs, an input over 8192 tokens or an unknown field; 404
`model_not_found` for another model; 404 for an unknown path; 405 for a wrong method; 411
without Content-Length; 413 for a body over 8 MiB. Each input is embedded on its own, so a
vector never depends on the other inputs of the batch, and the same input always gets the
same bits.

Usage: embeddings_server.py [--host 127.0.0.1] [--port 0] [--quiet]
When ready it prints one line on stdout, the OpenAI base URL (`http://HOST:PORT/v1`); with
port 0 the system picks a free port. SIGTERM or SIGINT stops it cleanly.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The tokenizer fallback of wordllama would reach the Hugging Face hub; never let it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

MODEL_ID = "wordllama-l2-supercat-256"
"""The model name clients send (KOSHA_EMBEDDINGS_MODEL) and the server echoes."""
NATIVE_DIMENSIONS = 256
MAX_INPUTS = 2048
"""OpenAI's limit on the number of inputs in one request."""
MAX_TOKENS_PER_INPUT = 8192
"""OpenAI's per-input limit for its text-embedding-3 models."""
MAX_BODY_BYTES = 8 * 1024 * 1024
DRAIN_BYTES = 64 * 1024 * 1024
"""A body over MAX_BODY_BYTES but at most this is read and dropped before the 413."""


class RequestError(Exception):
    """A request the server refuses, with OpenAI's error fields."""

    def __init__(
        self,
        status: HTTPStatus,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.error_type = error_type

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }


def bad(message: str, param: str | None = None, code: str | None = None) -> RequestError:
    return RequestError(HTTPStatus.BAD_REQUEST, message, param=param, code=code)


class Embedder:
    """WordLlama l2_supercat (256 dims) loaded from the installed wheel, offline.

    wordllama 0.4.0.post1 looks for its tokenizer under `<package>/tokenizer/` or
    `<cache_dir>/tokenizers/`, while the wheel ships it under `<package>/tokenizers/`; the
    cache dir given to it is a temporary directory holding a symlink to the wheel's copy, and
    `disable_download=True` makes a missing file an error instead of a download.
    """

    def __init__(self) -> None:
        import wordllama
        from wordllama import WordLlama

        package = Path(wordllama.__file__).resolve().parent
        self._cache = tempfile.TemporaryDirectory(prefix="kosha-wordllama-")
        os.symlink(package / "tokenizers", Path(self._cache.name) / "tokenizers")
        self._model = WordLlama.load(
            config="l2_supercat",
            dim=NATIVE_DIMENSIONS,
            cache_dir=self._cache.name,
            disable_download=True,
        )
        # One request at a time through the tokenizer and numpy: each takes well under a
        # millisecond for a query, and the Rust tokenizer's thread-safety is not documented.
        self._lock = threading.Lock()

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text (no special tokens, no padding, no truncation)."""
        with self._lock:
            return [self._model.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]

    def embed_ids(self, ids: list[list[int]], dimensions: int) -> np.ndarray:
        """Unit-length float32 vectors, one row per token-id list, `dimensions` wide.

        What `WordLlamaInference.embed` does for one text (its weights, its `avg_pool`), from
        ids tokenized once: each text is pooled alone, so padding never enters its vector.
        """
        model = self._model
        rows = []
        for row in ids:
            tokens = np.clip(np.asarray([row], dtype=np.int32), 0, model.embedding.shape[0] - 1)
            mask = np.ones(tokens.shape, dtype=np.float32)
            rows.append(model.avg_pool(model.embedding[tokens], mask)[0])
        matrix = np.asarray(rows, dtype=np.float32)[:, :dimensions]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        # Every non-empty text has at least one token, so a zero row cannot occur; guard anyway.
        return matrix / np.where(norms > 0, norms, 1.0).astype(np.float32)

    def reference(self, text: str) -> np.ndarray:
        """wordllama's own `embed` of one text, normalised (for the tests)."""
        with self._lock:
            vector = self._model.embed(text)[0]
        return vector / np.linalg.norm(vector)


def parse_request(body: bytes) -> dict[str, Any]:
    """Validates an embeddings request body; returns model, inputs, dimensions, encoding."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise bad(
            "We could not parse the JSON body of your request. The API expects a JSON payload."
        ) from None
    if not isinstance(payload, dict):
        raise bad("The request body must be a JSON object.")
    known = {"model", "input", "dimensions", "encoding_format", "user"}
    for key in payload:
        if key not in known:
            raise bad(f"Unrecognized request argument supplied: {key}", param=key)

    model = payload.get("model")
    if model is None:
        raise bad("you must provide a model parameter", param="model")
    if not isinstance(model, str):
        raise bad("'model' must be a string.", param="model")
    if model != MODEL_ID:
        raise RequestError(
            HTTPStatus.NOT_FOUND,
            f"The model `{model}` does not exist or you do not have access to it. "
            f"This server serves `{MODEL_ID}`.",
            param="model",
            code="model_not_found",
        )

    raw = payload.get("input")
    if raw is None:
        raise bad("'input' is a required property.", param="input")
    if isinstance(raw, str):
        inputs = [raw]
    elif isinstance(raw, list):
        if not raw:
            raise bad("'input' must not be an empty array.", param="input")
        if not all(isinstance(item, str) for item in raw):
            raise bad(
                "'input' must be a string or an array of strings "
                "(token-id arrays are not supported by this server).",
                param="input",
            )
        inputs = raw
    else:
        raise bad("'input' must be a string or an array of strings.", param="input")
    if len(inputs) > MAX_INPUTS:
        raise bad(f"'input' may hold at most {MAX_INPUTS} items; got {len(inputs)}.", param="input")
    for i, text in enumerate(inputs):
        if text == "":
            where = "'input'" if isinstance(raw, str) else f"'input[{i}]'"
            raise bad(f"{where} must not be an empty string.", param="input")

    dimensions = payload.get("dimensions", NATIVE_DIMENSIONS)
    if (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 1 <= dimensions <= NATIVE_DIMENSIONS
    ):
        raise bad(
            f"'dimensions' must be an integer from 1 to {NATIVE_DIMENSIONS} for {MODEL_ID}.",
            param="dimensions",
        )

    encoding = payload.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise bad("'encoding_format' must be 'float' or 'base64'.", param="encoding_format")

    user = payload.get("user")
    if user is not None and not isinstance(user, str):
        raise bad("'user' must be a string.", param="user")

    return {"model": model, "inputs": inputs, "dimensions": dimensions, "encoding": encoding}


def embeddings_response(embedder: Embedder, request: dict[str, Any]) -> dict[str, Any]:
    inputs: list[str] = request["inputs"]
    ids = embedder.tokenize(inputs)
    tokens = [len(row) for row in ids]
    for i, n in enumerate(tokens):
        if n > MAX_TOKENS_PER_INPUT:
            raise bad(
                f"This model's maximum context length is {MAX_TOKENS_PER_INPUT} tokens, "
                f"however input[{i}] has {n} tokens. Please reduce the length of the input.",
                param="input",
            )
    vectors = embedder.embed_ids(ids, request["dimensions"])
    data = []
    for index, vector in enumerate(vectors):
        if request["encoding"] == "base64":
            encoded: Any = base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        else:
            encoded = [float(x) for x in vector]
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    total = sum(tokens)
    return {
        "object": "list",
        "data": data,
        "model": request["model"],
        "usage": {"prompt_tokens": total, "total_tokens": total},
    }


def model_card() -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "wordllama"}


class Handler(BaseHTTPRequestHandler):
    """One HTTP/1.1 connection (keep-alive, so core-api's client pool reuses it)."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm on, the second waits for
    # the client's delayed ACK (about 40 ms per request on Linux).
    disable_nagle_algorithm = True
    server_version = "kosha-embeddings/1"
    embedder: Embedder
    quiet = False

    # -- plumbing ---------------------------------------------------------------------------
    def send_json(self, status: HTTPStatus, body: dict[str, Any], headers: dict | None = None):
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_error_body(self, err: RequestError, headers: dict | None = None) -> None:
        self.send_json(err.status, err.body(), headers)

    def not_found(self) -> None:
        self.send_error_body(
            RequestError(HTTPStatus.NOT_FOUND, f"Invalid URL ({self.command} {self.path})")
        )

    def method_not_allowed(self, allow: str) -> None:
        self.send_error_body(
            RequestError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"Method {self.command} is not allowed on {self.path}; use {allow}.",
            ),
            {"Allow": allow},
        )

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        if not self.quiet:
            sys.stderr.write(
                f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {self.address_string()} {format % args}\n"
            )

    def route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    # -- methods ----------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        path = self.route()
        if path == "/health":
            self.send_json(
                HTTPStatus.OK,
                {"status": "ok", "model": MODEL_ID, "dimensions": NATIVE_DIMENSIONS},
            )
        elif path == "/v1/models":
            self.send_json(HTTPStatus.OK, {"object": "list", "data": [model_card()]})
        elif path == f"/v1/models/{MODEL_ID}":
            self.send_json(HTTPStatus.OK, model_card())
        elif path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            self.send_error_body(
                RequestError(
                    HTTPStatus.NOT_FOUND,
                    f"The model `{name}` does not exist or you do not have access to it.",
                    param="model",
                    code="model_not_found",
                )
            )
        elif path == "/v1/embeddings":
            self.method_not_allowed("POST")
        else:
            self.not_found()

    def do_POST(self) -> None:  # noqa: N802
        path = self.route()
        if path in ("/health", "/v1/models"):
            self.discard_body()
            self.method_not_allowed("GET")
            return
        if path != "/v1/embeddings":
            self.discard_body()
            self.not_found()
            return
        try:
            body = self.read_body()
            response = embeddings_response(self.embedder, parse_request(body))
        except RequestError as err:
            self.send_error_body(err)
            return
        self.send_json(HTTPStatus.OK, response)

    def do_PUT(self) -> None:  # noqa: N802
        self.other_method()

    def do_PATCH(self) -> None:  # noqa: N802
        self.other_method()

    def do_DELETE(self) -> None:  # noqa: N802
        self.other_method()

    def other_method(self) -> None:
        self.discard_body()
        path = self.route()
        if path == "/v1/embeddings":
            self.method_not_allowed("POST")
        elif path in ("/health", "/v1/models"):
            self.method_not_allowed("GET")
        else:
            self.not_found()

    # -- bodies -----------------------------------------------------------------------------
    def content_length(self) -> int | None:
        raw = self.headers.get("Content-Length")
        if raw is None:
            return None
        try:
            n = int(raw)
        except ValueError:
            n = -1
        if n < 0:
            self.close_connection = True
            raise bad("Content-Length must be a non-negative integer.")
        return n

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise RequestError(
                HTTPStatus.LENGTH_REQUIRED, "Send the body with a Content-Length header."
            )
        n = self.content_length()
        if n is None:
            self.close_connection = True
            raise RequestError(
                HTTPStatus.LENGTH_REQUIRED, "Send the body with a Content-Length header."
            )
        if n > MAX_BODY_BYTES:
            # Read and drop a moderately large body, so the client (still sending) gets the
            # 413 instead of a reset; beyond DRAIN_BYTES, answer and close the connection.
            if n <= DRAIN_BYTES:
                self.drain(n)
            else:
                self.close_connection = True
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"The request body is {n} bytes; at most {MAX_BODY_BYTES} are accepted.",
            )
        return self.rfile.read(n)

    def drain(self, n: int) -> None:
        while n > 0:
            chunk = self.rfile.read(min(n, 1 << 16))
            if not chunk:
                break
            n -= len(chunk)

    def discard_body(self) -> None:
        try:
            n = self.content_length()
        except RequestError:
            return
        if n is None or n > DRAIN_BYTES:
            self.close_connection = True
            return
        self.drain(n)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # Restarting on the same port (scripts/lib/embeddings.sh does) must not wait for
    # TIME_WAIT sockets of the previous process.
    allow_reuse_address = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--quiet", action="store_true", help="no per-request log lines")
    args = parser.parse_args(argv)

    started = time.monotonic()
    Handler.embedder = Embedder()
    Handler.quiet = args.quiet
    server = Server((args.host, args.port), Handler)
    host, port = server.server_address[:2]
    shown_host = f"[{host}]" if ":" in host else host

    def stop(signum: int, _frame: Any) -> None:
        # shutdown() waits for serve_forever() to return, so it cannot run on its thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(
        f"embeddings server: {MODEL_ID} ({NATIVE_DIMENSIONS} dims) loaded in "
        f"{time.monotonic() - started:.1f} s; listening on {shown_host}:{port}\n"
    )
    print(f"http://{shown_host}:{port}/v1", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
