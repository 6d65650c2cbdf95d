#!/usr/bin/env bash
# The port-exhaustion check: a plain connect run at full speed on loopback for
# 60 s (PORTS_SECONDS) must finish without a single EADDRNOTAVAIL ("no free
# port") or any other error. Prints connections, rate, errors and TIME_WAIT.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${PORTS_SECONDS:-60}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/tlsbench" ./cmd/tlsbench
"$tmp/tlsbench" connect builtin --tls off -c 4 -d "${secs}s" --trials 1 -o "$tmp/r.json" >/dev/null &
pid=$!
sleep $((secs / 2))
tw=$(ss -tan state time-wait | tail -n +2 | wc -l)
wait "$pid"
python3 - "$tmp/r.json" "$tw" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["trials"][0]
errs = t.get("errors") or {}
secs = t["elapsed_ns"] / 1e9
print(f"connections: {t['ops']} in {secs:.1f} s = {t['ops']/secs:.0f}/s")
print(f"errors: {sum(errs.values())} {errs if errs else ''}")
print(f"TIME_WAIT sockets half way: {sys.argv[2]}")
for n in r.get("notes", []):
    print("note:", n)
sys.exit(1 if errs else 0)
PY
