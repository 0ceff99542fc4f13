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

pg_dir=$(mktemp -d /tmp/backbone-test-pg.XXXXXX)
trap 'pg_stop_throwaway "$pg_dir"' EXIT
port=$(free_port)
log "starting a throwaway PostgreSQL on 127.0.0.1:$port"
export TEST_DATABASE_URL
TEST_DATABASE_URL=$(pg_start_throwaway "$pg_dir" "$port")
export BACKBONE_INTEGRATION=1

log "building"
swift build --build-tests "$@"
log "testing (integration tests enabled)"
# One suite at a time: the integration suites each start brokers, databases and child
# processes, and timing-sensitive checks (heartbeats, idle timeouts) need the two cores.
swift test --skip-build --no-parallel "$@"
