#!/usr/bin/env bash
# Installs Debian's Chromium for the web playground's browser test (test/e2e/ui.test.ts drives it
# with playwright-core). Idempotent: does nothing when /usr/bin/chromium exists.
set -euo pipefail
if [ -x /usr/bin/chromium ] || [ -n "${CHROMIUM_PATH:-}" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no apt-get here; install Chromium yourself and set CHROMIUM_PATH for test/e2e/ui.test.ts" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
