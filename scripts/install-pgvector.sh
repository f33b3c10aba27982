#!/usr/bin/env bash
# Builds pgvector for the local PostgreSQL from Debian trixie's source package.
# Debian bookworm ships no pgvector; this never edits /etc/apt: it uses a private apt folder.
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
SHAREDIR="$("$PG_CONFIG" --sharedir 2>/dev/null || echo "/usr/share/postgresql/${PG_MAJOR}")"

if [ -f "${SHAREDIR}/extension/vector.control" ]; then
  echo "pgvector already installed for PostgreSQL ${PG_MAJOR}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

$SUDO apt-get install -y "postgresql-server-dev-${PG_MAJOR}" make gcc dpkg-dev >/dev/null 2>&1 || {
  $SUDO apt-get update >/dev/null
  $SUDO apt-get install -y "postgresql-server-dev-${PG_MAJOR}" make gcc dpkg-dev
}

# shellcheck source=lib/trixie-apt.sh
. "$(dirname "$0")/lib/trixie-apt.sh"
trixie_apt deb-src
trap 'rm -rf "$APT_DIR"' EXIT
D="$APT_DIR"
mkdir -p "$D/src"
(cd "$D/src" && apt-get "${APT_OPTS[@]}" source pgvector >/dev/null)
SRCDIR="$(find "$D/src" -maxdepth 1 -mindepth 1 -type d -name 'pgvector-*' | head -n 1)"
make -C "$SRCDIR" PG_CONFIG="$PG_CONFIG" >/dev/null
$SUDO make -C "$SRCDIR" PG_CONFIG="$PG_CONFIG" install >/dev/null
echo "pgvector installed for PostgreSQL ${PG_MAJOR} from $(basename "$SRCDIR")"
