#!/bin/sh
# What `make setup` needs from the host, with or without root.
#   host.sh python [PYTHON]  print a Python >= 3.11 that can make a venv: PYTHON if given, else the
#                            first of python3, python3.13, python3.12, python3.11 on PATH
#   host.sh system-deps      as root (or with password-less sudo) apt-get install what is missing
#                            (bubblewrap, python3-venv); without root install nothing and say, in
#                            one line, which sandbox backends remain and how to get one
# Every failure is one line on stderr.
set -u

usable() {  # a Python >= 3.11 with venv and ensurepip (Debian ships them in python3-venv)
  "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

find_python() {
  if [ -n "${1:-}" ]; then
    if usable "$1"; then command -v "$1"; return 0; fi
    echo "error: PYTHON=$1 is not a Python >= 3.11 with venv and ensurepip" >&2
    return 1
  fi
  for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 && usable "$candidate"; then
      command -v "$candidate"
      return 0
    fi
  done
  echo "error: no Python >= 3.11 with venv on PATH (tried python3, python3.13, python3.12," \
    "python3.11): load one (e.g. module load python/3.11) or set PYTHON=/path/to/python3" >&2
  return 1
}

as_root() {  # run as root: we are root, or sudo works without a password
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then sudo -n "$@"
  else return 1
  fi
}

system_deps() {
  missing=""
  command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
  if ! find_python "${PYTHON:-}" >/dev/null 2>&1; then missing="$missing python3-venv"; fi
  [ -z "$missing" ] && return 0
  if command -v apt-get >/dev/null 2>&1 && as_root true; then
    echo "installing system packages:$missing"
    as_root apt-get update -qq && as_root apt-get install -y -qq $missing >/dev/null
    return
  fi
  case "$missing" in *bubblewrap*) ;; *) return 0 ;; esac  # the venv step names a missing Python
  found=""
  for engine in docker podman apptainer singularity; do
    command -v "$engine" >/dev/null 2>&1 && found="$found $engine"
  done
  echo "no root, so no bubblewrap installed; sandbox backends on PATH:${found:- none}" \
    "(make demo checks which works); to get one: module load apptainer, or ask your admins" \
    "for bubblewrap; runtime.backend: local runs agent code UNSANDBOXED (trusted code only)"
}

case "${1:-}" in
  python) find_python "${2:-}" ;;
  system-deps) system_deps ;;
  *) echo "usage: $0 python [PYTHON] | system-deps" >&2; exit 2 ;;
esac
