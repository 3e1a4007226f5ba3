#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu base image;
# the default is Ubuntu 22.04, whose python3 is 3.10). It installs Python 3.11 or newer, a
# virtual environment with what the graded tests need, and the unprivileged user that the
# learner's code runs as. Built by tools/make_autograder.py; see labs/README.md.
#
# AUTOGRADER_ROOT (default /autograder) lets a local dry run use another folder.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
LEARNER_USER="course-learner"
export DEBIAN_FRONTEND=noninteractive

python_ok() {  # a Python 3.11+ interpreter that can make virtual environments
  "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

find_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$(command -v "$candidate")"; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

PY="$(find_python || true)"
if [ -z "$PY" ]; then
  echo "setup.sh: installing Python 3.11 (apt)"
  apt-get update -qq
  if ! apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv; then
    # not in this release's archive: the deadsnakes PPA builds it for every supported Ubuntu
    apt-get install -y -qq --no-install-recommends software-properties-common gpg-agent
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv
  fi
  PY="$(find_python)"
fi
echo "setup.sh: using $PY ($("$PY" --version))"

"$PY" -m venv "$ROOT/venv"
"$ROOT/venv/bin/python" -m pip install --quiet --no-cache-dir --upgrade pip
"$ROOT/venv/bin/python" -m pip install --quiet --no-cache-dir -r "$SOURCE/requirements.txt"
"$ROOT/venv/bin/python" -c 'import pytest, pytest_timeout, defusedxml, numpy, grpc; print("setup.sh: environment ready")'

# the learner's functions run as this user (grading/sandbox.py, --run-as auto); it needs the
# interpreter and its packages, nothing else of the autograder (run_autograder makes the
# source folder root-only before each grading)
if ! id -u "$LEARNER_USER" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$LEARNER_USER"
fi
chmod -R a+rX "$ROOT/venv"
chmod 755 "$ROOT"
chmod -R go-rwx "$SOURCE"
chmod 711 "$SOURCE"
chmod 700 "$SOURCE/run_autograder" "$SOURCE/setup.sh"
