# Debian package lock: functions sourced by scripts/setup.sh and
# scripts/check-lock.sh (docs/supply-chain.md).
#
# The lock file has one `package=version` a line (dpkg's version string,
# epoch included); `#` starts a comment. scripts/update-lock.sh writes it from
# what is installed.
#
# RTX_STRICT_LOCK=1 turns every difference into an error: a package installed
# at another version, a package missing from the lock, a locked version that
# the archive no longer has.

declare -gA RTX_LOCK=()     # package -> locked version
declare -ga RTX_MISSING=()  # packages asked for but not installed
RTX_LOCK_FILE=""

rtx_lock_say() { echo "rtx setup: lock: $*" >&2; }

# rtx_lock_read FILE: fills RTX_LOCK. A malformed line is an error naming
# FILE:LINE.
rtx_lock_read() {
  RTX_LOCK_FILE="$1"
  RTX_LOCK=()
  if [ ! -f "$RTX_LOCK_FILE" ]; then
    rtx_lock_say "$RTX_LOCK_FILE does not exist (scripts/update-lock.sh writes it)"
    return 1
  fi
  local n=0 line pkg ver
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [ -z "$line" ] && continue
    pkg="${line%%=*}"
    ver="${line#*=}"
    if [ "$pkg" = "$line" ] || [ -z "$pkg" ] || [ -z "$ver" ]; then
      rtx_lock_say "$RTX_LOCK_FILE:$n: expected package=version, got '$line'"
      return 1
    fi
    RTX_LOCK[$pkg]="$ver"
  done <"$RTX_LOCK_FILE"
}

# rtx_lock_compare PKG...: one dpkg-query call for all of them. Fills
# RTX_MISSING with the packages that are not installed and prints one line
# per installed package whose version differs from the lock (or that the lock
# lacks). Returns 1 if there was a difference and RTX_STRICT_LOCK=1.
rtx_lock_compare() {
  RTX_MISSING=()
  local -A installed=()
  local pkg status ver diffs=0
  # Unknown packages make dpkg-query complain on stderr and exit 1; they
  # simply stay out of `installed`.
  while IFS=$'\t' read -r pkg status ver; do
    [ "$status" = "install ok installed" ] && installed[$pkg]="$ver"
  done < <(dpkg-query -W -f='${Package}\t${Status}\t${Version}\n' "$@" 2>/dev/null)
  for pkg in "$@"; do
    if [ -z "${installed[$pkg]+x}" ]; then
      RTX_MISSING+=("$pkg")
    elif [ -z "${RTX_LOCK[$pkg]+x}" ]; then
      rtx_lock_say "$pkg is installed at ${installed[$pkg]} but not locked in $RTX_LOCK_FILE (run scripts/update-lock.sh)"
      diffs=1
    elif [ "${installed[$pkg]}" != "${RTX_LOCK[$pkg]}" ]; then
      rtx_lock_say "$pkg installed ${installed[$pkg]}, locked ${RTX_LOCK[$pkg]} ($RTX_LOCK_FILE)"
      diffs=1
    fi
  done
  if [ $diffs -ne 0 ] && [ "${RTX_STRICT_LOCK:-0}" = 1 ]; then
    rtx_lock_say "RTX_STRICT_LOCK=1: installed packages differ from the lock (above)"
    return 1
  fi
  return 0
}

# rtx_lock_install PKG...: apt-get installs each package at its locked
# version. A locked version the archive no longer has is replaced by the
# candidate with a loud warning, or is an error with RTX_STRICT_LOCK=1.
rtx_lock_install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq || return 1
  local -a args=()
  local pkg want candidate failed=0
  for pkg in "$@"; do
    want="${RTX_LOCK[$pkg]:-}"
    candidate="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')"
    if [ -z "$want" ]; then
      rtx_lock_say "WARNING: $pkg is not in $RTX_LOCK_FILE; installing the archive's ${candidate:-(none)} (run scripts/update-lock.sh)"
      [ "${RTX_STRICT_LOCK:-0}" = 1 ] && failed=1
      args+=("$pkg")
    elif apt-cache madison "$pkg" 2>/dev/null |
         awk -F'|' -v v="$want" '{gsub(/ /, "", $2)} $2 == v {found = 1} END {exit !found}'; then
      # (`apt-cache show pkg=version` exits 0 for a version it lacks.)
      args+=("$pkg=$want")
    else
      {
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!! rtx setup: WARNING: the archive no longer has the locked version of $pkg"
        echo "!!   locked:    $want ($RTX_LOCK_FILE)"
        echo "!!   candidate: ${candidate:-(none: the package is not in the archive)}"
        if [ "${RTX_STRICT_LOCK:-0}" = 1 ]; then
          echo "!! RTX_STRICT_LOCK=1: not installing it"
        else
          echo "!! installing the candidate: this build is NOT the locked one"
        fi
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
      } >&2
      if [ "${RTX_STRICT_LOCK:-0}" = 1 ] || [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        failed=1
      else
        args+=("$pkg")
      fi
    fi
  done
  if [ $failed -ne 0 ]; then
    rtx_lock_say "not installing: locked versions are unavailable (above)"
    return 1
  fi
  echo "rtx setup: installing ${args[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    --allow-downgrades "${args[@]}"
}
