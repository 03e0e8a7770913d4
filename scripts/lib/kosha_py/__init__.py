"""Python helpers shared by the end-to-end tests (tests/e2e), the scripts (scripts/*.py) and
the benchmarks (benches/): one copy of each, where there were several (issue 42).

- `stats`: `percentile`, the one rounding rule every figure is computed with.
- `poll`: `free_port`, `wait_until` (and `await_until` for async code), `wait_port`.
- `stack`: the running stack's tools: `dev()` (scripts/dev), `ops()` (kosha-ops), `sign()`
  (a signed chaos header, SPEC §9).

Callers put this directory's parent (scripts/lib) on `sys.path`: tests/e2e/conftest.py does it
for the tests, each script and benchmark in its first lines. Standard library only, so the
system `python3` and the project's venv can both import it.
"""

from kosha_py.poll import await_until, free_port, wait_port, wait_until
from kosha_py.stack import child_env, dev, ops, sign
from kosha_py.stats import percentile

__all__ = ["await_until", "child_env", "dev", "free_port", "ops", "percentile", "sign", "wait_port",
           "wait_until"]
