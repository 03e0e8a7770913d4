# Starting and stopping the local stack (SPEC §2). Source after common.sh.
# shellcheck shell=bash

# Starts one function binary in local mode in the background; records its PID.
#   start_fn NAME PORT [ENV=VALUE ...]
start_fn() {
  local name="$1" port="$2"; shift 2
  local bin
  bin="$(cargo_target)/debug/$name"
  [[ -x "$bin" ]] || die "$bin is not built"
  mkdir -p "$DEV_DIR/pids" "$DEV_DIR/logs" "$DEV_DIR/cmd"
  printf '%s\n' "$port" "$@" > "$DEV_DIR/cmd/$name.args"
  env "$@" KOSHA_LISTEN="127.0.0.1:$port" RUST_LOG="${RUST_LOG:-info}" \
    setsid "$bin" >"$DEV_DIR/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$DEV_DIR/pids/$name.pid"
}

# Stops one recorded function: stop_fn NAME
stop_fn() {
  local f="$DEV_DIR/pids/$1.pid" pid i
  [[ -f "$f" ]] || die "$1 is not running"
  pid="$(cat "$f")"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

# Starts a function again with the port and environment it had at `up`: restart_fn NAME
restart_fn() {
  local name="$1" f="$DEV_DIR/cmd/$1.args" args
  [[ -f "$f" ]] || die "$name was never started by scripts/dev up"
  [[ ! -f "$DEV_DIR/pids/$name.pid" ]] || stop_fn "$name"
  mapfile -t args < "$f"
  start_fn "$name" "${args[@]}"
}

# Stops everything recorded under $DEV_DIR/pids (TERM, then KILL after 5 s), and the emulator.
stop_all() {
  local f pid i
  KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" stop >/dev/null 2>&1 || true
  [[ -d "$DEV_DIR/pids" ]] || return 0
  for f in "$DEV_DIR"/pids/*.pid; do
    [[ -e "$f" ]] || continue
    pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

# Prints each recorded process and whether it runs; returns 1 when any is down.
status_all() {
  local f pid name ok=0
  echo "aws-emulator: $(KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" status 2>/dev/null || echo stopped)"
  if ! compgen -G "$DEV_DIR/pids/*.pid" >/dev/null; then
    echo "stack: not running"; return 1
  fi
  for f in "$DEV_DIR"/pids/*.pid; do
    name="$(basename "$f" .pid)"; pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then echo "$name: running (pid $pid)"; else echo "$name: stopped"; ok=1; fi
  done
  return $ok
}

# Builds, migrates, starts every function, and writes $DEV_DIR/stack.env.
#   stack_up DATABASE_URL
stack_up() {
  local db_url="$1"
  stop_all
  mkdir -p "$DEV_DIR"
  ensure_postgres "$db_url"
  ensure_database "$db_url"
  log "building the functions"
  (cd "$ROOT" && cargo build --quiet --bins)
  log "starting the AWS emulator (moto) and bootstrapping the state table, queues and secret"
  local aws_url
  aws_url="$(KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" start)" || die "the AWS emulator did not start"
  export AWS_ENDPOINT_URL="$aws_url" AWS_REGION="${AWS_REGION:-us-east-1}" \
    AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
  local bootstrap
  bootstrap="$("$(cargo_target)/debug/kosha-ops" bootstrap)" || die "kosha-ops bootstrap failed"
  # KOSHA_STATE_TABLE, queue URLs, KOSHA_CHAOS_SECRET_ID, KOSHA_CHAOS_KEY: into this shell.
  local line
  while IFS= read -r line; do
    [[ "$line" =~ ^[A-Z_]+= ]] && export "${line?}"
  done <<< "$bootstrap"

  log "migrating and seeding $(db_name "$db_url")"
  DATABASE_URL="$db_url" "$(cargo_target)/debug/core-api" migrate

  local ops issuer agent_token operator_token
  ops="$(cargo_target)/debug/kosha-ops"
  issuer="http://127.0.0.1/kosha-dev"
  [[ -f "$DEV_DIR/dev-signing-key.pem" ]] || "$ops" token keygen --out-dir "$DEV_DIR" >/dev/null
  agent_token="$("$ops" token mint --role agent --client-id kosha-dev-agent \
    --key "$DEV_DIR/dev-signing-key.pem" --issuer "$issuer" --ttl 24h)"
  operator_token="$("$ops" token mint --role operator --client-id kosha-dev-operator \
    --key "$DEV_DIR/dev-signing-key.pem" --issuer "$issuer" --ttl 24h)"

  local core_port gw_port
  core_port="$(free_port)"; gw_port="$(free_port)"
  log "starting core-api on 127.0.0.1:$core_port"
  start_fn core-api "$core_port" DATABASE_URL="$db_url"
  wait_http "http://127.0.0.1:$core_port/v1/health" 30 || die "core-api did not start (see $DEV_DIR/logs/core-api.log)"
  log "starting mcp-gateway on 127.0.0.1:$gw_port"
  start_fn mcp-gateway "$gw_port" KOSHA_CORE_API_URL="http://127.0.0.1:$core_port" \
    KOSHA_JWT_ISSUER="$issuer" KOSHA_JWKS_URL="file://$DEV_DIR/jwks.json" \
    KOSHA_ALLOWED_CLIENT_IDS="kosha-dev-agent,kosha-dev-operator,kosha-e2e-limited" \
    KOSHA_METRICS_FLUSH_MS="${KOSHA_METRICS_FLUSH_MS:-10000}"
  wait_http "http://127.0.0.1:$gw_port/healthz" 30 || die "mcp-gateway did not start (see $DEV_DIR/logs/mcp-gateway.log)"

  cat > "$DEV_DIR/stack.env" <<ENV
# Written by scripts/dev up. Shell KEY=value lines; source it.
KOSHA_GATEWAY_URL=http://127.0.0.1:$gw_port/mcp
KOSHA_CORE_API_URL=http://127.0.0.1:$core_port
DATABASE_URL=$db_url
KOSHA_AGENT_TOKEN=$agent_token
KOSHA_OPERATOR_TOKEN=$operator_token
KOSHA_JWT_ISSUER=$issuer
KOSHA_DEV_SIGNING_KEY=$DEV_DIR/dev-signing-key.pem
KOSHA_OPS=$ops
$bootstrap
AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL
AWS_REGION=$AWS_REGION
AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
KOSHA_DEV_DIR=$DEV_DIR
AWS_EC2_METADATA_DISABLED=true
ENV
}
