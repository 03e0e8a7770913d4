# Starting and stopping the local stack (SPEC §2). Source after common.sh.
# shellcheck shell=bash
source "$ROOT/scripts/lib/embeddings.sh"

# The functions of the local stack: the names `scripts/dev stop|start NAME` take. `issuer` is
# the local token issuer (`kosha-ops issuer serve`, issue #31): OpenID discovery, the key set
# and the client-credentials token endpoint at ISSUER_PATH on its port.
STACK_FUNCTIONS=(core-api mcp-gateway outbox-relay screening-sim screening-worker issuer)
# The path of the local issuer URL (a Cognito issuer has one: /<pool id>).
ISSUER_PATH=/kosha-dev
# One dependency each, behind its own fault proxy (scripts/fault_proxy.py, issue 14), so
# `scripts/dev stop NAME` cuts that one alone: start_proxies.
STACK_PROXIES=(dynamodb sqs secretsmanager postgres)

# Exits 2 with the valid names unless NAME is a function or a proxy: check_function NAME
check_function() {
  local f
  for f in "${STACK_FUNCTIONS[@]}" "${STACK_PROXIES[@]}"; do [[ "$1" == "$f" ]] && return 0; done
  printf 'error: unknown component %q; valid names: %s\n' "$1" "${STACK_FUNCTIONS[*]} ${STACK_PROXIES[*]} embeddings" >&2
  exit 2
}

# Whether NAME is one of STACK_PROXIES: is_proxy NAME
is_proxy() { [[ " ${STACK_PROXIES[*]} " == *" $1 "* ]]; }

# What a function's environment keeps from the shell that runs `up`: the AWS SDK's,
# OpenTelemetry's and Kosha's settings, logging, and the process basics (no other shell
# variable reaches it).
FN_ENV_KEEP='^(AWS_[A-Z0-9_]*|OTEL_[A-Z0-9_]*|KOSHA_[A-Z0-9_]*|RUST_[A-Z0-9_]*|DATABASE_URL|PATH|HOME|USER|LOGNAME|LANG|LC_[A-Z]+|TZ|TMPDIR|SSL_CERT_(FILE|DIR)|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)='

# Starts one function binary in local mode in the background; records its PID, and under
# $DEV_DIR/cmd how it was started, for `scripts/dev start NAME`: NAME.args (its port only:
# the KEY=VALUE words given here are in NAME.env), NAME.bin (the binary's path) and NAME.env (its whole
# environment, NUL-separated, mode 0600: it holds credentials). The process gets exactly
# NAME.env (env -i), so a restart from it is the same process whatever the caller's shell.
# FN_BIN=PATH runs another executable under NAME (the fault proxies); FN_ARGV="WORD ..." gives
# it arguments (words without spaces; kept in NAME.argv, NUL-separated, for restarts).
#   start_fn NAME PORT [ENV=VALUE ...]
start_fn() {
  local name="$1" port="$2"; shift 2
  local bin cmd="$DEV_DIR/cmd"
  bin="${FN_BIN:-$(cargo_target)/debug/$name}"
  [[ -x "$bin" ]] || die "$bin is not built"
  mkdir -p "$DEV_DIR/pids" "$DEV_DIR/logs" "$cmd"
  printf '%s\n' "$port" > "$cmd/$name.args"
  printf '%s\n' "$bin" > "$cmd/$name.bin"
  rm -f "$cmd/$name.env" "$cmd/$name.argv"
  # shellcheck disable=SC2086  # FN_ARGV is split into words on purpose
  if [[ -n "${FN_ARGV:-}" ]]; then printf '%s\0' $FN_ARGV > "$cmd/$name.argv"; fi
  (
    umask 077
    { env -0 | grep -zE "$FN_ENV_KEEP" || true
      printf '%s\0' "$@" "KOSHA_LISTEN=127.0.0.1:$port" "RUST_LOG=${RUST_LOG:-info,rmcp=warn}"
    } > "$cmd/$name.env"
  )
  : > "$DEV_DIR/logs/$name.log"
  launch_fn "$name" "$bin"
}

# One more mcp-gateway on the stack stack_up brought up (the same auth, table, queues and
# screening-sim), as function NAME on a free port, with ENV (KEY=VALUE...) on top, e.g. another
# KOSHA_CORE_API_URL or policy; waits until it answers and prints its /mcp URL. For benchmarks
# that compare gateway settings side by side (scripts/bench-hedge, scripts/bench-adaptive):
#   start_gateway_variant NAME [KEY=VALUE...]
start_gateway_variant() {
  local name="$1" port core_url; shift
  core_url="$(sed -n 's/^KOSHA_CORE_API_URL=//p' "$DEV_DIR/stack.env" | tail -1)"
  port="$(free_port)"
  FN_BIN="$(cargo_target)/debug/mcp-gateway" start_fn "$name" "$port" \
    KOSHA_CORE_API_URL="$core_url" "${GATEWAY_ENV[@]}" KOSHA_SCREENING_URL="$STACK_SCREENING_URL" "$@" >&2
  wait_http "http://127.0.0.1:$port/healthz" 30 || die "$name did not start (log: $DEV_DIR/logs/$name.log)"
  echo "http://127.0.0.1:$port/mcp"
}

# Runs BIN as function NAME with exactly the environment in $DEV_DIR/cmd/NAME.env (and the
# arguments in NAME.argv, if any), output appended to logs/NAME.log; records the PID:
#   launch_fn NAME BIN
launch_fn() {
  local name="$1" bin="$2" vars argv=()
  mapfile -d '' -t vars < "$DEV_DIR/cmd/$name.env"
  [[ -f "$DEV_DIR/cmd/$name.argv" ]] && mapfile -d '' -t argv < "$DEV_DIR/cmd/$name.argv"
  setsid env -i "${vars[@]}" "$bin" "${argv[@]}" >>"$DEV_DIR/logs/$name.log" 2>&1 < /dev/null &
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

# The health URL of function NAME listening on PORT: health_url NAME PORT (1 when unknown).
health_url() {
  case "$1" in
    core-api) printf 'http://127.0.0.1:%s/v1/health' "$2" ;;
    mcp-gateway) printf 'http://127.0.0.1:%s/healthz' "$2" ;;
    screening-sim) printf 'http://127.0.0.1:%s/v1/health' "$2" ;;
    issuer) printf 'http://127.0.0.1:%s%s/.well-known/openid-configuration' "$2" "$ISSUER_PATH" ;;
    *) return 1 ;;  # outbox-relay and screening-worker serve nothing: alive is healthy
  esac
}

# The URL a caller uses for function NAME on PORT: service_url NAME PORT.
service_url() {
  case "$1" in
    mcp-gateway) printf 'http://127.0.0.1:%s/mcp' "$2" ;;
    issuer) printf 'http://127.0.0.1:%s%s' "$2" "$ISSUER_PATH" ;;
    outbox-relay) printf 'ops.outbox -> events queue, every %s ms' "${KOSHA_RELAY_INTERVAL_MS:-2000}" ;;
    screening-worker) printf 'polls KOSHA_SCREENING_QUEUE_URL' ;;
    *) if is_proxy "$1"; then printf 'tcp://127.0.0.1:%s (fault proxy)' "$2"; else printf 'http://127.0.0.1:%s' "$2"; fi ;;
  esac
}

# Waits until a function started by start_fn answers its health check: wait_healthy NAME PORT.
# At most KOSHA_START_WAIT_S seconds (default 30); fails at once, with the log's last lines,
# when the process exits. core-api's check includes PostgreSQL.
wait_healthy() {
  local name="$1" port="$2" url pid end log_file="$DEV_DIR/logs/$1.log"
  if is_proxy "$name"; then
    wait_tcp "$port" 5 || die "the $name fault proxy did not listen on 127.0.0.1:$port (log: $log_file)"
    return 0
  fi
  pid="$(cat "$DEV_DIR/pids/$name.pid")"
  if ! url="$(health_url "$name" "$port")"; then
    # No health endpoint (outbox-relay): alive a second after start is started.
    sleep 1
    kill -0 "$pid" 2>/dev/null && return 0
    rm -f "$DEV_DIR/pids/$name.pid"
    tail -n 5 "$log_file" >&2 2>/dev/null || true
    die "$name exited while starting (log: $log_file)"
  fi
  end=$((SECONDS + ${KOSHA_START_WAIT_S:-30}))
  while ((SECONDS < end)); do
    if curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$DEV_DIR/pids/$name.pid"
      tail -n 5 "$log_file" >&2 2>/dev/null || true
      die "$name exited while starting (log: $log_file)"
    fi
    sleep 0.1
  done
  die "$name (pid $pid) did not answer $url within ${KOSHA_START_WAIT_S:-30} s; it is left running (log: $log_file)"
}

# Starts a function again as `up` did (same binary, port and environment, from
# $DEV_DIR/cmd), and waits until it answers its health check: restart_fn NAME.
# Everything is checked before a running instance is stopped; the log is appended to.
restart_fn() {
  local name="$1" cmd="$DEV_DIR/cmd" f bin port
  for f in "$cmd/$name.args" "$cmd/$name.bin" "$cmd/$name.env"; do
    [[ -f "$f" ]] || die "$name was not started by this scripts/dev up (no ${f#"$DEV_DIR"/}); run scripts/dev up"
  done
  bin="$(cat "$cmd/$name.bin")"; port="$(head -n 1 "$cmd/$name.args")"
  [[ -x "$bin" ]] || die "$bin (the binary scripts/dev up started) is missing; run scripts/dev up"
  [[ ! -f "$DEV_DIR/pids/$name.pid" ]] || stop_fn "$name"
  printf -- '--- restarted at %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$DEV_DIR/logs/$name.log"
  launch_fn "$name" "$bin"
  wait_healthy "$name" "$port"
}

# Stops everything recorded under $DEV_DIR/pids, then the emulator; prints one line per
# component it stopped (stderr). Every process gets TERM at once, then KILL after 5 s.
# A `.pgid` file records a process group by its leader's PID (cargo lambda watch, which
# spawns `cargo run` and the functions): the whole group is stopped.
stop_all() {
  local f pid i target names=() targets=() pids=() n
  if [[ -d "$DEV_DIR/pids" ]]; then
    for f in "$DEV_DIR"/pids/*.pid "$DEV_DIR"/pids/*.pgid; do
      [[ -e "$f" ]] || continue
      pid="$(cat "$f")"; target="$pid"
      [[ "$f" == *.pgid ]] && target="-$pid"
      if kill -0 -- "$target" 2>/dev/null; then
        kill -TERM -- "$target" 2>/dev/null || true
        names+=("$(basename "${f%.*}")"); targets+=("$target"); pids+=("$pid")
      fi
      rm -f "$f"
    done
  fi
  for n in "${!targets[@]}"; do
    for ((i = 0; i < 50; i++)); do kill -0 -- "${targets[n]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "${targets[n]}" 2>/dev/null || true
    echo "${names[n]}: stopped (pid ${pids[n]}$(is_proxy "${names[n]}" && echo ', its fault proxy'))" >&2
  done
  if KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" status >/dev/null 2>&1; then
    pid="$(cat "$DEV_DIR/moto.pid" 2>/dev/null || true)"
    KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" stop >/dev/null 2>&1 || true
    echo "aws-emulator: stopped${pid:+ (pid $pid)}" >&2
  else
    KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" stop >/dev/null 2>&1 || true
  fi
}

# One line per component of the stack: NAME, state, URL, pid. States: `running` (the process
# is alive and, for a function, answers its health check), `unhealthy` (alive, check fails),
# `stopped`. PostgreSQL is the stack.env's DATABASE_URL (never stopped by `down`). Returns 1
# when any component is not running.
status_all() {
  local ok=0 f name pid port url state db_url="" env_file="$DEV_DIR/stack.env"
  row() {  # NAME STATE [URL [PID]]
    if [[ -n "${4:-}" ]]; then printf '%-16s %-10s %-44s pid %s\n' "$1" "$2" "$3" "$4"
    elif [[ -n "${3:-}" ]]; then printf '%-16s %-10s %s\n' "$1" "$2" "$3"
    else printf '%-16s %s\n' "$1" "$2"; fi
    [[ "$2" == running ]] || ok=1
  }
  if [[ -f "$env_file" ]]; then db_url="$(sed -n 's/^DATABASE_URL=//p' "$env_file" | tail -1)"; fi
  if [[ -n "$db_url" ]]; then
    if PGCONNECT_TIMEOUT=2 psql "$db_url" -tAc 'select 1' >/dev/null 2>&1; then state=running; else state=stopped; fi
    row postgres "$state" "$db_url"
  fi
  url="$(KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" status 2>/dev/null | sed -n 's/^running //p' || true)"
  if [[ -n "$url" ]]; then row aws-emulator running "$url" "$(cat "$DEV_DIR/moto.pid" 2>/dev/null)"
  else row aws-emulator stopped; fi
  local emb
  if emb="$(embeddings_status)"; then
    read -r _ url _ pid <<< "$emb"
    row embeddings running "$url" "$pid"
  else row embeddings stopped; fi
  if ! compgen -G "$DEV_DIR/cmd/*.args" >/dev/null && ! compgen -G "$DEV_DIR/pids/*.pgid" >/dev/null; then
    echo "stack: not started (scripts/dev up starts it)"
    return 1
  fi
  for f in "$DEV_DIR"/cmd/*.args; do
    [[ -e "$f" ]] || continue
    name="$(basename "$f" .args)"; port="$(head -n 1 "$f")"; pid=""; state=stopped
    [[ -f "$DEV_DIR/pids/$name.pid" ]] && pid="$(cat "$DEV_DIR/pids/$name.pid")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      state=running
      url="$(health_url "$name" "$port")" && ! curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && state=unhealthy
    else
      pid=""
    fi
    row "$name" "$state" "$(service_url "$name" "$port")" "$pid"
  done
  for f in "$DEV_DIR"/pids/*.pgid; do
    [[ -e "$f" ]] || continue
    name="$(basename "$f" .pgid)"; pid="$(cat "$f")"; url=""
    [[ -f "$env_file" ]] && url="$(sed -n 's/^KOSHA_GATEWAY_URL=//p' "$env_file" | tail -1)"
    if kill -0 -- "-$pid" 2>/dev/null; then row "$name" running "$url" "$pid"; else row "$name" stopped "$url"; fi
  done
  return $ok
}

# Builds, migrates, starts every function, and writes $DEV_DIR/stack.env.
#   stack_up DATABASE_URL
stack_up() {
  stack_prepare "$1"
  [[ -z "${KOSHA_STACK_OTLP_OUT:-}" ]] || otlp_receiver_up "$KOSHA_STACK_OTLP_OUT"
  local core_port gw_port
  core_port="$(free_port)"; gw_port="$(free_port)"
  log "starting core-api on 127.0.0.1:$core_port"
  # core-api reaches PostgreSQL through its fault proxy; CHAOS_ENABLED as for the gateway.
  start_fn core-api "$core_port" DATABASE_URL="$STACK_CORE_DB_URL" CHAOS_ENABLED=true
  wait_healthy core-api "$core_port"
  stack_up_screening
  log "starting mcp-gateway on 127.0.0.1:$gw_port"
  start_fn mcp-gateway "$gw_port" KOSHA_CORE_API_URL="http://127.0.0.1:$core_port" "${GATEWAY_ENV[@]}" \
    KOSHA_SCREENING_URL="$STACK_SCREENING_URL" KOSHA_METRICS_FLUSH_MS="${KOSHA_METRICS_FLUSH_MS:-1000}"
  wait_healthy mcp-gateway "$gw_port"
  # The relay listens on nothing; its "port" is a placeholder start_fn records.
  log "starting outbox-relay (ops.outbox -> $KOSHA_EVENTS_QUEUE_URL every ${KOSHA_RELAY_INTERVAL_MS:-2000} ms)"
  start_fn outbox-relay 0 DATABASE_URL="$STACK_DB_URL"
  wait_healthy outbox-relay 0
  stack_write_env "http://127.0.0.1:$gw_port/mcp" "http://127.0.0.1:$core_port"
}

# An OTLP/HTTP trace receiver on a free port (scripts/otlp_receiver.py, the venv's Python),
# writing every span it gets to OUT as a JSON line; exports OTEL_EXPORTER_OTLP_ENDPOINT (and a
# short batch delay) so every function started after it sends it its spans (SPEC §12).
#   otlp_receiver_up OUT
otlp_receiver_up() {
  local out="$1" port
  port="$(free_port)"
  : > "$out"
  mkdir -p "$DEV_DIR/pids" "$DEV_DIR/logs"
  log "starting the OTLP receiver on 127.0.0.1:$port (spans: ${out#"$ROOT"/})"
  setsid "$VENV/bin/python" "$ROOT/scripts/otlp_receiver.py" "$port" "$out" \
    >"$DEV_DIR/logs/otlp-receiver.log" 2>&1 < /dev/null &
  echo $! > "$DEV_DIR/pids/otlp-receiver.pid"
  wait_http "http://127.0.0.1:$port/healthz" 30 || die "the OTLP receiver did not start"
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" OTEL_BSP_SCHEDULE_DELAY=200
}

# screening-sim on a free port (its /admin/chaos token minted here) and the screening-worker's
# polling loop on the screening queue (issue 12). Sets STACK_SCREENING_URL and
# STACK_SIM_ADMIN_TOKEN. The queue URLs come from bootstrap's output, already in this shell.
stack_up_screening() {
  local sim_port worker_port
  sim_port="$(free_port)"; worker_port="$(free_port)"
  STACK_SIM_ADMIN_TOKEN="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  STACK_SCREENING_URL="http://127.0.0.1:$sim_port"
  log "starting screening-sim on 127.0.0.1:$sim_port"
  start_fn screening-sim "$sim_port" KOSHA_SIM_ADMIN_TOKEN="$STACK_SIM_ADMIN_TOKEN"
  wait_healthy screening-sim "$sim_port"
  log "starting screening-worker (polls the screening queue)"
  # The port is recorded for `scripts/dev start` only: the worker listens on nothing.
  start_fn screening-worker "$worker_port" KOSHA_SCREENING_URL="$STACK_SCREENING_URL"
  sleep 0.3
  kill -0 "$(cat "$DEV_DIR/pids/screening-worker.pid")" 2>/dev/null || {
    tail -n 5 "$DEV_DIR/logs/screening-worker.log" >&2 || true
    die "screening-worker exited while starting (log: $DEV_DIR/logs/screening-worker.log)"
  }
}

# The same stack with core-api and mcp-gateway under `cargo lambda watch` (the Lambda Runtime
# API emulator, issue 6) instead of local HTTP: both functions are reached through their
# Function URL paths, http://127.0.0.1:PORT/lambda-url/<bin>/..., and the gateway calls
# core-api through its own. stack.env's KOSHA_GATEWAY_URL is the gateway's /mcp there.
# Needs `cargo lambda` on PATH (scripts/lib/infra-venv.sh). The watch reuses the debug
# builds of stack_prepare from the same CARGO_TARGET_DIR (its `cargo run` only checks them).
#   stack_up_lambda DATABASE_URL
stack_up_lambda() {
  command -v cargo-lambda >/dev/null || die "cargo-lambda is not on PATH (scripts/lib/infra-venv.sh)"
  stack_prepare "$1"
  local port env_file
  port="$(free_port)"; env_file="$DEV_DIR/lambda.env"
  # One environment file for both functions (no key means different things to them): what
  # start_fn would pass, plus the AWS emulator and KOSHA_* settings of this shell.
  {
    echo "DATABASE_URL=$STACK_DB_URL"
    echo "KOSHA_CORE_API_URL=http://127.0.0.1:$port/lambda-url/core-api"
    printf '%s\n' "${GATEWAY_ENV[@]}"
    # Quoted: cargo-lambda's env-file parser refuses an unquoted value holding `=`.
    echo "RUST_LOG=\"${RUST_LOG:-info,rmcp=warn}\""
    env | grep -E '^(AWS_[A-Z0-9_]+|KOSHA_(STATE_TABLE|RATE_[A-Z_]+|POLICY_[A-Z_]+|MAX_IN_FLIGHT|CORE_API_AUTH|EMBEDDINGS_[A-Z_]+))=' || true
  } > "$env_file"
  log "starting core-api and mcp-gateway under cargo lambda watch on 127.0.0.1:$port"
  mkdir -p "$DEV_DIR/pids" "$DEV_DIR/logs"
  setsid cargo lambda watch --manifest-path "$ROOT/Cargo.toml" --ignore-changes --disable-cors \
    --quiet --invoke-address 127.0.0.1 --invoke-port "$port" --env-file "$env_file" \
    >"$DEV_DIR/logs/lambda-watch.log" 2>&1 < /dev/null &
  echo $! > "$DEV_DIR/pids/lambda-watch.pgid"
  local base="http://127.0.0.1:$port/lambda-url"
  # The first request to each function starts it (cargo run): bounded, in case it compiles.
  wait_http "$base/core-api/v1/health" "${KOSHA_LAMBDA_START_S:-300}" \
    || die "core-api did not answer under cargo lambda watch (see $DEV_DIR/logs/lambda-watch.log)"
  wait_http "$base/mcp-gateway/healthz" "${KOSHA_LAMBDA_START_S:-300}" \
    || die "mcp-gateway did not answer under cargo lambda watch (see $DEV_DIR/logs/lambda-watch.log)"
  stack_write_env "$base/mcp-gateway/mcp" "$base/core-api"
}

# A debug build of every binary. On a terminal cargo shows its own progress; otherwise its
# output goes to $DEV_DIR/logs/build.log with a line every 30 s (crates compiled so far), and
# the log's last lines are printed when the build fails.
build_bins() {
  local log_file="$DEV_DIR/logs/build.log" pid rc=0
  mkdir -p "$DEV_DIR/logs"
  if [[ -t 2 ]]; then
    log "building the functions (cargo build --bins; a first build takes several minutes)"
    (cd "$ROOT" && cargo build --bins) || die "cargo build failed"
    return 0
  fi
  log "building the functions (cargo build --bins; a first build takes several minutes; log: $log_file)"
  (cd "$ROOT" && exec cargo build --bins) >"$log_file" 2>&1 &
  pid=$!
  local next=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= next)); then
      log "still building: $(grep -c '^ *Compiling ' "$log_file" || true) crates compiled so far"
      next=$((SECONDS + 30))
    fi
    sleep 0.5
  done
  wait "$pid" || rc=$?
  if ((rc != 0)); then
    tail -n 30 "$log_file" >&2
    die "cargo build failed (log: $log_file)"
  fi
}

# Everything but the functions: PostgreSQL and the database, a debug build of every binary,
# the AWS emulator with its bootstrap output exported, migration and seed, dev signing key,
# the local token issuer (stack_up_issuer) and tokens. Sets STACK_DB_URL, STACK_BOOTSTRAP,
# STACK_ISSUER, STACK_AGENT_TOKEN, STACK_OPERATOR_TOKEN and GATEWAY_ENV (the gateway's auth
# settings as KEY=VALUE words).
#   stack_prepare DATABASE_URL
stack_prepare() {
  local db_url="$1"
  stop_all
  mkdir -p "$DEV_DIR/logs"
  ensure_postgres "$db_url"
  ensure_database "$db_url"
  build_bins
  log "starting the AWS emulator (moto) and bootstrapping the state table, queues and secret"
  local aws_url
  aws_url="$(KOSHA_DEV_DIR="$DEV_DIR" "$ROOT/scripts/moto" start)" || die "the AWS emulator did not start"
  export AWS_ENDPOINT_URL="$aws_url" AWS_REGION="${AWS_REGION:-us-east-1}" \
    AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
  start_proxies "$db_url"
  # The emulator starts empty, so bootstrap creates the chaos secret again: with the key the
  # previous stack.env holds (or KOSHA_CHAOS_KEY of this shell), so that key stays valid across
  # `up`s. stack.env then records what bootstrap printed: the secret's current value.
  local bootstrap previous_key
  previous_key="$(sed -n 's/^KOSHA_CHAOS_KEY=\([0-9a-f]\{64\}\)$/\1/p' "$DEV_DIR/stack.env" 2>/dev/null | tail -1 || true)"
  bootstrap="$(KOSHA_CHAOS_KEY="${KOSHA_CHAOS_KEY:-$previous_key}" "$(cargo_target)/debug/kosha-ops" bootstrap)" \
    || die "kosha-ops bootstrap failed"
  # KOSHA_STATE_TABLE, queue URLs, KOSHA_CHAOS_SECRET_ID, KOSHA_CHAOS_KEY: into this shell.
  local line
  while IFS= read -r line; do
    [[ "$line" =~ ^[A-Z_]+= ]] && export "${line?}"
  done <<< "$bootstrap"

  log "migrating and seeding $(db_name "$db_url") (log: ${DEV_DIR#"$ROOT"/}/logs/migrate.log)"
  local migrate_log="$DEV_DIR/logs/migrate.log"
  if ! DATABASE_URL="$db_url" "$(cargo_target)/debug/core-api" migrate >"$migrate_log" 2>&1; then
    tail -n 10 "$migrate_log" >&2
    die "core-api migrate failed (log: $migrate_log)"
  fi
  grep '^core-api migrate: ' "$migrate_log" >&2 || true

  # The local embeddings server (SPEC §1; exports KOSHA_EMBEDDINGS_URL/_MODEL/_DIMENSIONS,
  # which core-api reads), then the passages' vectors (only what is missing).
  log "starting the local embeddings server (log: ${DEV_DIR#"$ROOT"/}/logs/embeddings.log)"
  embeddings_up || die "the embeddings server did not start"
  log "embedding article passages (log: ${DEV_DIR#"$ROOT"/}/logs/embed.log)"
  local embed_log="$DEV_DIR/logs/embed.log"
  if ! DATABASE_URL="$db_url" "$(cargo_target)/debug/core-api" embed >"$embed_log" 2>&1; then
    tail -n 10 "$embed_log" >&2
    die "core-api embed failed (log: $embed_log)"
  fi
  grep '^core-api embed: ' "$embed_log" >&2 || true

  local ops issuer
  ops="$(cargo_target)/debug/kosha-ops"
  [[ -f "$DEV_DIR/dev-signing-key.pem" ]] || "$ops" token keygen --out-dir "$DEV_DIR" >/dev/null
  stack_up_issuer
  issuer="$STACK_ISSUER"
  STACK_AGENT_TOKEN="$("$ops" token mint --role agent --client-id kosha-dev-agent \
    --key "$DEV_DIR/dev-signing-key.pem" --issuer "$issuer" --ttl 24h)"
  STACK_OPERATOR_TOKEN="$("$ops" token mint --role operator --client-id kosha-dev-operator \
    --key "$DEV_DIR/dev-signing-key.pem" --issuer "$issuer" --ttl 24h)"
  # A tester is in both groups: data tools plus the chaos header (SPEC §2, §9).
  STACK_TESTER_TOKEN="$("$ops" token mint --role agent --role operator --client-id kosha-dev-tester \
    --key "$DEV_DIR/dev-signing-key.pem" --issuer "$issuer" --ttl 24h)"
  STACK_DB_URL="$db_url"; STACK_BOOTSTRAP="$bootstrap"
  GATEWAY_ENV=(
    # No KOSHA_JWKS_URL: the default, <issuer>/.well-known/jwks.json, is the local issuer's,
    # as a deployed gateway's is the pool's. kosha-dev-mcp is the issuer's public client, for
    # people logging in through an MCP client (authorization code + PKCE, issue 44).
    KOSHA_JWT_ISSUER="$issuer"
    KOSHA_ALLOWED_CLIENT_IDS="kosha-dev-agent,kosha-dev-operator,kosha-dev-tester,kosha-dev-mcp,kosha-e2e-limited,kosha-e2e-drained,kosha-e2e-drained-ts,kosha-e2e-drained-ts2,$STACK_M2M_IDS"
    # Testers' signed chaos headers are honoured locally; the template keeps it off (SPEC §9).
    CHAOS_ENABLED=true
    # SPEC §2: a browser client on this machine (the MCP Inspector) may connect.
    KOSHA_ALLOWED_ORIGINS="http://localhost:*,http://127.0.0.1:*"
  )
}

# The machine clients of the local issuer (issue #31): name → allowed scopes, as a user pool's
# confidential app clients with the resource server `kosha` (SPEC §5). `none` holds a scope
# that grants no role: its tokens are valid and get 403.
declare -gA STACK_M2M_SCOPES=([agent]=kosha/agent [operator]=kosha/operator [none]=kosha/mcp)

# The local token issuer on a free port (`kosha-ops issuer serve`, issue #31), with new client
# secrets for the machine clients each time (in $DEV_DIR/issuer-clients.json, mode 0600).
# Sets STACK_ISSUER (its URL: the `iss` of every local token), STACK_TOKEN_ENDPOINT,
# STACK_M2M_IDS (comma list) and STACK_M2M_ENV (stack.env lines with the ids and secrets).
stack_up_issuer() {
  local port name id secret entries=() lines=() clients="$DEV_DIR/issuer-clients.json"
  port="$(free_port)"
  STACK_ISSUER="http://127.0.0.1:$port$ISSUER_PATH"
  STACK_TOKEN_ENDPOINT="http://127.0.0.1:$port/oauth2/token"
  STACK_M2M_IDS=""
  for name in agent operator none; do
    id="kosha-dev-m2m-$name"
    secret="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
    entries+=("{\"client_id\": \"$id\", \"client_secret\": \"$secret\", \"scopes\": [\"${STACK_M2M_SCOPES[$name]}\"]}")
    STACK_M2M_IDS+="${STACK_M2M_IDS:+,}$id"
    lines+=("KOSHA_M2M_${name^^}_CLIENT_ID=$id" "KOSHA_M2M_${name^^}_CLIENT_SECRET=$secret")
  done
  STACK_M2M_ENV="$(printf '%s\n' "${lines[@]}")"
  (
    umask 077
    local IFS=,
    printf '{"clients": [%s]}\n' "${entries[*]}" > "$clients"
  )
  log "starting the token issuer at $STACK_ISSUER"
  FN_BIN="$(cargo_target)/debug/kosha-ops" FN_ARGV="issuer serve" start_fn issuer "$port" \
    KOSHA_JWT_ISSUER="$STACK_ISSUER" KOSHA_DEV_SIGNING_KEY="$DEV_DIR/dev-signing-key.pem" \
    KOSHA_ISSUER_CLIENTS="$clients"
  wait_healthy issuer "$port"
}

# One fault proxy per switch of STACK_PROXIES (issue 14): dynamodb, sqs and secretsmanager in
# front of the emulator, exported as the SDKs' per-service endpoints (AWS_ENDPOINT_URL_<SERVICE
# ID>, aws-config's service-specific endpoints: they win over AWS_ENDPOINT_URL), so every
# function started after this reaches each service through its own switch; postgres in front
# of DATABASE_URL's server, for core-api (STACK_CORE_DB_URL; migrations and tests connect
# directly). Ports are free ones, kept by `scripts/dev start NAME`.
#   start_proxies DATABASE_URL
start_proxies() {
  local db_url="$1" aws="${AWS_ENDPOINT_URL#http://}" name port
  declare -A ports
  for name in dynamodb sqs secretsmanager; do
    port="$(free_port)"; ports[$name]="$port"
    FN_BIN="$ROOT/scripts/fault_proxy.py" start_fn "$name" "$port" \
      KOSHA_PROXY_LISTEN="127.0.0.1:$port" KOSHA_PROXY_TARGET="$aws"
    wait_healthy "$name" "$port"
  done
  export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:${ports[dynamodb]}" \
    AWS_ENDPOINT_URL_SQS="http://127.0.0.1:${ports[sqs]}" \
    AWS_ENDPOINT_URL_SECRETS_MANAGER="http://127.0.0.1:${ports[secretsmanager]}"
  # postgres://[user@]host[:port]/db...: the proxy takes host:port's place.
  local scheme="${db_url%%://*}" rest="${db_url#*://}" user="" hostport
  if [[ "$rest" == *@* ]]; then user="${rest%%@*}@"; rest="${rest#*@}"; fi
  hostport="${rest%%/*}"; rest="${rest#"$hostport"}"
  [[ "$hostport" == *:* ]] || hostport="$hostport:5432"
  port="$(free_port)"
  FN_BIN="$ROOT/scripts/fault_proxy.py" start_fn postgres "$port" \
    KOSHA_PROXY_LISTEN="127.0.0.1:$port" KOSHA_PROXY_TARGET="$hostport"
  wait_healthy postgres "$port"
  STACK_CORE_DB_URL="$scheme://${user}127.0.0.1:$port$rest"
}

# Writes $DEV_DIR/stack.env: stack_write_env GATEWAY_MCP_URL CORE_API_URL
stack_write_env() {
  cat > "$DEV_DIR/stack.env" <<ENV
# Written by scripts/dev up. Shell KEY=value lines; source it.
KOSHA_GATEWAY_URL=$1
KOSHA_CORE_API_URL=$2
KOSHA_SCREENING_URL=${STACK_SCREENING_URL:-}
KOSHA_SIM_ADMIN_TOKEN=${STACK_SIM_ADMIN_TOKEN:-}
DATABASE_URL=$STACK_DB_URL
KOSHA_AGENT_TOKEN=$STACK_AGENT_TOKEN
KOSHA_OPERATOR_TOKEN=$STACK_OPERATOR_TOKEN
KOSHA_TESTER_TOKEN=$STACK_TESTER_TOKEN
KOSHA_JWT_ISSUER=$STACK_ISSUER
KOSHA_TOKEN_ENDPOINT=$STACK_TOKEN_ENDPOINT
$STACK_M2M_ENV
KOSHA_DEV_SIGNING_KEY=$DEV_DIR/dev-signing-key.pem
KOSHA_OPS=$(cargo_target)/debug/kosha-ops
$STACK_BOOTSTRAP
AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL
AWS_ENDPOINT_URL_DYNAMODB=$AWS_ENDPOINT_URL_DYNAMODB
AWS_ENDPOINT_URL_SQS=$AWS_ENDPOINT_URL_SQS
AWS_ENDPOINT_URL_SECRETS_MANAGER=$AWS_ENDPOINT_URL_SECRETS_MANAGER
KOSHA_CORE_API_DATABASE_URL=$STACK_CORE_DB_URL
AWS_REGION=$AWS_REGION
AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
KOSHA_DEV_DIR=$DEV_DIR
KOSHA_RATE_CAPACITY=${KOSHA_RATE_CAPACITY:-20}
KOSHA_RATE_PER_SEC=${KOSHA_RATE_PER_SEC:-1}
AWS_EC2_METADATA_DISABLED=true
KOSHA_EMBEDDINGS_URL=$KOSHA_EMBEDDINGS_URL
KOSHA_EMBEDDINGS_MODEL=$KOSHA_EMBEDDINGS_MODEL
KOSHA_EMBEDDINGS_DIMENSIONS=$KOSHA_EMBEDDINGS_DIMENSIONS
KOSHA_OTLP_SPANS=${KOSHA_STACK_OTLP_OUT:-}
ENV
}
