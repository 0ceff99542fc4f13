#!/usr/bin/env bash
# Runs the whole system on this machine: installs what is missing, builds, and starts
# `backbone dev` (embedded Kafka broker, private PostgreSQL under .backbone/, all services).
# Extra arguments go to `backbone dev` (e.g. --infra-only).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/lib/common.sh

ensure_packages
ensure_swift
log "building"
swift build --product backbone
exec .build/debug/backbone dev "$@"
