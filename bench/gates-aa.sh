#!/usr/bin/env bash
# The A/A study of gates (docs/gates.md): how often a @ci95 overhead gate
# fails a build that did not change (false failures), and how often it and
# the round-trip gate catch one that did (detection).
#
# 1. Calibration: AA_CALS runs of connect on a lab PostgreSQL 15, plain vs
#    TLS 1.3 (RSA-2048, P-256 offered: no HelloRetryRequest); the gate's
#    bound is the largest upper end of the 95% interval of TLS's paired
#    overhead on the median connection time (AA_QUANTITY: p50; mean, p99 and
#    rate take every stall of a loaded machine in) over those runs, plus
#    AA_MARGIN percentage points. One run's upper end is itself a random
#    figure: on an idle machine here one calibration run gave 43%, and the
#    upper ends of the next 10 runs of the same command ranged 55-79%.
# 2. A/A: AA_RUNS runs of the same command with the gates
#      connect[tls1.3].overhead.p50 < BOUND% @ci95
#      connect[*].roundtrips.tls-handshake <= 1
#    A failure of either is a false failure.
# 3. Regression: AA_RUNS runs with an RSA-4096 key and Go's default group
#    offer, which PostgreSQL 15 answers with a HelloRetryRequest: the
#    overhead gate should fail, and the round-trip gate at exactly 2.
#
# Every run starts its own lab server (the same build and settings; the key
# is what the regression changes). Each run takes about
# 2 x AA_TRIALS x AA_DURATION plus the server's start. Run it on an idle
# machine: a busy one widens the intervals (fewer false failures, fewer
# detections) and moves the calibration.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${AA_RUNS:-10}"
trials="${AA_TRIALS:-10}"
dur="${AA_DURATION:-1s}"
margin="${AA_MARGIN:-25}"
cals="${AA_CALS:-3}"
quantity="${AA_QUANTITY:-p50}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/tlsbench" ./cmd/tlsbench
tb() { "$tmp/tlsbench" connect --lab postgres --tls off,1.3 -d "$dur" --trials "$trials" --tables 1 --rows 100 -q "$@"; }

# gates FILE: one line per gate: pass|FAIL, value, mean, low, high.
gates() {
  python3 - "$1" <<'PY'
import json, sys
for g in json.load(open(sys.argv[1])).get("gates", []):
    r = lambda x: f"{x:.3g}"
    print("pass" if g["pass"] else "FAIL", r(g["value"]), r(g["mean"]), r(g["low"]), r(g["high"]), g.get("why", ""), sep="\t")
PY
}

# report ARM I: a run's two verdicts (v) in a line.
report() {
  local o r
  IFS=$'\t' read -ra o <<<"${v[0]}"
  IFS=$'\t' read -ra r <<<"${v[1]}"
  local fig="${o[2]}% (95% interval ${o[3]} to ${o[4]}%)"
  [ -z "${o[5]:-}" ] || fig="${o[5]}"
  printf '%-3s %2d: overhead gate %s: %s; round-trip gate %s: %s\n' "$1" "$2" "${o[0]}" "$fig" "${r[0]}" "${r[1]}"
}

high=
for i in $(seq 1 "$cals"); do
  tb --key rsa2048 --group p256 -o "$tmp/cal$i.json" --gate "connect[tls1.3].overhead.$quantity < 1000000% @ci95" >/dev/null 2>&1
  read -r _ h mean low _ < <(gates "$tmp/cal$i.json" | awk -F'\t' '{ print $1, $5, $3, $4 }')
  [[ $h =~ ^-?[0-9.e+-]+$ ]] || { echo "gates-aa.sh: calibration run $i has no interval (upper end '$h'): use more trials (AA_TRIALS)" >&2; exit 1; }
  echo "calibration $i: TLS 1.3 overhead on the connection time's $quantity ${mean}% (95% interval ${low} to ${h}%)"
  high=$(python3 -c "print(max(float('$h'), float('${high:-$h}')))")
done
bound=$(python3 -c "print(round($high + $margin, 1))")
echo "bound: ${bound}% (the largest upper end of $cals calibration runs, ${high}%, +${margin} points)"
echo "runs: $runs per arm, $trials trials of $dur per variant, load $(cut -d' ' -f1-3 /proc/loadavg)"

over="connect[tls1.3].overhead.$quantity < ${bound}% @ci95"
rt='connect[*].roundtrips.tls-handshake <= 1'
false_over=0 false_rt=0 caught_over=0 caught_rt=0
for i in $(seq 1 "$runs"); do
  code=0
  tb --key rsa2048 --group p256 -o "$tmp/a$i.json" --gate "$over" --gate "$rt" >/dev/null 2>"$tmp/a$i.err" || code=$?
  [ "$code" -eq 0 ] || [ "$code" -eq 3 ] || { cat "$tmp/a$i.err" >&2; exit 1; }
  mapfile -t v < <(gates "$tmp/a$i.json")
  [[ ${v[0]} == pass* ]] || false_over=$((false_over + 1))
  [[ ${v[1]} == pass* ]] || false_rt=$((false_rt + 1))
  report A/A "$i"
  echo "    load $(cut -d' ' -f1 /proc/loadavg)"

  code=0
  tb --key rsa4096 -o "$tmp/b$i.json" --gate "$over" --gate "$rt" >/dev/null 2>"$tmp/b$i.err" || code=$?
  [ "$code" -eq 0 ] || [ "$code" -eq 3 ] || { cat "$tmp/b$i.err" >&2; exit 1; }
  mapfile -t v < <(gates "$tmp/b$i.json")
  [[ ${v[0]} == FAIL* ]] && caught_over=$((caught_over + 1))
  # Caught exactly: the gate failed at 2 round trips, no more, no fewer.
  [[ $(cut -f1,2 <<<"${v[1]}") == $'FAIL\t2' ]] && caught_rt=$((caught_rt + 1))
  report B "$i"
done
echo "false failures (A/A): overhead gate $false_over of $runs, round-trip gate $false_rt of $runs"
echo "detections (RSA-4096 + HelloRetryRequest): overhead gate $caught_over of $runs, round-trip gate at exactly 2: $caught_rt of $runs"
