# Shared helpers for scripts/dev and scripts/test. Source it; do not run it.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export ROOT
DEV_DIR="${KOSHA_DEV_DIR:-$ROOT/.dev}"
VENV="$ROOT/.dev/venv"
export AWS_EC2_METADATA_DISABLED=true

log() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The Python venv with the pinned client packages; reinstalled only when requirements change.
ensure_venv() {
  local req="$ROOT/scripts/requirements.txt" stamp="$VENV/.requirements.sha256" want
  want="$(sha256sum "$req" | cut -d' ' -f1)"
  if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  log "installing Python packages into .dev/venv"
  mkdir -p "$ROOT/.dev"
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
}

# The TypeScript clients (tests/ts: the official MCP TypeScript SDK and conformance suite),
# installed from the npm registry with `npm ci` into tests/ts/node_modules (git-ignored);
# reinstalled only when tests/ts/package-lock.json or the Node version changes. No package
# there runs an install script (--ignore-scripts), so nothing is downloaded but the tarballs.
TS_DIR="$ROOT/tests/ts"
ensure_node_modules() {
  local stamp="$TS_DIR/node_modules/.kosha-lock.sha256" want
  command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed for tests/ts" >&2; return 1; }
  want="$(cat "$TS_DIR/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  log "installing the TypeScript clients into tests/ts/node_modules (npm ci)"
  (cd "$TS_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || return 1
  echo "$want" > "$stamp"
}

# Debian's Chromium for the browser test (tests/ts/browser, driven by playwright-core, which
# downloads no browser): sets CHROMIUM to KOSHA_CHROMIUM, or to `chromium` on PATH, installed
# from Debian's packages (apt-get) when absent.
ensure_chromium() {
  CHROMIUM="${KOSHA_CHROMIUM:-$(command -v chromium || true)}"
  if [[ -z "$CHROMIUM" ]]; then
    log "installing Chromium (Debian package chromium)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || return 1
    CHROMIUM="$(command -v chromium)"
  fi
  [[ -x "$CHROMIUM" ]] || { echo "no Chromium at ${CHROMIUM:-(none)}: install Debian's chromium or set KOSHA_CHROMIUM" >&2; return 1; }
}

# A free TCP port on loopback.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits until URL answers 2xx, for at most $2 seconds (wall clock, however slow each try).
wait_http() {
  local url="$1" end=$((SECONDS + ${2:-30}))
  while ((SECONDS < end)); do
    if curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# Waits until 127.0.0.1:PORT accepts a TCP connection, for at most $2 seconds.
wait_tcp() {
  local port="$1" end=$((SECONDS + ${2:-30}))
  while ((SECONDS < end)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# Makes sure PostgreSQL answers at $1 (a postgres:// URL); starts the machine's cluster, or
# installs it from Debian's packages, when the URL is local and nothing answers.
ensure_postgres() {
  local url="$1" admin
  admin="$(admin_url "$url")"
  if psql "$admin" -tAc 'select 1' >/dev/null 2>&1; then return 0; fi
  case "$url" in
    *@127.0.0.1*|*@localhost*|*@/*) ;;
    *) die "PostgreSQL at DATABASE_URL does not answer" ;;
  esac
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    log "installing PostgreSQL (Debian packages)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  local ver
  ver="$(ls /etc/postgresql | sort -n | tail -1)"
  log "starting PostgreSQL $ver"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  local i
  for ((i = 0; i < 100; i++)); do
    psql "$admin" -tAc 'select 1' >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "PostgreSQL did not start"
}

# The same server's `postgres` database (for CREATE/DROP DATABASE).
admin_url() { printf '%s' "${1%/*}/postgres"; }
db_name() { local u="${1##*/}"; printf '%s' "${u%%\?*}"; }

# Creates the database named in URL $1 unless it exists.
ensure_database() {
  local url="$1" admin name
  admin="$(admin_url "$url")"; name="$(db_name "$url")"
  if [[ -z "$(psql "$admin" -tAc "select 1 from pg_database where datname = '$name'")" ]]; then
    log "creating database $name"
    psql "$admin" -qc "create database \"$name\"" >/dev/null
  fi
}

drop_database() {
  local url="$1"
  psql "$(admin_url "$url")" -qc "drop database if exists \"$(db_name "$url")\" with (force)" >/dev/null 2>&1 || true
}

cargo_target() { printf '%s' "${CARGO_TARGET_DIR:-$ROOT/target}"; }
