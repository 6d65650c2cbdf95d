#!/usr/bin/env bash
# Installs the libraries of the client stacks tlsbench runs besides Go's
# (--client; clients/PROTOCOL.md), pinned, from PyPI, npm and Maven
# Central, into $TLSBENCH_CLIENTS (default ~/.cache/tlsbench/clients).
# Each language's clients/<lang>/install.sh does its own part. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export TLSBENCH_CLIENTS="${TLSBENCH_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/tlsbench/clients}"
mkdir -p "$TLSBENCH_CLIENTS"
for part in "$root"/clients/*/install.sh; do
  [ -e "$part" ] || continue
  bash "$part" "$TLSBENCH_CLIENTS"
done
