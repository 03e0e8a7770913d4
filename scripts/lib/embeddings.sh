# The local embeddings server (SPEC §1): scripts/embeddings_server.py, an OpenAI-compatible
# POST /v1/embeddings on loopback backed by WordLlama (docs/embeddings.md). Source after
# common.sh (it uses ROOT, DEV_DIR, VENV, ensure_venv, log, die).
#
#   embeddings_up       start it (or find it running) and export, into this shell,
#                       KOSHA_EMBEDDINGS_URL (http://127.0.0.1:PORT/v1), KOSHA_EMBEDDINGS_MODEL
#                       and KOSHA_EMBEDDINGS_DIMENSIONS, the settings core-api reads (SPEC §4)
#   embeddings_start    the same without the exports; prints the base URL
#   embeddings_stop     stop it (by recorded PID); a no-op when it is not running
#   embeddings_status   "running URL pid N" (return 0) or "stopped" (return 3)
#
# State in $DEV_DIR: pids/embeddings.pid (so stop_all in stack.sh stops it with the rest),
# embeddings.url (kept after a stop: the next start comes back on the same port when it is
# free, so a core-api started with that URL reaches the restarted server), logs/embeddings.log.
# shellcheck shell=bash

EMBEDDINGS_MODEL="wordllama-l2-supercat-256"
EMBEDDINGS_DIMENSIONS=256

_embeddings_pid_file() { printf '%s' "$DEV_DIR/pids/embeddings.pid"; }
_embeddings_url_file() { printf '%s' "$DEV_DIR/embeddings.url"; }

# The PID of the running server, or return 1. A recycled PID running something else is not ours.
_embeddings_pid() {
  local f pid
  f="$(_embeddings_pid_file)"
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q embeddings_server; then
    return 1
  fi
  echo "$pid"
}

# Whether PORT on loopback can be bound now: _embeddings_port_free PORT
_embeddings_port_free() {
  python3 -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', int(sys.argv[1])))" "$1" 2>/dev/null
}

embeddings_start() {
  local pid url_file ready port=0 wait_s="${KOSHA_EMBEDDINGS_START_S:-60}" end url log_file
  url_file="$(_embeddings_url_file)"
  if pid="$(_embeddings_pid)"; then
    cat "$url_file"
    return 0
  fi
  ensure_venv >&2 || return 1
  mkdir -p "$DEV_DIR/pids" "$DEV_DIR/logs"
  log_file="$DEV_DIR/logs/embeddings.log"
  # Come back on the previous port when it is free; otherwise the server picks one.
  local previous
  previous="$(sed -n 's|^http://127.0.0.1:\([0-9]*\)/v1$|\1|p' "$url_file" 2>/dev/null || true)"
  if [[ -n "$previous" ]] && _embeddings_port_free "$previous"; then
    port="$previous"
  elif [[ -n "$previous" ]]; then
    log "embeddings: port $previous is taken; starting on a new port (restart core-api to follow it)"
  fi
  ready="$DEV_DIR/embeddings.ready"
  rm -f "$ready"
  printf -- '--- started at %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$log_file"
  # The server prints its base URL on stdout once the model is loaded and the port bound.
  setsid "$VENV/bin/python" "$ROOT/scripts/embeddings_server.py" --host 127.0.0.1 --port "$port" \
    >"$ready" 2>>"$log_file" </dev/null &
  pid=$!
  echo "$pid" > "$(_embeddings_pid_file)"
  end=$((SECONDS + wait_s))
  while ((SECONDS < end)); do
    url="$(head -n 1 "$ready" 2>/dev/null || true)"
    if [[ "$url" == http://*/v1 ]] && curl -fsS -o /dev/null --max-time 1 "${url%/v1}/health" 2>/dev/null; then
      echo "$url" > "$url_file"
      rm -f "$ready"
      echo "$url"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$(_embeddings_pid_file)" "$ready"
      tail -n 5 "$log_file" >&2 || true
      log "embeddings server exited while starting (log: $log_file)"
      return 1
    fi
    sleep 0.1
  done
  embeddings_stop >/dev/null
  log "embeddings server did not answer within ${wait_s} s (log: $log_file)"
  return 1
}

embeddings_up() {
  local url
  url="$(embeddings_start)" || return 1
  export KOSHA_EMBEDDINGS_URL="$url" KOSHA_EMBEDDINGS_MODEL="$EMBEDDINGS_MODEL" \
    KOSHA_EMBEDDINGS_DIMENSIONS="$EMBEDDINGS_DIMENSIONS"
}

embeddings_stop() {
  local pid i
  if pid="$(_embeddings_pid)"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(_embeddings_pid_file)"
  echo "stopped"
}

embeddings_status() {
  local pid
  if pid="$(_embeddings_pid)"; then
    echo "running $(cat "$(_embeddings_url_file)") pid $pid"
  else
    echo "stopped"
    return 3
  fi
}
