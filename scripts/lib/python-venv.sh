# The PyTorch 2 virtual environment: a function sourced by scripts/setup.sh
# (docs/python.md). Debian's Python is externally managed (no pip into it),
# and its python3-torch is PyTorch 1.13; the importer's PyTorch 2 path runs in
# a venv of Debian's /usr/bin/python3 with the pinned packages of
# scripts/python-requirements.txt.

# rtx_python_venv DIR REQUIREMENTS: creates DIR (python3 -m venv) if it has no
# python, then pip-installs REQUIREMENTS unless every pinned version is
# already installed. With everything present it runs no pip and needs no
# network.
rtx_python_venv() {
  local venv="$1" requirements="$2"
  local met
  met="$(dirname "${BASH_SOURCE[0]}")/python-requirements-met.py"
  if [ ! -x "$venv/bin/python" ]; then
    echo "rtx setup: creating the PyTorch 2 environment $venv"
    /usr/bin/python3 -m venv "$venv" || {
      echo "rtx setup: venv: 'python3 -m venv $venv' failed (Debian: python3-venv)" >&2
      return 1
    }
  fi
  rtx_python_venv_source "$venv"
  if "$venv/bin/python" "$met" "$requirements" 2>/dev/null; then
    return 0
  fi
  "$venv/bin/python" "$met" "$requirements" || true      # say what differs
  echo "rtx setup: venv: pip install -r $requirements (torch pulls CUDA wheels: a few GB, once)"
  "$venv/bin/python" -m pip install --quiet --require-virtualenv -r "$requirements" || {
    echo "rtx setup: venv: pip install failed (is the Python package index reachable?);" \
      "RTX_VENV=0 skips the PyTorch 2 environment" >&2
    return 1
  }
  "$venv/bin/python" "$met" "$requirements"
}

# rtx_python_venv_source DIR: puts the source tree's python/ on the venv's
# path (a .pth file), so that `.venv/bin/python -m rtx ...` runs this
# checkout's rtx without PYTHONPATH.
rtx_python_venv_source() {
  local venv="$1" site pth
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || return 1
  pth="$site/rtx-source.pth"
  local want
  want="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/python"
  if [ ! -f "$pth" ] || [ "$(cat "$pth")" != "$want" ]; then
    echo "$want" >"$pth"
  fi
}
