#!/usr/bin/env bash
# Runs the whole test suite, integration tests included, on a fresh Debian machine:
# installs what is missing, starts a throwaway PostgreSQL, runs `swift test`, stops it.
# Kafka needs no setup: the tests start librdkafka's mock cluster on loopback themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/lib/common.sh

ensure_packages
ensure_swift
ensure_python_tools deploy/requirements-test.txt

log "checking the Prometheus configuration and alert rules (promtool) and Alertmanager's routing (amtool)"
promtool check config deploy/prometheus/prometheus.yml >/dev/null
promtool test rules deploy/prometheus/alerts_test.yml
amtool check-config deploy/alertmanager/alertmanager.yml >/dev/null

pg_dir=$(mktemp -d /tmp/backbone-test-pg.XXXXXX)
trap 'pg_stop_throwaway "$pg_dir"' EXIT
port=$(free_port)
log "starting a throwaway PostgreSQL on 127.0.0.1:$port"
export TEST_DATABASE_URL
TEST_DATABASE_URL=$(pg_start_throwaway "$pg_dir" "$port")
export BACKBONE_INTEGRATION=1

log "building"
swift build --build-tests  # the arguments are `swift test`'s (--filter), not the build's
log "testing (integration tests enabled)"
if [ $# -gt 0 ]; then
    # A chosen subset (`deploy/test.sh --filter Suite`): one suite at a time.
    swift test --skip-build --no-parallel "$@"
    exit
fi
# The whole suite in three lanes at once, each running one suite at a time. The integration
# suites spend most of their time waiting (session timeouts, outages, child processes), not
# computing, so three lanes cut the wall time to about a third without starving the
# timing-sensitive checks (heartbeats, idle timeouts) of the two cores. Lanes a and b take the
# longest modules; lane c everything else, so a new test module lands in a lane without being
# listed here. `swift test` itself cannot run twice at once (it locks the build directory), so
# the lanes run the test bundle it built, with the arguments `swift test` would pass it.
bundle="$(swift build --show-bin-path)/ZhixiBackbonePackageTests.xctest"
lane_a='^(FaultTests|KafkaTests|IngestTests)\.'
lane_b='^(RealtimeNotifierTests|BackboneCLITests|AnalyticsAggregatorTests)\.'
run_lane() {
    local name=$1; shift
    "$bundle" --testing-library swift-testing --no-parallel "$@" 2>&1 | sed -u "s/^/[$name] /"
}
run_lane a --filter "$lane_a" & pid_a=$!
run_lane b --filter "$lane_b" & pid_b=$!
run_lane c --skip "$lane_a" --skip "$lane_b" & pid_c=$!
status=0
wait "$pid_a" || { status=1; log "lane a failed"; }
wait "$pid_b" || { status=1; log "lane b failed"; }
wait "$pid_c" || { status=1; log "lane c failed"; }
[ "$status" -eq 0 ] && log "every lane passed"
exit "$status"
