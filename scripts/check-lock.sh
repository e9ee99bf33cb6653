#!/usr/bin/env bash
# Compares the installed Debian packages with the lock file, without
# installing or building anything (what scripts/setup.sh does first).
# Prints one line per difference; exits 0 unless RTX_STRICT_LOCK=1 and there
# is one, or a locked package is not installed (exit 2).
#
#   scripts/check-lock.sh [LOCK_FILE]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/debian-lock.sh
source "$ROOT/scripts/lib/debian-lock.sh"
rtx_lock_read "${1:-$ROOT/scripts/debian-packages.lock}"
mapfile -t packages < <("$ROOT/scripts/setup.sh" --print-packages)
# Also what the lock holds beyond PACKAGES.
for pkg in "${!RTX_LOCK[@]}"; do packages+=("$pkg"); done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
rtx_lock_compare "${packages[@]}"
if [ ${#RTX_MISSING[@]} -gt 0 ]; then
  rtx_lock_say "not installed: ${RTX_MISSING[*]} (scripts/setup.sh installs them)"
  exit 2
fi
