#!/usr/bin/env bash
# advise-accuracy.sh: how close tlsbench advise's predictions come to what
# a lab replay of the same profile measures (advise --confirm), per change
# and engine.
#
#   pg-tls12     pgbench -C (libpq, OpenSSL 3.0) over TLS 1.2 against the lab's
#                PostgreSQL 15 with an RSA-2048 key: TLS 1.3, ECDSA, direct TLS,
#                pooling, TLS off
#   pg-tls13     the same over TLS 1.3: libpq's X25519 key share meets PostgreSQL
#                15's P-256, so every connection pays a HelloRetryRequest
#   my-tls12     the mariadb client (libmariadb, OpenSSL 3.0), a new connection
#                per query, over TLS 1.2 against the lab's MariaDB, RSA-2048
#   my-tls13     the same over TLS 1.3
#   redis-tls12  redis-benchmark --tls -c 1 -k 0 (hiredis, OpenSSL 3.0: a new
#                connection per PING) against the lab's Redis held to TLS 1.2.
#                redis-benchmark takes a password only on its command line,
#                which this script never puts one on: the lab Redis's default
#                user is opened without one, so the capture has no AUTH, while
#                the replay's Go client (the lab's own user) sends one
#   https-tls12  curl (OpenSSL 3.0), a new connection per request, against
#                tlsbench serve --tls-max 1.2 (Go): TLS 1.3, ECDSA, resumption,
#                pooling, TLS off
#
# Each capture is taken with tlsbench wire --capture lo while the client
# runs, then advised with --lab (advise runs the CPU calibration itself:
# a lab connect run on the same engine with the variants the advice
# needs) and --confirm. The table prints, per change, the round trips and
# the saving per connection predicted from the capture beside the ones
# the replay measured (paired with now, ±95% interval over trials), and
# the error (the measured saving's difference from the predicted, % of
# the predicted). This is a benchmark, not a test: it fails only when a
# tool fails, never on an error.
#
# Settings (environment):
#   ACC_CONNS=150    connections per capture
#   ACC_TRIALS=3     --lab and --confirm trials per variant
#   ACC_D=2s         --lab and --confirm trial length
#   ACC_ONLY=names   only these captures (comma-separated, as above)
#   ACC_OUT=dir      keep each capture (NAME.pcap), its advise result (NAME.json) and text there
#   TLSBENCH=path    use this binary instead of building ./cmd/tlsbench
#   ACC_RTT=44ms     take the captures over a real round trip instead of
#                    loopback (root): each client stack runs in tlsbench's
#                    delay link (connect --lab ENGINE --client STACK
#                    --rtt-via link), closed loop with ACC_C workers for
#                    ACC_CAPTURE, and tcpdump captures the link's server-side
#                    device, as `tcpdump -w` on a database host would:
#                      pg-tls12 libpq, pg-tls13 libpq (a HelloRetryRequest on
#                      every connection), my-tls12 mysqlclient (libmariadb),
#                      redis-tls12 ioredis, https-tls12 curl
#   ACC_C=16         workers of those captures
#   ACC_CAPTURE=25s  length of those captures
#   ACC_FROM=dir     advise the captures an earlier ACC_RTT run kept there
#                    (ACC_OUT: NAME.pcap) instead of taking new ones: the
#                    same traffic, advised again by another build
# Defaults take about 15-20 minutes on a quiet machine (ACC_RTT: 25-30 with
# ACC_D=10s, which the server CPU's intervals want).
set -euo pipefail

CONNS=${ACC_CONNS:-150}
TRIALS=${ACC_TRIALS:-3}
D=${ACC_D:-2s}
ONLY=${ACC_ONLY:-pg-tls12,pg-tls13,my-tls12,my-tls13,redis-tls12,https-tls12}

die() { echo "advise-accuracy.sh: $*" >&2; exit 1; }
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "ACC_CONNS=$CONNS: use a positive number"
for tool in pgbench mariadb redis-cli redis-benchmark curl jq; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install.sh bench"
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
umask 077 # the client settings files below hold the lab's passwords
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

load() { cut -d' ' -f1-3 /proc/loadavg; }

# confirm NAME PORT LAB [ARGS...]: advise --lab LAB --confirm on the
# capture; its rows for the table.
confirm() {
  local name=$1 port=$2 lab=$3
  shift 3
  local ports=()
  [ "$port" = 0 ] || ports=(--port "$port")
  "$bin" advise "$tmp/$name.pcap" "${ports[@]}" --lab "$lab" --confirm --trials "$TRIALS" -d "$D" -q "$@" -o "$tmp/$name.json" >"$tmp/$name.txt" 2>"$tmp/$name.err" ||
    die "$name: advise --lab --confirm failed: $(tail -c 600 "$tmp/$name.err" | tr '\n' ' ')"
  if [ -n "${ACC_OUT:-}" ]; then mkdir -p "$ACC_OUT" && cp "$tmp/$name.json" "$tmp/$name.txt" "$tmp/$name.pcap" "$ACC_OUT/"; fi
  jq -r --arg name "$name" '
    def n: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
    def saved($f): if $f.predicted == null then "-" else ($f.now - $f.predicted | n) end;
    def meas($f): if $f.measured == null then "-" else "\($f.now - $f.measured | n) ±\($f.measured_ci | n)" end;
    def err($f): if $f.error_pct == null then "" else " (\($f.error_pct)%)" end;
    def fig($f): "\(saved($f)) / \(meas($f))\(err($f))";
    .advise[] | .profile as $p | .replays as $r |
    (.advice[] | select(.not_applicable | not) | . as $c |
      "| \($name): \($p.engine) \($p.conns) at \($p.rate.mean * 10 | round / 10)/s | \($c.change) | \($c.round_trips_saved | n) / \($c.round_trips_measured | n)\(if $c.round_trips_measured == null then " (" + ($c.unmeasured // "no replay") + ")" elif $c.round_trips_measured == $c.round_trips_saved then "" else " MISSED" end) | \(fig($c.setup_ms)) | \(fig($c.server_cpu_ms)) | \(fig($c.bytes)) |")' "$tmp/$name.json" >>"$tmp/table.md"
  jq -r '.advise[] | "  \(.profile.server): replays: \([.replays[] | "\(.lab) \(.server // "") at \(.rate // 0)/s, \(.trials) trials, client \(.client | split(":")[0])"] | join("; "))"' "$tmp/$name.json" >&2
  echo "load after $name: $(load)" >&2
}

table() {
  echo
  echo "Per change: predicted / measured saving per connection (measured ±95% interval; error: the measured saving's difference from the predicted, % of the predicted)."
  echo
  echo "| capture | change | round trips | setup ms | server CPU ms | bytes |"
  echo "|---|---|---|---|---|---|"
  cat "$tmp/table.md"
  echo
  echo "load after: $(load)"
}

echo "load before: $(load)" >&2

# --- captures kept by an earlier run, advised again ------------------------
if [ -n "${ACC_FROM:-}" ]; then
  from() {
    local name=$1 lab=$2 engine=${3:-}
    want "$name" || return 0
    [ -f "$ACC_FROM/$name.pcap" ] || die "$ACC_FROM/$name.pcap is missing: keep the captures with ACC_OUT=dir ACC_RTT=44ms first"
    cp "$ACC_FROM/$name.pcap" "$tmp/$name.pcap"
    confirm "$name" 0 "$lab" ${engine:+--engine "$engine"}
  }
  from pg-tls12 postgres
  from pg-tls13 postgres
  from my-tls12 mariadb
  from redis-tls12 redis redis
  from https-tls12 builtin
  table
  exit 0
fi

# --- captures over a real round trip: the delay link -----------------------
if [ -n "${ACC_RTT:-}" ]; then
  command -v tcpdump >/dev/null 2>&1 || die "tcpdump is missing: apt-get install tcpdump"
  # link_capture NAME LAB STACK TLS: STACK's connections to the lab's
  # LAB server through a delay link of ACC_RTT, captured on the link's
  # server-side device during the one timed trial (the lab's fill and
  # checks are left out, as a capture on a production host would start
  # while the clients run). The link carries only the stack's connections,
  # so the capture needs no port filter (and advise no --port).
  link_capture() {
    local name=$1 lab=$2 stack=$3 tls=$4 dev= tcpdump_pid= i target=(--lab "$2")
    # mysqlclient interpolates parameters (no server-side prepare)
    case $lab in
    builtin) target=(builtin) ;;
    *) target+=(--tables 1 --rows 1000 --query-mode simple) ;;
    esac
    "$bin" connect "${target[@]}" --client "$stack" --tls "$tls" --rtt "$ACC_RTT" --rtt-via link \
      -c "${ACC_C:-16}" --trials 1 -d "${ACC_CAPTURE:-25s}" \
      -o "$tmp/$name.connect.json" >"$tmp/$name.out" 2>&1 &
    local run=$!
    for i in $(seq 1200); do
      grep -q 'trial 1/1 begins' "$tmp/$name.out" && break
      kill -0 "$run" 2>/dev/null || die "$name: connect exited: $(tail -c 600 "$tmp/$name.out" | tr '\n' ' ')"
      sleep 0.1
    done
    dev=$(grep -o 'tbdls[0-9]*' "$tmp/$name.out" | head -1 || true)
    [ -n "$dev" ] || dev=$(ip -o link | grep -o 'tbdls[0-9]*' | head -1 || true)
    [ -n "$dev" ] || die "$name: no delay link device: $(tail -c 600 "$tmp/$name.out" | tr '\n' ' ')"
    tcpdump -i "$dev" -s 0 -w "$tmp/$name.pcap" tcp >/dev/null 2>"$tmp/$name.tcpdump" &
    tcpdump_pid=$!
    wait "$run" || die "$name: connect failed: $(tail -c 600 "$tmp/$name.out" | tr '\n' ' ')"
    kill -INT "$tcpdump_pid" 2>/dev/null || true
    wait "$tcpdump_pid" 2>/dev/null || true
    grep -h 'trial 1/1 ended' "$tmp/$name.out" >&2 || true
  }
  run_rtt() {
    local name=$1 lab=$2 stack=$3 tls=$4 engine=${5:-}
    want "$name" || return 0
    link_capture "$name" "$lab" "$stack" "$tls"
    confirm "$name" 0 "$lab" ${engine:+--engine "$engine"}
  }
  run_rtt pg-tls12 postgres libpq 1.2
  run_rtt pg-tls13 postgres libpq 1.3
  run_rtt my-tls12 mariadb mysqlclient 1.2
  run_rtt redis-tls12 redis ioredis 1.2 redis
  run_rtt https-tls12 builtin curl 1.2
  table
  exit 0
fi

# --- the servers the captures are made against ---------------------------
echo "starting the lab's postgres, mariadb and redis, and tlsbench serve ..." >&2
"$bin" lab postgres mariadb redis --key rsa2048 >"$tmp/lab.out" 2>"$tmp/lab.err" &
lab_pid=$!
"$bin" serve --tls-max 1.2 --http "" --https 127.0.0.1:0 --size 16 --json >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 1200); do
  grep -q '^Ctrl-C stops the servers' "$tmp/lab.out" && [ -s "$tmp/serve.out" ] && break
  kill -0 "$lab_pid" 2>/dev/null || die "tlsbench lab exited: $(tail -c 400 "$tmp/lab.err" | tr '\n' ' ')"
  kill -0 "$serve_pid" 2>/dev/null || die "tlsbench serve exited: $(tail -c 400 "$tmp/serve.err" | tr '\n' ' ')"
  sleep 0.1
done
grep -q '^Ctrl-C stops the servers' "$tmp/lab.out" || die "the lab did not start in 2 minutes"

# section ENGINE: the lab's lines about ENGINE's server.
section() { awk -v e="$1" '/^[^ ]/ { on = ($1 == e) } on' "$tmp/lab.out"; }
pg_url=$(section postgres | awk '$1 == "scram-sha-256" { print $NF; exit }')
my_url=$(section mariadb | awk '$1 == "mysql_native_password" { print $NF; exit }')
my_ca=$(section mariadb | awk '$1 == "ca" { print $2; exit }')
redis_url=$(section redis | awk '$1 == "password" && $2 == "tls" { print $NF; exit }')
redis_ca=$(section redis | awk '$1 == "ca" { print $2; exit }')
[ -n "$pg_url" ] && [ -n "$my_url" ] && [ -n "$redis_url" ] || die "no URL in the lab's output: $(cat "$tmp/lab.out")"
port_of() { sed -E 's|.*@[^:/]+:([0-9]+)/.*|\1|' <<<"$1"; }
passfile_of() { sed -E 's|.*[?&]passfile=([^&]+).*|\1|' <<<"$1" | sed 's/%2F/\//g'; }
pg_port=$(port_of "$pg_url")
my_port=$(port_of "$my_url")
my_user=$(sed -E 's|^mysql://([^@]+)@.*|\1|' <<<"$my_url")
redis_port=$(port_of "$redis_url")
https=$(jq -r '.https.rsa2048 // empty' "$tmp/serve.out")
[ -n "$https" ] || die "no HTTPS address from tlsbench serve: $(cat "$tmp/serve.out")"
https_port=${https##*:}
echo "SELECT 1;" >"$tmp/select.sql"

# The mariadb client reads its password from a settings file only this
# user reads, never from its command line.
{
  echo "[client]"
  echo "user=$my_user"
  echo "password=$(cat "$(passfile_of "$my_url")")"
  echo "host=127.0.0.1"
  echo "port=$my_port"
  echo "ssl-ca=$my_ca"
} >"$tmp/my.cnf"

# Redis: held to TLS 1.2, its default user opened without a password for
# redis-benchmark (REDISCLI_AUTH carries the lab user's to redis-cli).
REDISCLI_AUTH=$(cat "$(passfile_of "$redis_url")") redis-cli --no-auth-warning --tls --cacert "$redis_ca" -h 127.0.0.1 -p "$redis_port" --user bench \
  CONFIG SET tls-protocols TLSv1.2 >/dev/null || die "redis-cli CONFIG SET tls-protocols failed"
REDISCLI_AUTH=$(cat "$(passfile_of "$redis_url")") redis-cli --no-auth-warning --tls --cacert "$redis_ca" -h 127.0.0.1 -p "$redis_port" --user bench \
  ACL SETUSER default on nopass '~*' '&*' '+@all' >/dev/null || die "redis-cli ACL SETUSER default failed"

# capture NAME PORT -- COMMAND...: a capture of COMMAND's connections.
capture() {
  local name=$1 port=$2
  shift 3
  "$bin" wire --capture lo --port "$port" --keep-capture "$tmp/$name.pcap" -o "$tmp/$name.wire.json" -- "$@" >"$tmp/$name.out" 2>&1 ||
    die "$name: the capture failed: $(tail -c 600 "$tmp/$name.out" | tr '\n' ' ')"
}

q="sslmode=require"
if want pg-tls12; then
  capture pg-tls12 "$pg_port" -- pgbench -C -n -t "$CONNS" -f "$tmp/select.sql" "$pg_url&$q&ssl_max_protocol_version=TLSv1.2"
  confirm pg-tls12 "$pg_port" postgres
fi
if want pg-tls13; then
  capture pg-tls13 "$pg_port" -- pgbench -C -n -t "$CONNS" -f "$tmp/select.sql" "$pg_url&$q&ssl_min_protocol_version=TLSv1.3"
  confirm pg-tls13 "$pg_port" postgres
fi
for v in 1.2 1.3; do
  name=my-tls${v/./}
  want "$name" || continue
  capture "$name" "$my_port" -- bash -c 'for _ in $(seq "$1"); do mariadb --defaults-extra-file="$2" --ssl --tls-version="TLSv$3" -e "SELECT 1" bench >/dev/null || exit 1; done' \
    loop "$CONNS" "$tmp/my.cnf" "$v"
  confirm "$name" "$my_port" mariadb
done
if want redis-tls12; then
  capture redis-tls12 "$redis_port" -- redis-benchmark --tls --cacert "$redis_ca" -h 127.0.0.1 -p "$redis_port" -c 1 -k 0 -n "$CONNS" -t ping_mbulk -q
  # The lab's TLS port is no usual Redis port, and TLS hides the protocol.
  confirm redis-tls12 "$redis_port" redis --engine redis
fi
if want https-tls12; then
  args=(-s -k --no-sessionid -o /dev/null -H "Connection: close")
  for _ in $(seq "$CONNS"); do args+=("https://$https/"); done
  capture https-tls12 "$https_port" -- curl "${args[@]}"
  confirm https-tls12 "$https_port" builtin
fi

table
