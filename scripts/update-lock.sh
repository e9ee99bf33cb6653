#!/usr/bin/env bash
# Rewrites scripts/debian-packages.lock from what is installed: every package
# of scripts/setup.sh's PACKAGES list at its installed version
# (docs/supply-chain.md). Run it after adding a package to PACKAGES or after
# upgrading on purpose, and commit the result.
#
#   scripts/update-lock.sh [LOCK_FILE]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="${1:-$ROOT/scripts/debian-packages.lock}"

mapfile -t packages < <("$ROOT/scripts/setup.sh" --print-packages)
declare -A version=()
while IFS=$'\t' read -r pkg status ver; do
  [ "$status" = "install ok installed" ] && version[$pkg]="$ver"
done < <(dpkg-query -W -f='${Package}\t${Status}\t${Version}\n' "${packages[@]}" 2>/dev/null)

missing=()
for pkg in "${packages[@]}"; do
  [ -n "${version[$pkg]+x}" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "update-lock: not installed: ${missing[*]} (run scripts/setup.sh first)" >&2
  exit 1
fi

. /etc/os-release
tmp="$(mktemp "$LOCK.XXXXXX")"
{
  echo "# Debian packages of scripts/setup.sh at the versions rtx is built and tested"
  echo "# with ($PRETTY_NAME, $(dpkg --print-architecture)). Written by"
  echo "# scripts/update-lock.sh; checked by scripts/setup.sh (docs/supply-chain.md)."
  for pkg in $(printf '%s\n' "${packages[@]}" | sort -u); do
    echo "$pkg=${version[$pkg]}"
  done
} >"$tmp"
mv "$tmp" "$LOCK"
echo "update-lock: wrote ${#packages[@]} packages to $LOCK"
