"""The local embeddings server (scripts/embeddings_server.py, SPEC §1): OpenAI's request and
response shapes, its error body, determinism, and that the model's similarities make sense on
the knowledge base's vocabulary. Starts its own server on a free loopback port.

Run: .dev/venv/bin/python -m pytest -q tests/embeddings
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "scripts" / "embeddings_server.py"
MODEL = "wordllama-l2-supercat-256"
DIMS = 256


def start_server(*extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--quiet", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=90)
    if not line or not line[0].startswith("http://"):
        proc.kill()
        raise AssertionError(f"server did not print its URL: {line!r} {proc.stderr.read()!r}")
    return proc, line[0].strip()


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    proc, url = start_server()
    yield url
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        yield c


def embed(client: httpx.Client, inputs, **extra) -> np.ndarray:
    r = client.post("/embeddings", json={"model": MODEL, "input": inputs, **extra})
    assert r.status_code == 200, r.text
    return np.array([d["embedding"] for d in r.json()["data"]], dtype=np.float64)


def assert_openai_error(r: httpx.Response, status: int, param: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] == param, error
    return error


# --- shapes ----------------------------------------------------------------------------------


def test_single_string_has_openais_shape(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": MODEL, "input": "how do I dispute a payment"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"object", "data", "model", "usage"}
    assert body["object"] == "list"
    assert body["model"] == MODEL
    [item] = body["data"]
    assert set(item) == {"object", "index", "embedding"}
    assert item["object"] == "embedding" and item["index"] == 0
    vector = np.array(item["embedding"])
    assert vector.shape == (DIMS,)
    assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
    usage = body["usage"]
    assert usage["prompt_tokens"] == usage["total_tokens"] > 0


def test_batch_keeps_order_and_each_vector_is_independent_of_the_batch(
    client: httpx.Client,
) -> None:
    texts = ["refund", "a much longer sentence about sanctions screening of payments", "fees"]
    r = client.post("/embeddings", json={"model": MODEL, "input": texts})
    assert r.status_code == 200
    data = r.json()["data"]
    assert [d["index"] for d in data] == [0, 1, 2]
    batch = np.array([d["embedding"] for d in data])
    for i, text in enumerate(texts):
        single = embed(client, text)[0]
        assert np.array_equal(single, batch[i]), text  # bit-for-bit, not just close
    assert not np.allclose(batch[0], batch[2])


def test_usage_counts_tokens_of_every_input(client: httpx.Client) -> None:
    def tokens(inputs) -> int:
        r = client.post("/embeddings", json={"model": MODEL, "input": inputs})
        return r.json()["usage"]["prompt_tokens"]

    assert tokens(["card", "card fraud"]) == tokens("card") + tokens("card fraud")
    assert tokens("card fraud report") > tokens("card")


def test_model_name_is_echoed(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": MODEL, "input": "x"})
    assert r.json()["model"] == MODEL


def test_same_input_same_bits_across_requests(client: httpx.Client) -> None:
    text = "someone used my card without asking"
    first = client.post("/embeddings", json={"model": MODEL, "input": text}).json()
    for _ in range(3):
        again = client.post("/embeddings", json={"model": MODEL, "input": text}).json()
        assert again["data"] == first["data"]


def test_same_input_same_bits_across_processes(client: httpx.Client) -> None:
    text = "chargeback reason codes"
    here = embed(client, text)
    proc, url = start_server()
    try:
        with httpx.Client(base_url=url, timeout=30) as other:
            assert np.array_equal(embed(other, text), here)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_dimensions_truncates_and_renormalises(client: httpx.Client) -> None:
    full = embed(client, "cash withdrawal limits")[0]
    short = embed(client, "cash withdrawal limits", dimensions=64)[0]
    assert short.shape == (64,)
    assert abs(np.linalg.norm(short) - 1.0) < 1e-5
    expected = full[:64] / np.linalg.norm(full[:64])
    assert np.allclose(short, expected, atol=1e-6)


def test_base64_encoding_is_little_endian_float32(client: httpx.Client) -> None:
    text = "foreign transaction fee"
    floats = embed(client, text)[0]
    r = client.post(
        "/embeddings", json={"model": MODEL, "input": text, "encoding_format": "base64"}
    )
    assert r.status_code == 200
    raw = base64.b64decode(r.json()["data"][0]["embedding"])
    decoded = np.frombuffer(raw, dtype="<f4")
    assert decoded.shape == (DIMS,)
    assert np.array_equal(decoded.astype(np.float64), floats)


def test_optional_user_field_is_accepted(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": MODEL, "input": "x", "user": "agent-7"})
    assert r.status_code == 200


def test_keeps_the_connection_alive(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        for _ in range(3):
            r = c.post("/embeddings", json={"model": MODEL, "input": "x"})
            assert r.status_code == 200
            assert r.headers.get("connection", "").lower() != "close"
            assert r.http_version == "HTTP/1.1"


def test_health_and_models(client: httpx.Client, base_url: str) -> None:
    root = base_url.removesuffix("/v1")
    r = httpx.get(f"{root}/health", timeout=10)
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "model": MODEL, "dimensions": DIMS}
    models = client.get("/models").json()
    assert [m["id"] for m in models["data"]] == [MODEL]
    assert client.get(f"/models/{MODEL}").json()["id"] == MODEL
    assert_openai_error(client.get("/models/text-embedding-3-small"), 404)


# --- semantics -------------------------------------------------------------------------------


def cosine(client: httpx.Client, a: str, b: str) -> float:
    va, vb = embed(client, [a, b])
    return float(va @ vb)


@pytest.mark.parametrize(
    ("query", "related", "unrelated"),
    [
        (
            "someone used my card without asking",
            "If you see a card payment you did not make, freeze the card in the app immediately "
            "and report it as fraud.",
            "Currency conversion uses the card scheme's exchange rate on the day the "
            "transaction is processed.",
        ),
        (
            "how long until my money comes back from the shop",
            "Refunds usually appear within five business days, although some merchants take "
            "up to ten.",
            "Sanctions screening compares names, dates of birth and countries with entries on "
            "official watch lists.",
        ),
        (
            "my name matches someone on a watchlist",
            "A potential match means a name is similar to a listed entry; it does not mean the "
            "person is sanctioned.",
            "Contactless payments have a per-tap limit, after which you must insert the card "
            "and enter your PIN.",
        ),
        (
            "cost of taking cash out of a machine",
            "Cash withdrawals are free up to 200 EUR per month, after which a fee of 2% applies.",
            "A dispute is a formal request to investigate a card transaction that you believe "
            "is wrong.",
        ),
    ],
)
def test_related_sentences_score_higher_than_unrelated(
    client: httpx.Client, query: str, related: str, unrelated: str
) -> None:
    assert cosine(client, query, related) > cosine(client, query, unrelated) + 0.05


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": 5, "input": "x"}, "model"),
        ({"model": MODEL}, "input"),
        ({"model": MODEL, "input": ""}, "input"),
        ({"model": MODEL, "input": []}, "input"),
        ({"model": MODEL, "input": ["ok", ""]}, "input"),
        ({"model": MODEL, "input": 42}, "input"),
        ({"model": MODEL, "input": None}, "input"),
        ({"model": MODEL, "input": ["ok", 3]}, "input"),
        ({"model": MODEL, "input": [1, 2, 3]}, "input"),
        ({"model": MODEL, "input": [[1, 2]]}, "input"),
        ({"model": MODEL, "input": {"text": "x"}}, "input"),
        ({"model": MODEL, "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": 257}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": "64"}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": 64.5}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": True}, "dimensions"),
        ({"model": MODEL, "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": MODEL, "input": "x", "user": 7}, "user"),
        ({"model": MODEL, "input": "x", "temperature": 0}, "temperature"),
    ],
)
def test_bad_requests_get_400_with_openais_error_body(
    client: httpx.Client, body: dict, param: str
) -> None:
    assert_openai_error(client.post("/embeddings", json=body), 400, param)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"text"', b"", b"\xff\xfe"])
def test_malformed_bodies_get_400(client: httpx.Client, raw: bytes) -> None:
    r = client.post("/embeddings", content=raw, headers={"content-type": "application/json"})
    assert_openai_error(r, 400)


def test_unknown_model_gets_404_model_not_found(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": "text-embedding-3-small", "input": "x"})
    error = assert_openai_error(r, 404, "model")
    assert error["code"] == "model_not_found"
    assert "text-embedding-3-small" in error["message"]


def test_too_many_inputs_get_400(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": MODEL, "input": ["x"] * 2049})
    assert_openai_error(r, 400, "input")
    assert client.post("/embeddings", json={"model": MODEL, "input": ["x"] * 2048}).status_code == 200


def test_input_over_the_token_limit_gets_400(client: httpx.Client) -> None:
    r = client.post("/embeddings", json={"model": MODEL, "input": ["ok", "card " * 9000]})
    error = assert_openai_error(r, 400, "input")
    assert "input[1]" in error["message"]


def test_body_over_8_mib_gets_413_and_the_server_keeps_serving(
    client: httpx.Client, base_url: str
) -> None:
    big = json.dumps({"model": MODEL, "input": "x" * (8 * 1024 * 1024 + 1)}).encode()
    with httpx.Client(base_url=base_url, timeout=30) as c:
        r = c.post("/embeddings", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert set(r.json()["error"]) == {"message", "type", "param", "code"}
    assert client.post("/embeddings", json={"model": MODEL, "input": "x"}).status_code == 200


def test_unknown_path_and_wrong_method(client: httpx.Client) -> None:
    assert_openai_error(client.post("/completions", json={}), 404)
    r = client.get("/embeddings")
    assert_openai_error(r, 405)
    assert r.headers["allow"] == "POST"
    assert_openai_error(client.delete("/embeddings"), 405)


def test_missing_content_length_gets_411(base_url: str) -> None:
    host, port = base_url.removeprefix("http://").removesuffix("/v1").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n")
        head = s.recv(4096).decode()
    assert head.startswith("HTTP/1.1 411"), head


# --- concurrency -----------------------------------------------------------------------------


def test_concurrent_requests_all_answer_the_same(base_url: str) -> None:
    text = "deferred sanctions screening"
    with httpx.Client(base_url=base_url, timeout=30) as c:
        expected = c.post("/embeddings", json={"model": MODEL, "input": text}).json()["data"]
    failures: list[str] = []

    def worker() -> None:
        with httpx.Client(base_url=base_url, timeout=30) as c:
            for _ in range(10):
                r = c.post("/embeddings", json={"model": MODEL, "input": text})
                if r.status_code != 200 or r.json()["data"] != expected:
                    failures.append(r.text[:200])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures


# --- the start/stop helper (scripts/embeddings, scripts/lib/embeddings.sh) -------------------


def run_helper(dev_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KOSHA_DEV_DIR": str(dev_dir)}
    return subprocess.run(
        [str(ROOT / "scripts" / "embeddings"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".dev" / "venv").resolve(),
    reason="the helper runs the server from .dev/venv; run these tests with that venv's python",
)
def test_helper_starts_stops_and_comes_back_on_the_same_port(tmp_path: Path) -> None:
    started = run_helper(tmp_path, "start")
    try:
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip().splitlines()[-1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert httpx.get(url.removesuffix("/v1") + "/health", timeout=10).status_code == 200
        again = run_helper(tmp_path, "start")  # idempotent: the running server's URL
        assert again.stdout.strip().splitlines()[-1] == url
        status = run_helper(tmp_path, "status")
        assert status.returncode == 0 and status.stdout.startswith(f"running {url} pid ")
        env = run_helper(tmp_path, "env").stdout
        assert f"KOSHA_EMBEDDINGS_URL={url}\n" in env
        assert f"KOSHA_EMBEDDINGS_MODEL={MODEL}\n" in env
        assert f"KOSHA_EMBEDDINGS_DIMENSIONS={DIMS}\n" in env

        assert run_helper(tmp_path, "stop").returncode == 0
        assert run_helper(tmp_path, "status").returncode == 3
        with pytest.raises(httpx.TransportError):
            httpx.get(url.removesuffix("/v1") + "/health", timeout=2)
        assert run_helper(tmp_path, "stop").returncode == 0  # stopping twice is fine

        restarted = run_helper(tmp_path, "start")
        assert restarted.returncode == 0, restarted.stderr
        assert restarted.stdout.strip().splitlines()[-1] == url  # same port again
    finally:
        run_helper(tmp_path, "stop")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (tmp_path / "pids" / "embeddings.pid").exists():
        time.sleep(0.1)
    assert not (tmp_path / "pids" / "embeddings.pid").exists()


def test_no_nagle_stall_between_headers_and_body(base_url: str) -> None:
    # With Nagle's algorithm on, every answer waited ~40 ms for the client's delayed ACK.
    with httpx.Client(base_url=base_url, timeout=30) as c:
        times = []
        for _ in range(21):
            started = time.perf_counter()
            assert c.post("/embeddings", json={"model": MODEL, "input": "fees"}).status_code == 200
            times.append(time.perf_counter() - started)
    assert sorted(times)[10] < 0.035, times


def test_vectors_are_wordllamas_own_embeddings_normalised() -> None:
    # The server tokenizes once and pools with wordllama's weights and avg_pool; this pins it
    # to what wordllama's public embed() gives for the same text.
    sys.path.insert(0, str(ROOT / "scripts"))
    import embeddings_server

    embedder = embeddings_server.Embedder()
    texts = ["x", "someone used my card without asking", "Chargeback time limits\n\nA chargeback " * 20]
    ours = embedder.embed_ids(embedder.tokenize(texts), DIMS)
    for text, vector in zip(texts, ours):
        assert np.allclose(vector, embedder.reference(text), atol=1e-6), text
