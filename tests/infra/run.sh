#!/usr/bin/env bash
# Infra tests (issue 6), one entry for scripts/test: cfn-lint, sam validate --lint (offline),
# the project's template checker and the event-fixture tests. Installs its pinned tools into
# .dev/infra-venv. Prints "N passed, N failed" last; exits non-zero when anything failed.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO_ROOT"
# shellcheck source=../../scripts/lib/infra-venv.sh
source scripts/lib/infra-venv.sh
infra_venv_ensure cfn-lint aws-sam-cli pytest PyYAML
export AWS_EC2_METADATA_DISABLED=true

passed=0
failed=0
step() { # step NAME CMD... : runs CMD, counts one pass or fail
    local name="$1"
    shift
    echo "== $name"
    if "$@"; then
        echo "ok: $name"
        passed=$((passed + 1))
    else
        echo "FAILED: $name"
        failed=$((failed + 1))
    fi
}
expect_failure() { ! "$@" >/dev/null 2>&1; }

# Warnings fail too: W1001 (a Ref to a resource whose condition may be false, such as the
# UserPoolId-only McpPublicClient outside !If HasUserPool) is only a warning.
step "cfn-lint infra/template.yaml (errors and warnings)" \
    cfn-lint --non-zero-exit-code warning infra/template.yaml
step "cfn-lint rejects the planted bad template (linter is live)" \
    expect_failure cfn-lint --non-zero-exit-code error tests/infra/fixtures/bad_template.yaml
step "sam validate --lint (offline)" \
    sam validate --lint --region us-east-1 --template-file infra/template.yaml
step "check_template.py infra/template.yaml" \
    python tests/infra/check_template.py infra/template.yaml

# The HTTP fixtures through a real lambda_http binary (benches/hello-lambda, debug build) under
# the Runtime API emulator: proves they deserialize as Lambda would deliver them.
lambda_http_accepts() {
    local target_dir="${CARGO_TARGET_DIR:-$REPO_ROOT/target}" fixture
    cargo build --quiet -p hello-lambda || return 1
    for fixture in function-url-post-mcp function-url-get-healthz http-api-post-mcp; do
        python benches/lambda_init.py --runs 1 --expect-status 200 \
            --event "infra/events/$fixture.json" "hello-lambda=$target_dir/debug/hello-lambda" ||
            return 1
    done
}
step "HTTP event fixtures accepted by lambda_http (hello-lambda)" lambda_http_accepts

echo "== pytest tests/infra"
set +e
out=$(python -m pytest -q -p no:cacheprovider tests/infra 2>&1)
rc=$?
set -e
echo "$out"
summary=$(echo "$out" | tail -n1)
p=$(grep -oE '[0-9]+ passed' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
f=$(grep -oE '[0-9]+ (failed|errors?)' <<<"$summary" | awk '{s += $1} END {print s + 0}' || true)
passed=$((passed + p))
failed=$((failed + ${f:-0}))
if ((rc != 0 && ${f:-0} == 0)); then failed=$((failed + 1)); fi

echo "infra: $passed passed, $failed failed"
((failed == 0))
