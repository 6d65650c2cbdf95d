#!/usr/bin/env bash
# Installs the Node client stacks' libraries (node-postgres, mysql2, ioredis,
# the MongoDB driver), pinned by package-lock.json, into $1/node/node_modules,
# where tlsbench finds them (NODE_PATH). Idempotent: a no-op when the lock
# file installed there is this one.
set -euo pipefail
dest="${1:?usage: install.sh DESTINATION (the clients directory, e.g. ~/.cache/tlsbench/clients)}"
here="$(cd "$(dirname "$0")" && pwd)"
dir="$dest/node"

if ! command -v npm >/dev/null 2>&1; then
  echo "clients/node/install.sh: npm is missing: apt-get install nodejs npm (Node 20.19 or newer)" >&2
  exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "clients/node/install.sh: Node $(node --version) is too old: the MongoDB driver needs 20.19 or newer" >&2
  exit 1
fi
# The stamp is written last: an install cut short is redone next time.
if [ -d "$dir/node_modules" ] && cmp -s "$here/package-lock.json" "$dir/.installed-lock.json"; then
  exit 0
fi
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
rm -f "$dir/.installed-lock.json"
if ! log=$(cd "$dir" && npm ci --omit=dev --no-audit --no-fund --loglevel=error 2>&1); then
  echo "clients/node/install.sh: npm ci failed in $dir: $(printf '%s\n' "$log" | grep -m1 -i 'err' || printf '%s' "$log" | tail -n1)" >&2
  exit 1
fi
cp "$here/package-lock.json" "$dir/.installed-lock.json"
echo "installed: node client stacks ($(cd "$dir" && node -p 'Object.entries(require("./package.json").dependencies).map(([n,v])=>n+"@"+v).join(" ")')) in $dir/node_modules"
