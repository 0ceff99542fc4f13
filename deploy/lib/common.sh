# Shared by deploy/dev.sh and deploy/test.sh: install what is missing, find the toolchain.
# shellcheck shell=bash

# Debian bookworm packages the build, the dev stack and the tests need.
BACKBONE_APT_PACKAGES=(
  pkg-config librdkafka-dev libpq-dev libmicrohttpd-dev libwebsockets-dev libwebsockets-evlib-ev libev4 libssl-dev
  liblz4-dev libyajl-dev zlib1g-dev libpng-dev libwebp-dev libcurl4-openssl-dev gltfpack postgresql postgresql-client kcat
  python3 python3-pip python3-venv
  curl ca-certificates procps nginx-light jq wrk
  prometheus  # promtool (alert rule tests, metric lint) and the server the dashboard test evaluates against
  prometheus-alertmanager  # amtool: checks deploy/alertmanager/alertmanager.yml
  libargon2-dev  # Argon2id password hashes of backbone dev's embedded auth server
)

log() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages that are not installed yet (apt-get update first).
ensure_packages() {
  local missing=()
  for p in "${BACKBONE_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Python tools (the tests' independent clients, SeaweedFS's `weed`) live in a project-local
# virtual environment, .venv, put first on PATH so `python3`, `pip` and `weed` resolve to it.
ensure_venv() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  BACKBONE_VENV="$root/.venv"
  if [ ! -x "$BACKBONE_VENV/bin/python3" ]; then
    log "creating the Python virtual environment $BACKBONE_VENV"
    python3 -m venv "$BACKBONE_VENV"
  fi
  export BACKBONE_VENV PATH="$BACKBONE_VENV/bin:$PATH"
}

# Installs requirement file $1 into .venv; pip leaves satisfied ones alone.
ensure_python_tools() {
  local req="$1"
  ensure_venv
  log "checking Python tools ($req)"
  "$BACKBONE_VENV/bin/pip" install -q --disable-pip-version-check -r "$req"
}

# The Swift 6.3 toolchain cannot come from apt; it must already be on the machine.
ensure_swift() {
  if ! command -v swift >/dev/null 2>&1; then
    for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
      [ -x "$d/swift" ] && export PATH="$d:$PATH" && break
    done
  fi
  command -v swift >/dev/null 2>&1 || { echo "swift (6.3) is not installed; see README.md" >&2; exit 1; }
}

# Directory holding initdb/pg_ctl of the newest installed PostgreSQL.
pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] || { echo "PostgreSQL server binaries not found" >&2; exit 1; }
  echo "$d"
}

# Runs a PostgreSQL binary as a non-root user (initdb refuses root).
pg_run() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home /var/lib/postgresql --shell /bin/bash postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Starts a throwaway cluster in $1 on port $2 (loopback only). Prints its URL.
pg_start_throwaway() {
  local dir="$1" port="$2" bin
  bin=$(pg_bindir)
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && { id postgres >/dev/null 2>&1 || useradd --system --home /var/lib/postgresql --shell /bin/bash postgres; chown -R postgres "$dir"; }
  pg_run "$bin/initdb" -D "$dir/data" --auth=trust -U postgres -E UTF8 >/dev/null
  pg_run "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
  echo "postgres://postgres@127.0.0.1:$port/postgres"
}

pg_stop_throwaway() {
  local dir="$1"
  [ -d "$dir/data" ] && pg_run "$(pg_bindir)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

# A free TCP port on loopback.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
