#!/usr/bin/env bash
# Validates docker-compose.yml with the real compose CLI (no Docker engine needed): syntax,
# interpolation and references. Installs the plugin locally first (scripts/install-compose.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

export DOCKER_CONFIG="${DOCKER_CONFIG:-$PWD/.tools/docker}"
bash scripts/install-compose.sh
docker compose -f docker-compose.yml config -q
echo "docker-compose.yml is valid"
