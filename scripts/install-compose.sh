#!/usr/bin/env bash
# Makes `docker compose` (the v2 CLI plugin) available without a Docker engine, for validating
# docker-compose.yml. Debian bookworm has no compose v2 package; trixie's `docker-compose` (2.26)
# needs only libc6 >= 2.34, so it is downloaded through a private apt folder (never edits /etc/apt)
# and unpacked with `dpkg -x`: nothing is installed system-wide and no root is needed.
# Usage: bash scripts/install-compose.sh   then   DOCKER_CONFIG="$PWD/.tools/docker" docker compose ...
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS="$PWD/.tools"
export DOCKER_CONFIG="${DOCKER_CONFIG:-$TOOLS/docker}"
PLUGIN="$DOCKER_CONFIG/cli-plugins/docker-compose"

if [ ! -x "$PLUGIN" ]; then
  # shellcheck source=lib/trixie-apt.sh
  . scripts/lib/trixie-apt.sh
  trixie_apt deb
  trap 'rm -rf "$APT_DIR"' EXIT
  D="$APT_DIR"
  mkdir -p "$D/deb" "$D/root"
  APT_OPTS+=(-o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
  (cd "$D/deb" && apt-get "${APT_OPTS[@]}" download docker-compose >/dev/null)
  dpkg -x "$D"/deb/docker-compose_*.deb "$D/root"
  mkdir -p "$(dirname "$PLUGIN")"
  install -m 755 "$D/root/usr/libexec/docker/cli-plugins/docker-compose" "$PLUGIN"
fi

docker compose version
