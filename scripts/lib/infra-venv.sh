# shellcheck shell=bash
# Sourced by scripts/build-lambdas, scripts/deploy, scripts/bench-lambda and tests/infra/run.sh.
# Provides the scripts' venv (.dev/infra-venv, apart from the stack's .dev/venv so aws-sam-cli's pins never clash with moto's or mcp's) with the pinned tools from infra/requirements.txt.
#
#   infra_venv_ensure NAME...   install the pinned NAMEs (e.g. cargo-lambda cfn-lint) when the
#                               venv lacks that exact pin; prepends the venv to PATH.
# Requires REPO_ROOT to be set by the caller.

infra_venv_ensure() {
    local venv="$REPO_ROOT/.dev/infra-venv" reqs="$REPO_ROOT/infra/requirements.txt"
    local stamps="$venv/.pins" missing=() name pin
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "infra: creating $venv" >&2
        python3 -m venv "$venv"
    fi
    mkdir -p "$stamps"
    for name in "$@"; do
        pin=$(grep -i -E "^${name}==" "$reqs" | head -n1 || true)
        if [[ -z "$pin" ]]; then
            echo "infra: $name is not pinned in infra/requirements.txt" >&2
            return 1
        fi
        [[ -e "$stamps/$pin" ]] || missing+=("$pin")
    done
    if ((${#missing[@]})); then
        echo "infra: installing ${missing[*]} into .dev/infra-venv" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}" >&2
        for pin in "${missing[@]}"; do touch "$stamps/$pin"; done
    fi
    export PATH="$venv/bin:$PATH"
    export SAM_CLI_TELEMETRY=0
}
