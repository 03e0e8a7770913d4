"""After the rest of the end-to-end suite (marked `after_all`: conftest.py runs it last, whatever
the files' names): no captured log line of any function holds a token, a key, a signature or a
database password (SPEC §12: secrets and tokens are never logged). Scans every file in the
stack's logs/ directory for the stack's own secrets (stack.env) and for anything shaped like
one."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.after_all

# A JWT (header.payload.signature), a chaos header's HMAC, a bearer credential.
SHAPES = {
    "jwt": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
    "chaos signature": re.compile(r"sig=[0-9a-f]{64}"),
    "bearer credential": re.compile(r"[Bb]earer [A-Za-z0-9._~+/=-]{20,}"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
}

# stack.env entries whose values are secrets.
SECRET_KEYS = ("KOSHA_AGENT_TOKEN", "KOSHA_OPERATOR_TOKEN", "KOSHA_TESTER_TOKEN", "KOSHA_CHAOS_KEY",
               "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "KOSHA_OPENAI_API_KEY")


def secrets_of(stack: dict[str, str]) -> dict[str, str]:
    # The local issuer's machine-client secrets too (issue #31: KOSHA_M2M_<NAME>_CLIENT_SECRET).
    keys = [*SECRET_KEYS, *(k for k in stack if k.startswith("KOSHA_M2M_") and k.endswith("_CLIENT_SECRET"))]
    found = {k: stack[k] for k in keys if len(stack.get(k, "")) >= 12}
    for name, value in list(found.items()):
        if value.count(".") == 2:  # a JWT's signature alone is a secret too
            found[f"{name} signature"] = value.rsplit(".", 1)[1]
    password = urlsplit(stack.get("DATABASE_URL", "")).password
    if password and len(password) >= 4:
        found["database password"] = password
    return found


def test_no_log_line_of_any_function_holds_a_secret(stack):
    logs = Path(stack["KOSHA_DEV_DIR"]) / "logs"
    files = sorted(p for p in logs.glob("*.log") if p.is_file())
    assert files, f"no logs in {logs}"
    known = secrets_of(stack)
    leaks = []
    scanned = 0
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            scanned += 1
            for name, value in known.items():
                if value in line:
                    leaks.append(f"{path.name}:{number}: {name}")
            for name, shape in SHAPES.items():
                if shape.search(line):
                    leaks.append(f"{path.name}:{number}: {name}")
    assert scanned > 100, f"only {scanned} lines captured: is logging on?"
    assert not leaks, "secrets in logs:\n" + "\n".join(leaks[:20])
