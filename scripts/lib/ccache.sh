# shellcheck shell=bash
# The compiler launcher of rtx's builds (scripts/setup.sh, scripts/sanitize.sh):
# ccache, with this clone's root as its base directory, so that a clone in
# another folder (and CI's checkout) hits the objects another clone compiled.
# ccache rewrites the absolute paths under the base directory into paths
# relative to the compiler's working directory, which are the same in every
# clone; hash_dir off keeps the working directory out of the key of objects
# with debug information (the sanitizer build's -gline-tables-only). Depend
# mode keys objects by the compiler's own dependency list (-MD, which Ninja
# builds pass), so a miss costs no extra preprocessor run: a fresh CI machine,
# whose cache is empty, compiles about as fast as without ccache.
# Sets RTX_CCACHE_ARGS to the CMake arguments (empty without ccache, or when
# the caller chose a launcher through CMAKE_CXX_COMPILER_LAUNCHER).
rtx_ccache_args() {
  local root=$1
  RTX_CCACHE_ARGS=()
  if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] || ! command -v ccache >/dev/null; then
    return 0
  fi
  local launcher="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=true;CCACHE_DEPEND=true;ccache"
  RTX_CCACHE_ARGS=("-DCMAKE_C_COMPILER_LAUNCHER=$launcher"
                   "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher")
}
