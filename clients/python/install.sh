#!/usr/bin/env bash
# Installs the Python stacks' libraries (requirements.txt, pinned with
# hashes) into a venv at $1/python/venv made with the machine's python3;
# mysqlclient is built against Debian's libmariadb (libmariadb-dev and
# pkg-config from apt). Called by scripts/install-clients.sh. Idempotent:
# a venv installed from the same requirements is kept.
set -euo pipefail
dest=${1:?usage: install.sh DESTINATION}
here="$(cd "$(dirname "$0")" && pwd)"
venv="$dest/python/venv"
python=${PYTHON:-python3}
fail() { echo "clients/python/install.sh: $*" >&2; exit 1; }

command -v "$python" >/dev/null || fail "no $python: install Python 3.11 (apt-get install python3 python3-venv)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "$python is older than 3.9"
# The stamp: what the venv was installed from, and by which python.
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
if [ -x "$venv/bin/python3" ] && [ "$(cat "$venv/.tlsbench-installed" 2>/dev/null)" = "$want" ]; then
  exit 0
fi

if ! pkg-config --exists libmariadb 2>/dev/null; then
  [ "$(id -u)" -eq 0 ] || fail "mysqlclient needs libmariadb-dev and pkg-config: apt-get install libmariadb-dev pkg-config (as root)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends libmariadb-dev pkg-config >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends libmariadb-dev pkg-config >/dev/null; } ||
    fail "apt-get install libmariadb-dev pkg-config failed"
fi

rm -rf "$venv"
"$python" -m venv "$venv" || fail "$python -m venv failed (Debian: apt-get install python3-venv)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt" >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  rm -rf "$venv"
  fail "pip install -r clients/python/requirements.txt failed"
fi
"$venv/bin/python3" -c 'import psycopg, psycopg_pool, MySQLdb, pymysql, redis, pymongo, urllib3' ||
  fail "the venv cannot import its stacks"
echo "$want" >"$venv/.tlsbench-installed"
