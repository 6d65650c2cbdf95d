#!/usr/bin/env bash
# shards.sh: one run with C workers against the same plan split over 2 shard
# processes of C/2 workers each (--shard I/2, one --start-at), merged, on one
# built-in server, interleaved: single, shards, single, shards, ...
#
# The figure is merged ops/s / single ops/s per round, with the mean, min and
# max over rounds: near 1 when splitting a run over processes costs nothing
# (on one machine the shards share its cores with each other and the server,
# as the single run's workers do). This is a benchmark, not a test: it fails
# only when a tool fails, never on a ratio.
#
# Settings (environment):
#   SHARDS_EXP=connect   experiment: connect (new TLS connections) or pool
#   SHARDS_C=4           workers of the single run (each shard runs half)
#   SHARDS_D=3s          -d of each trial
#   SHARDS_ROUNDS=3      rounds
#   TLSBENCH=path        use this binary instead of building ./cmd/tlsbench
# Defaults take about a minute.
set -euo pipefail

EXP=${SHARDS_EXP:-connect}
C=${SHARDS_C:-4}
D=${SHARDS_D:-3s}
ROUNDS=${SHARDS_ROUNDS:-3}

die() { echo "shards.sh: $*" >&2; exit 1; }
[[ $EXP =~ ^(connect|pool)$ ]] || die "SHARDS_EXP=$EXP: use connect or pool"
[[ $C =~ ^[1-9][0-9]*$ ]] && ((C % 2 == 0)) || die "SHARDS_C=$C: use an even number of workers"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "SHARDS_ROUNDS=$ROUNDS: use a positive number"
command -v jq >/dev/null 2>&1 || die "jq is missing: run scripts/install.sh bench"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsbench-shards.XXXXXX")
srv_pid=
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  if [ -n "$srv_pid" ]; then kill -TERM "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "shards.sh: interrupted" >&2; exit 130' INT

if [ -n "${TLSBENCH:-}" ]; then
  bin=$TLSBENCH
else
  (cd "$root" && go build -o "$tmp/tlsbench" ./cmd/tlsbench) || die "go build ./cmd/tlsbench failed"
  bin=$tmp/tlsbench
fi

"$bin" serve --key ecdsa-p256 --http "" --https 127.0.0.1:0 --size 1024 >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv_pid=$!
url='' ca=''
for _ in $(seq 100); do
  url=$(awk '$1 == "https" { print $2 }' "$tmp/serve.out")
  ca=$(awk '$1 == "ca" { print $2 }' "$tmp/serve.out")
  [ -n "$url" ] && [ -n "$ca" ] && break
  kill -0 "$srv_pid" 2>/dev/null || die "tlsbench serve exited: $(head -c 300 "$tmp/serve.err")"
  sleep 0.1
done
[ -n "$url" ] && [ -n "$ca" ] || die "tlsbench serve printed no listener in 10 s"

args=("$EXP" "$url" --ca "$ca" --tls 1.3 -d "$D" --trials 1)
opsps() { jq '[.trials[] | .ops / (.elapsed_ns / 1e9)] | add' "$1"; }

echo "shards.sh: $EXP $url TLS 1.3, -d $D: -c $C in one process vs 2 shards x -c $((C / 2)), $ROUNDS rounds"
ratios=()
for r in $(seq "$ROUNDS"); do
  "$bin" "${args[@]}" -c "$C" -o "$tmp/single-$r.json" >/dev/null 2>"$tmp/single.err" || die "single run: $(tail -1 "$tmp/single.err")"
  start=$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%SZ)
  pids=()
  for i in 0 1; do
    "$bin" "${args[@]}" -c "$C" --shard "$i/2" --start-at "$start" -o "$tmp/shard-$r-$i.json" >/dev/null 2>"$tmp/shard-$i.err" &
    pids+=($!)
  done
  for i in 0 1; do wait "${pids[$i]}" || die "shard $i/2: $(tail -1 "$tmp/shard-$i.err")"; done
  pids=()
  "$bin" merge "$tmp/shard-$r-0.json" "$tmp/shard-$r-1.json" -o "$tmp/merged-$r.json" >/dev/null 2>"$tmp/merge.err" || die "merge: $(tail -1 "$tmp/merge.err")"
  single=$(opsps "$tmp/single-$r.json")
  merged=$(opsps "$tmp/merged-$r.json")
  skew=$(jq '.skew.start_spread_ns / 1e6' "$tmp/merged-$r.json")
  late=$(jq '[.shards[].slots[] | select(.late_ns or .overrun_ns)] | length' "$tmp/merged-$r.json")
  ratio=$(awk "BEGIN { printf \"%.3f\", $merged / $single }")
  ratios+=("$ratio")
  printf 'round %d: single %.0f ops/s, 2 shards merged %.0f ops/s, ratio %s (shards started %.1f ms apart; %d slots missed)\n' \
    "$r" "$single" "$merged" "$ratio" "$skew" "$late"
done
printf '%s\n' "${ratios[@]}" | awk '{ s += $1; if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1 }
  END { printf "ratio merged/single: mean %.3f (min %.3f, max %.3f) over %d rounds\n", s / NR, lo, hi, NR }'
