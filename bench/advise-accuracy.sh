#!/usr/bin/env bash
# advise-accuracy.sh: how close tlsbench advise's predictions come to what
# a lab replay of the same profile measures (advise --confirm), per change
# and engine.
#
#   pg-tls12   pgbench -C (libpq, OpenSSL 3.0) over TLS 1.2 against the lab's
#              PostgreSQL 15 with an RSA-2048 key: TLS 1.3, ECDSA, direct TLS,
#              pooling, TLS off
#   pg-tls13   the same over TLS 1.3: libpq's X25519 key share meets PostgreSQL
#              15's P-256, so every connection pays a HelloRetryRequest
#   https-tls12  curl (OpenSSL 3.0), a new connection per request, against
#              tlsbench serve --tls-max 1.2 (Go): TLS 1.3, ECDSA, resumption,
#              pooling, TLS off
#
# Each capture is taken with tlsbench wire --capture lo while the client
# runs, then advised with --confirm and --calibration: a lab connect run
# on the same engine (PostgreSQL 15, the built-in server) whose CPU per
# connection gives the CPU predictions the replay then checks. The table prints, per change and
# figure, the saving per connection predicted from the capture and the one
# the replay measured (paired with now, ±95% interval over trials), and the
# error (the measured saving's difference from the predicted, % of the
# predicted). This is a benchmark, not a test: it fails only when a tool
# fails, never on an error.
#
# Settings (environment):
#   ACC_CONNS=200    connections per capture
#   ACC_TRIALS=3     --confirm trials per variant
#   ACC_D=2s         --confirm trial length
#   ACC_OUT=dir      keep each capture's advise result (NAME.json) and text there
#   TLSBENCH=path    use this binary instead of building ./cmd/tlsbench
# Defaults take about 6-8 minutes on a quiet machine.
set -euo pipefail

CONNS=${ACC_CONNS:-200}
TRIALS=${ACC_TRIALS:-3}
D=${ACC_D:-2s}

die() { echo "advise-accuracy.sh: $*" >&2; exit 1; }
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "ACC_CONNS=$CONNS: use a positive number"
for tool in pgbench curl jq; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install.sh bench"
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
umask 077 # the lab's password file lives under the temp dir's sibling
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsbench-advise-accuracy.XXXXXX")
lab_pid=
serve_pid=

cleanup() {
  local p
  for p in $serve_pid $lab_pid; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "advise-accuracy.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

if [ -n "${TLSBENCH:-}" ]; then
  bin=$TLSBENCH
else
  (cd "$root" && go build -o "$tmp/tlsbench" ./cmd/tlsbench) || die "go build ./cmd/tlsbench failed"
  bin=$tmp/tlsbench
fi

# --- the servers the captures are made against ---------------------------
echo "starting the lab postgres and tlsbench serve ..." >&2
"$bin" lab postgres --key rsa2048 >"$tmp/lab.out" 2>"$tmp/lab.err" &
lab_pid=$!
"$bin" serve --tls-max 1.2 --http "" --https 127.0.0.1:0 --size 16 --json >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 1200); do
  grep -q '^Ctrl-C stops the servers' "$tmp/lab.out" && [ -s "$tmp/serve.out" ] && break
  kill -0 "$lab_pid" 2>/dev/null || die "tlsbench lab exited: $(tail -c 400 "$tmp/lab.err" | tr '\n' ' ')"
  kill -0 "$serve_pid" 2>/dev/null || die "tlsbench serve exited: $(tail -c 400 "$tmp/serve.err" | tr '\n' ' ')"
  sleep 0.1
done
pg_url=$(awk '$1 == "scram-sha-256" { print $NF; exit }' "$tmp/lab.out")
[ -n "$pg_url" ] || die "no PostgreSQL URL in the lab's output"
pg_port=$(sed -E 's|.*@[^:]+:([0-9]+)/.*|\1|' <<<"$pg_url")
https=$(jq -r '.https.rsa2048 // empty' "$tmp/serve.out")
[ -n "$https" ] || die "no HTTPS address from tlsbench serve: $(cat "$tmp/serve.out")"
https_port=${https##*:}
echo "SELECT 1;" >"$tmp/select.sql"

# capture NAME PORT -- COMMAND...: a capture of COMMAND's connections.
capture() {
  local name=$1 port=$2
  shift 3
  "$bin" wire --capture lo --port "$port" --keep-capture "$tmp/$name.pcap" -o "$tmp/$name.wire.json" -- "$@" >"$tmp/$name.out" 2>&1 ||
    die "$name: the capture failed: $(tail -c 600 "$tmp/$name.out" | tr '\n' ' ')"
}

# calibrate NAME ARGS...: a lab connect run, the CPU predictions' source.
calibrate() {
  local name=$1
  shift
  "$bin" connect "$@" --tls off,1.2,1.3 --key rsa2048,ecdsa-p256 --trials "$TRIALS" -d "$D" -q -o "$tmp/$name.json" >"$tmp/$name.txt" 2>&1 ||
    die "$name: the calibration failed: $(tail -c 600 "$tmp/$name.txt" | tr '\n' ' ')"
}

# confirm NAME PORT CALIBRATION: advise --confirm on the capture, the
# table printed.
confirm() {
  local name=$1 port=$2 cal=$3
  "$bin" advise "$tmp/$name.pcap" --port "$port" --calibration "$tmp/$cal.json" --confirm --trials "$TRIALS" -d "$D" -q -o "$tmp/$name.json" >"$tmp/$name.txt" 2>"$tmp/$name.err" ||
    die "$name: advise --confirm failed: $(tail -c 600 "$tmp/$name.err" | tr '\n' ' ')"
  if [ -n "${ACC_OUT:-}" ]; then mkdir -p "$ACC_OUT" && cp "$tmp/$name.json" "$tmp/$name.txt" "$ACC_OUT/"; fi
  jq -r --arg name "$name" '
    def n: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;
    .advise[] | .profile as $p | .replays as $r |
    "\($name): \($p.engine) \($p.conns) connections at \($p.rate.mean * 10 | round / 10)/s, RTT p50 \($p.rtt_ms.p50 | n) ms; replay: \([$r[] | "\(.lab) at \(.rate // 0)/s, \(.trials) trials"] | join("; "))",
    (.advice[] | select(.not_applicable | not) | . as $c |
      "  \($c.change)\t round trips\t\($c.round_trips_saved | n)\t\($c.round_trips_measured | n)\t\(if $c.round_trips_measured == null then ($c.unmeasured // "-") elif $c.round_trips_measured == $c.round_trips_saved then "exact" else "missed" end)",
      ([["setup ms", $c.setup_ms], ["server CPU ms", $c.server_cpu_ms], ["client CPU ms", $c.client_cpu_ms], ["bytes", $c.bytes]][] |
        select(.[1].measured != null) | .[0] as $k | .[1] as $f |
        "  \($c.change)\t \($k)\t\(if $f.predicted == null then "-" else ($f.now - $f.predicted | n) end)\t\($f.now - $f.measured | n) ±\($f.measured_ci | n)\t\(if $f.error_pct == null then "-" else "\($f.error_pct)%" end)"))' "$tmp/$name.json"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "load before: $(load)"
calibrate cal-pg --lab postgres --workload ping --tables 1 --rows 100
calibrate cal-https builtin --resume off,on
echo "load after the calibrations: $(load)"
printf '  %s\t %s\t%s\t%s\t%s\n' change figure "predicted saved" "measured saved" error

q="sslmode=require"
capture pg-tls12 "$pg_port" -- pgbench -C -n -t "$CONNS" -f "$tmp/select.sql" "$pg_url&$q&ssl_max_protocol_version=TLSv1.2"
confirm pg-tls12 "$pg_port" cal-pg
echo "load: $(load)"

capture pg-tls13 "$pg_port" -- pgbench -C -n -t "$CONNS" -f "$tmp/select.sql" "$pg_url&$q&ssl_min_protocol_version=TLSv1.3"
confirm pg-tls13 "$pg_port" cal-pg
echo "load: $(load)"

args=(-s -k --no-sessionid -o /dev/null -H "Connection: close")
for _ in $(seq "$CONNS"); do args+=("https://$https/"); done
capture https-tls12 "$https_port" -- curl "${args[@]}"
confirm https-tls12 "$https_port" cal-https
echo "load after: $(load)"
