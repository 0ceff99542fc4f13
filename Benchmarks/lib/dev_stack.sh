# The `backbone dev` a benchmark runs against (sourced by the scripts that start one): dev_start
# starts it and waits until it is up, dev_stop stops it, dev_value reads one of its settings.
# Needs WORK set (the stack's log is $WORK/dev.log); DEV is the running stack's pid, empty when
# none runs.
DEV=""

# Starts `BACKBONE dev ARGS…` in the background with BACKBONE_HOME=HOME and waits (at most two
# minutes) until it has written HOME/dev.env; exits, showing its log, when it does not come up.
# Settings for the stack go as assignments before the call (`LOG_LEVEL=warning dev_start …`).
dev_start() {  # backbone home args…
    local bin="$1" home="$2"
    shift 2
    BACKBONE_HOME="$home" "$bin" dev "$@" > "$WORK/dev.log" 2>&1 &
    DEV=$!
    for _ in $(seq 1 240); do [[ -f "$home/dev.env" ]] && break; sleep 0.5; done
    [[ -f "$home/dev.env" ]] || { echo "backbone dev did not come up" >&2; cat "$WORK/dev.log" >&2; exit 1; }
}

# Stops the running stack with Ctrl-C (it drains) and waits until it has exited.
dev_stop() {
    if [[ -n "$DEV" ]]; then kill -INT "$DEV" 2>/dev/null || true; wait "$DEV" 2>/dev/null || true; fi
    DEV=""
}

# The value of setting NAME in the dev.env of the stack whose BACKBONE_HOME is HOME.
dev_value() {  # home name
    grep "^$2=" "$1/dev.env" | cut -d= -f2- | tr -d "'"
}
