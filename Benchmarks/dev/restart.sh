#!/usr/bin/env bash
# Benchmark: how long `backbone dev` takes to serve again in a folder that holds a day of real
# use. Seeds EVENTS accepted reading events (default 10 million) the fast way — the dedup
# ledger and both projections' event logs, half the ids spelled in upper case as iOS sends
# them, accepted over the last 20 hours — into a fresh folder's private PostgreSQL, then times
# from `backbone dev` to ingest's /readyz answering 200 for:
#   first      the first start of this version on that data (no mark of what was checked yet:
#              every ledger id is checked once, and the start says so)
#   restart    started again after Ctrl-C
#   after -9   started again after kill -9 of the running stack
# The baseline, in the same run: the start-up recovery statement of the previous version, run
# by psql on the same data with a time limit (LIMIT seconds, default 120), and its plan's cost.
# Before the starts, every statement of the start-up recovery is EXPLAINed against that data
# (Benchmarks/dev/plan_check.py): the script fails when one scans a large table once per row of
# another, as the previous statement did (its plan is checked too, and is expected to fail).
# Needs what deploy/dev.sh installs. Usage: Benchmarks/dev/restart.sh [BACKBONE]  (EVENTS=10000000 LIMIT=120)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
BIN="${1:-.build/release/backbone}"
EVENTS="${EVENTS:-10000000}"
LIMIT="${LIMIT:-120}"
WORK="$(mktemp -d /tmp/dev-restart-bench.XXXX)"
HOME_DIR="$WORK/home"
. Benchmarks/lib/dev_stack.sh
cleanup() {
    dev_stop
    # As root the private cluster lives under /var/tmp (the postgres user cannot reach $WORK).
    local relocated; relocated="$(cat "$HOME_DIR/postgres/cluster-location" 2>/dev/null || true)"
    if [[ "$relocated" == /var/tmp/backbone-postgres-* ]]; then rm -rf "$relocated"; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$HOME_DIR"

ELAPSED=0
start() {  # $1: extra arguments; waits for dev.env (and, without --infra-only, ingest's /readyz); sets ELAPSED
    rm -f "$HOME_DIR/dev.env"
    local started; started=$(date +%s.%N)
    BACKBONE_HOME="$HOME_DIR" LOG_LEVEL=info "$BIN" dev --port-offset 300 $1 >> "$WORK/dev.log" 2>&1 &
    DEV=$!
    for _ in $(seq 1 6000); do
        if [[ "$1" == "--infra-only" ]]; then [[ -f "$HOME_DIR/dev.env" ]] && break
        else curl -sf -o /dev/null http://127.0.0.1:8380/readyz && break; fi
        kill -0 "$DEV" 2>/dev/null || { echo "backbone dev exited" >&2; tail -20 "$WORK/dev.log" >&2; exit 1; }
        sleep 0.1
    done
    ELAPSED=$(echo "$(date +%s.%N) - $started" | bc)
}

start --infra-only
DB="$(dev_value "$HOME_DIR" DATABASE_URL)"
echo "seeding $EVENTS accepted events (ledger and both event logs)…"
seed_started=$(date +%s)
psql -q "$DB" -v ON_ERROR_STOP=1 -v n="$EVENTS" <<'SQL'
SET synchronous_commit = off;
SET client_min_messages = warning;
SELECT count(ingest_accepted_events_add_day(d::date)) AS days FROM generate_series(now() - interval '1 day', now(), interval '1 day') d \gset
CREATE TEMP TABLE seed AS
    SELECT gen_random_uuid() AS id, i, now() - interval '20 hours' * (1 - i::float8 / :n) AS at FROM generate_series(1, :n) i;
INSERT INTO ingest_accepted_events (event_id, user_id, accepted_at) SELECT id, 'u' || (i % 300), at FROM seed;
INSERT INTO progress_event_log (event_id, user_id, material_id, client_session_id, event_type, client_timestamp, sequence,
                                active_seconds_delta, kafka_partition, kafka_offset)
    SELECT CASE WHEN i % 2 = 0 THEN upper(id::text) ELSE id::text END, 'u' || (i % 300), 'm' || (i % 50), 's1', 'heartbeat', at, i, 1,
           i % 6, i FROM seed;
INSERT INTO analytics_events (event_id, user_id, client_session_id, material_id, event_type, active_seconds, client_ts,
                              tz_offset_minutes, local_day, received_at)
    SELECT CASE WHEN i % 2 = 0 THEN upper(id::text) ELSE id::text END, 'u' || (i % 300), 's1', 'm' || (i % 50), 'heartbeat', 1, at, 0,
           at::date, at FROM seed;
ANALYZE ingest_accepted_events; ANALYZE progress_event_log; ANALYZE analytics_events;
SQL
echo "seeded in $(( $(date +%s) - seed_started )) s"
dev_stop

# The baseline: the previous version's recovery statement, on the same data.
BASELINE_SQL="WITH kept AS (SELECT DISTINCT dev_broker_journal_event_id(value) AS event_id FROM dev_broker_journal WHERE topic = 'reading.events.v2'),
lost AS (DELETE FROM ingest_accepted_events a
         WHERE (NOT EXISTS (SELECT 1 FROM progress_event_log p WHERE lower(p.event_id) = a.event_id::text)
                OR NOT EXISTS (SELECT 1 FROM analytics_events e WHERE lower(e.event_id) = a.event_id::text))
           AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.event_id = a.event_id::text) RETURNING 1)
SELECT count(*) FROM lost"
start --infra-only
DB="$(dev_value "$HOME_DIR" DATABASE_URL)"
cost=$(psql -At "$DB" -c "EXPLAIN $BASELINE_SQL" | head -1 | sed -E 's/.*cost=[0-9.]+\.\.([0-9.]+).*/\1/')
base_started=$(date +%s.%N)
if PGOPTIONS="-c statement_timeout=${LIMIT}s" psql -v ON_ERROR_STOP=1 -At "$DB" -c "BEGIN" -c "$BASELINE_SQL" -c "ROLLBACK" > /dev/null 2>&1; then
    baseline="$(echo "$(date +%s.%N) - $base_started" | bc) s"
else
    baseline="did not finish within ${LIMIT} s (cancelled)"
fi
# Every start-up statement of the recovery, explained against that data: none may scan a large
# table once per row of another (a Seq Scan under the inner side of a Nested Loop, or in a SubPlan).
PLANS_BAD=0
explain_check() {  # $1: a name, $2: the statement ($1 of it, if any, bound to the epoch)
    if ! PGOPTIONS="-c plan_cache_mode=force_custom_plan" psql -q -v ON_ERROR_STOP=1 -At "$DB" -c "PREPARE s(timestamptz) AS $2" \
        -c "EXPLAIN (FORMAT JSON) EXECUTE s('epoch')" | python3 Benchmarks/dev/plan_check.py "$1"; then
        PLANS_BAD=$((PLANS_BAD + 1)); return 1
    fi
}
CANDIDATES="WITH candidates AS MATERIALIZED (SELECT a.event_id::text AS id FROM ingest_accepted_events a WHERE a.accepted_at >= \$1)"
explain_check "ids since the mark" "SELECT count(*) FROM ingest_accepted_events WHERE accepted_at >= \$1" || true
explain_check "probe by primary key" "$CANDIDATES SELECT c.id FROM candidates c WHERE NOT (EXISTS (SELECT 1 FROM progress_event_log p WHERE p.event_id IN (c.id, upper(c.id))) AND EXISTS (SELECT 1 FROM analytics_events e WHERE e.event_id IN (c.id, upper(c.id))))" || true
explain_check "bulk check" "$CANDIDATES SELECT c.id FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM progress_event_log p WHERE lower(p.event_id) = c.id) UNION SELECT c.id FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM analytics_events e WHERE lower(e.event_id) = c.id)" || true
explain_check "the journal's ids" "SELECT DISTINCT dev_broker_journal_event_id(value) FROM dev_broker_journal WHERE topic = 'reading.events.v2'" || true
explain_check "the mark from the journal" "SELECT least(now(), (SELECT min(kept_at) FROM dev_broker_journal WHERE cluster_id = 'x' AND topic = 'reading.events.v2'))" || true
# The previous version's statement, for comparison (expected to fail the check).
if explain_check "the previous recovery statement" "$BASELINE_SQL"; then
    echo "note: the check did not flag the previous version's statement" >&2
else
    PLANS_BAD=$((PLANS_BAD - 1))
fi

# The first start of this version in a folder: no mark yet.
psql -q "$DB" -c "DELETE FROM dev_recovery_checked"
dev_stop

start ""; first=$ELAPSED
grep -a '"checked the dedup ledger' "$WORK/dev.log" | tail -1 | cut -c1-300 || true
dev_stop
start ""; restart=$ELAPSED
kill -9 "$DEV"; wait "$DEV" 2>/dev/null || true; DEV=""
start ""; killed=$ELAPSED
dev_stop

printf '\n%-44s %s\n' "events in the folder" "$EVENTS"
printf '%-44s %s\n' "previous recovery statement (baseline)" "$baseline; plan cost $cost"
printf '%-44s %.1f s\n' "first start of this version (checks all)" "$first"
printf '%-44s %.1f s\n' "restart after Ctrl-C" "$restart"
printf '%-44s %.1f s\n' "restart after kill -9" "$killed"
if [[ "$PLANS_BAD" -gt 0 ]]; then echo "$PLANS_BAD start-up statement(s) scan a large table once per row of another" >&2; exit 1; fi
