#!/usr/bin/env bash
# peers.sh: tlsbench next to established tools, on one built-in server, in one run.
#
#   connect  tlsbench connect -c 1 (TLS 1.3, resumption off)  vs  openssl s_time -new -tls1_3
#   pool     tlsbench pool -c C (keep-alive HTTPS and HTTP)    vs  wrk -t1 -cC
#            (the same request as wrk's: GET / with a Host header only, so
#            tlsbench runs with -H 'User-Agent:' -H 'Accept:')
#
# One `tlsbench serve` (key rsa2048, TLS 1.3, 1024-byte response, free
# loopback ports for HTTPS and HTTP) serves every run. Each round runs every comparison once,
# tlsbench first and the peer right after (A B A B ...), so that drift hits
# both alike. The ratio is tlsbench / peer: the mean of the per-round ratios,
# with their min and max. This is a benchmark, not a test: it fails only when
# a tool fails, never on a ratio.
#
# Settings (environment):
#   PEERS_T=5          seconds per run (whole seconds: s_time takes no less)
#   PEERS_ROUNDS=3     rounds
#   PEERS_POOL_C="4 1" pool concurrencies to compare ("" to skip pool)
#   PEERS_PROTO="https http" pool over which protocols
#   PEERS_MLKEM=0      0: tlsbench offers X25519 only (GODEBUG=tlsmlkem=0), the
#                      group OpenSSL 3.0 negotiates, so both do the same crypto;
#                      1: Go's default, X25519MLKEM768 (costs more per handshake)
#   PEERS_WARMUP=1s    tlsbench pool --warmup, its default (wrk has none): with
#                      more connections than CPUs tlsbench picks in it how its
#                      workers wait (in their threads or its poller)
#   PEERS_CLIENT_CPUS= CPUs for the clients, e.g. 0: tlsbench (--client-cpus)
#                      and the peers run there, the server on the others
#                      (default: all share; see bench/cpus.sh)
#   TLSBENCH=path      use this binary instead of building ./cmd/tlsbench
# Defaults take about 3 minutes.
set -euo pipefail

T=${PEERS_T:-5}
ROUNDS=${PEERS_ROUNDS:-3}
POOL_C=${PEERS_POOL_C-4 1}
PROTO=${PEERS_PROTO-https http}
MLKEM=${PEERS_MLKEM:-0}
WARMUP=${PEERS_WARMUP:-1s}

die() { echo "peers.sh: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/cpus.sh"

[[ $T =~ ^[1-9][0-9]*$ ]] || die "PEERS_T=$T: use whole seconds, e.g. 5"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "PEERS_ROUNDS=$ROUNDS: use a positive number"
[[ $POOL_C =~ ^[0-9\ ]*$ ]] || die "PEERS_POOL_C=$POOL_C: use connection counts, e.g. \"4 1\""
[[ $PROTO =~ ^(https|http|\ )*$ ]] || die "PEERS_PROTO=$PROTO: use https, http or both"
[[ $MLKEM =~ ^[01]$ ]] || die "PEERS_MLKEM=$MLKEM: use 0 or 1"
for tool in openssl wrk jq; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install.sh bench"
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsbench-peers.XXXXXX")
srv_pid=
cur_pid=

cleanup() {
  # The job running now, then the server (it removes its keys on SIGTERM).
  if [ -n "$cur_pid" ]; then kill -TERM "$cur_pid" 2>/dev/null || true; wait "$cur_pid" 2>/dev/null || true; fi
  if [ -n "$srv_pid" ]; then kill -TERM "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "peers.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

if [ -n "${TLSBENCH:-}" ]; then
  bin=$TLSBENCH
else
  command -v go >/dev/null 2>&1 || die "go is missing: install Go or set TLSBENCH to a tlsbench binary"
  (cd "$root" && go build -o "$tmp/tlsbench" ./cmd/tlsbench) || die "go build ./cmd/tlsbench failed"
  bin=$tmp/tlsbench
fi

# The server, on a free port of 127.0.0.1 (the OS picks it).
"${srv_pin[@]}" "$bin" serve --key rsa2048 --http 127.0.0.1:0 --https 127.0.0.1:0 --size 1024 --tls-max 1.3 \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv_pid=$!
url='' ca='' http_url=''
for _ in $(seq 100); do
  url=$(awk '$1 == "https" { print $2 }' "$tmp/serve.out")
  http_url=$(awk '$1 == "http" { print $2 }' "$tmp/serve.out")
  ca=$(awk '$1 == "ca" { print $2 }' "$tmp/serve.out")
  [ -n "$url" ] && [ -n "$ca" ] && [ -n "$http_url" ] && break
  kill -0 "$srv_pid" 2>/dev/null || die "tlsbench serve exited: $(head -c 300 "$tmp/serve.err")"
  sleep 0.1
done
if [ -z "$url" ] || [ -z "$ca" ] || [ -z "$http_url" ]; then die "tlsbench serve printed no listener in 10 s"; fi
hostport=${url#https://}
hostport=${hostport%/}
[[ $hostport == 127.0.0.1:* ]] || die "server listens on $hostport, not on 127.0.0.1"

# What OpenSSL (s_time's and wrk's library) negotiates with this server, and
# that the CA verifies its certificate: s_time loads -CAfile and verifies the
# chain but does not fail on a bad one, so check once here.
sclient=$(openssl s_client -connect "$hostport" -tls1_3 -CAfile "$ca" -verify_return_error \
  -verify_ip 127.0.0.1 -brief </dev/null 2>&1) || die "openssl s_client could not connect to $hostport with the server's CA"
grep -q '^Verification: OK' <<<"$sclient" || die "openssl does not verify the server with $ca"
ossl_neg=$(awk -F': ' '/^Protocol version/ { v = $2 } /^Ciphersuite/ { c = $2 } /^Server Temp Key/ { split($2, g, ","); k = g[1] }
  END { print v, c, k }' <<<"$sclient")

gotls=${GODEBUG:-}
if [ "$MLKEM" = 0 ]; then gotls="${gotls:+$gotls,}tlsmlkem=0"; fi

# --- measuring -----------------------------------------------------------
# Each run records wall time, the CPU of the tool (rusage of reaped children,
# from the `times` builtin, so no helper process may run in between) and
# the server's CPU (/proc/PID/stat, clock ticks).

tck=$(getconf CLK_TCK)
children_cpu() { # -> $1: milliseconds of user+system CPU of reaped children
  # Pure bash: a helper process here would count as a child.
  times >"$tmp/times"
  local line x m sec ms=0
  { read -r line; read -r line; } <"$tmp/times"
  for x in $line; do # e.g. 0m1.120s 0m0.300s
    x=${x%s}; m=${x%%m*}; sec=${x#*m}
    ms=$((ms + 10#$m * 60000 + 10#${sec%.*} * 1000 + 10#${sec#*.}))
  done
  printf -v "$1" '%d' "$ms"
}
server_ticks() { # -> $1: utime+stime of the server, clock ticks
  local line f
  read -r line <"/proc/$srv_pid/stat" || die "the server (pid $srv_pid) is gone"
  # The fields after "(comm) ": state is f[0], utime f[11], stime f[12].
  read -r -a f <<<"${line##*) }"
  printf -v "$1" '%d' $((f[11] + f[12]))
}

# run CMD...: runs it in the background (so that a signal stops it at once),
# recording wall seconds (W), client CPU seconds (CCPU), server CPU seconds (SCPU).
run() {
  local c0 c1 s0 s1 t0 t1 rc=0
  server_ticks s0; children_cpu c0
  t0=$EPOCHREALTIME
  "$@" >"$tmp/run.out" 2>&1 &
  cur_pid=$!
  wait "$cur_pid" || rc=$?
  cur_pid=
  t1=$EPOCHREALTIME
  children_cpu c1; server_ticks s1
  W=$(awk "BEGIN { print $t1 - $t0 }")
  CCPU=$(awk "BEGIN { print ($c1 - $c0) / 1000 }")
  SCPU=$(awk "BEGIN { print ($s1 - $s0) / $tck }")
  return "$rc"
}

results=$tmp/results # comparison round tool rate client_us/op server_us/op
negotiated=$tmp/negotiated

record() { # comparison round tool ops rate
  local us_c us_s n=${CPU_UNITS:-$4}
  us_c=$(awk "BEGIN { printf \"%.1f\", $CCPU / $n * 1e6 }")
  us_s=$(awk "BEGIN { printf \"%.1f\", $SCPU / $n * 1e6 }")
  echo "$1 $2 $3 $5 $us_c $us_s" >>"$results"
  printf '  round %d  %-10s %-9s %10.1f /s  (%d ops, client %s µs/op, server %s µs/op)\n' \
    "$2" "$1" "$3" "$5" "$4" "$us_c" "$us_s" >&2
}

tlsbench_run() { # comparison round experiment args...
  local cmp=$1 round=$2 exp=$3
  shift 3
  local out=$tmp/tb.json target=(--tls 1.3 --resume off --ca "$ca") u=$url want="TLS 1.3"
  if [[ $cmp == pool-http-* ]]; then target=(--tls off) u=$http_url want=-; fi
  run env GODEBUG="$gotls" "$bin" "$exp" "$u" "${target[@]}" \
    -d "${T}s" --trials 1 -o "$out" "${tb_pin[@]}" "$@" ||
    die "tlsbench $exp failed: $(grep -v '^result:' "$tmp/run.out" | tail -n 3 | tr '\n' ' ')"
  local ops ns errs err ver group
  # "|"-separated: tabs would merge an empty field with the next one.
  IFS='|' read -r ops ns errs err ver group < <(jq -r '[.trials[0].ops, .trials[0].elapsed_ns,
    ((.trials[0].errors // {}) | add // 0), (.error // ""),
    (.trials[0].negotiated.version // "-"), (.trials[0].negotiated.group // "-")]
    | map(tostring | gsub("[|\n]"; " ")) | join("|")' "$out")
  [ -z "$err" ] || die "tlsbench $exp: $err"
  [ "$ops" -gt 0 ] || die "tlsbench $exp completed no operation"
  [ "$errs" -eq 0 ] || echo "  warning: tlsbench $exp had $errs failed operations" >&2
  [ "$ver" = "$want" ] || die "tlsbench $exp ($cmp) negotiated $ver, not $want"
  [ "$want" = - ] || echo "$group" >>"$negotiated"
  # CPU is the whole process's, warm-up included: its operations count too,
  # at the measured rate (the warm-up is tlsbench's own; the peers have none).
  local units
  units=$(jq -r '.trials[0] as $t | if $t.experiment == "pool"
    then $t.ops * ($t.elapsed_ns + (.spec.warmup_ns // 0)) / $t.elapsed_ns else $t.ops end' "$out")
  CPU_UNITS=$units record "$cmp" "$round" tlsbench "$ops" "$(awk "BEGIN { print $ops / ($ns / 1e9) }")"
  local waited
  waited=$(jq -r '.trials[0].client_wait // empty' "$out")
  [ -z "$waited" ] || echo "    tlsbench's workers waited: $waited" >&2
}

stime_run() { # round
  run "${peer_pin[@]}" openssl s_time -connect "$hostport" -new -tls1_3 -www / -time "$T" -CAfile "$ca" ||
    die "openssl s_time failed: $(tail -n 3 "$tmp/run.out" | tr '\n' ' ')"
  # "N connections in S real seconds, B bytes read per connection": S is
  # whole seconds (the loop ends on the first second past T, so S = T+1
  # though it ran T..T+1 s); the wall clock around the process is the real one.
  local n own bytes
  read -r n own bytes < <(awk '/connections in [0-9]+ real seconds/ { print $1, $4, $7 }' "$tmp/run.out")
  [ "${n:-0}" -gt 0 ] || die "openssl s_time made no connection: $(tail -n 3 "$tmp/run.out" | tr '\n' ' ')"
  [ "$bytes" -ge 1024 ] || die "openssl s_time read $bytes bytes per connection, less than the 1024-byte body"
  echo "$1 $(awk "BEGIN { print $n / $own }")" >>"$tmp/stime_own"
  record connect "$1" s_time "$n" "$(awk "BEGIN { print $n / $W }")"
}

wrk_run() { # cmp round conns
  local cmp=$1 u=$url
  if [[ $cmp == pool-http-* ]]; then u=$http_url; fi
  shift
  run "${peer_pin[@]}" wrk -t1 -c"$2" -d"${T}s" "$u" || die "wrk failed: $(tail -n 3 "$tmp/run.out" | tr '\n' ' ')"
  local rate ops bad
  rate=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/run.out")
  ops=$(awk '/requests in/ { print $1 }' "$tmp/run.out")
  [ -n "$rate" ] || die "wrk printed no Requests/sec: $(tail -n 3 "$tmp/run.out" | tr '\n' ' ')"
  [ "${ops:-0}" -gt 0 ] || die "wrk completed no request: $(tail -n 3 "$tmp/run.out" | tr '\n' ' ')"
  bad=$(awk '/Non-2xx/ { n += $NF } /Socket errors/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$tmp/run.out")
  [ "$bad" -eq 0 ] || echo "  warning: wrk -c$2 had $bad errors or non-2xx responses" >&2
  record "$cmp" "$1" wrk "$ops" "$rate"
}

# --- the run -------------------------------------------------------------
ncmp=$((1 + $(wc -w <<<"$POOL_C") * $(wc -w <<<"$PROTO")))
pool_cmp() { # proto conns -> $cmp: the comparison's name (no subshell: it would count as a child)
  if [ "$1" = http ]; then cmp=pool-http-c$2; else cmp=pool-c$2; fi
}
echo "tlsbench vs peers: $("$bin" version), $(openssl version | cut -d' ' -f1-2), wrk $(wrk -v 2>&1 | awk 'NR == 1 { print $2 }')"
echo "machine: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "cpus:    $cpus_note"
echo "server:  tlsbench serve, key rsa2048, TLS 1.3, 1024-byte body, $url and $http_url (same process for every run)"
echo "openssl: $ossl_neg, certificate verified with the server's CA"
echo "runs:    $ROUNDS rounds x $ncmp comparison(s) x 2 tools, ${T}s each, tlsbench then peer in every round"
echo

for ((r = 1; r <= ROUNDS; r++)); do
  echo "round $r/$ROUNDS" >&2
  tlsbench_run connect "$r" connect -c 1
  stime_run "$r"
  for p in $PROTO; do for c in $POOL_C; do
    pool_cmp "$p" "$c"
    tlsbench_run "$cmp" "$r" pool -c "$c" --warmup "$WARMUP" -H 'User-Agent:' -H 'Accept:'
    wrk_run "$cmp" "$r" "$c"
  done; done
done
echo >&2

# --- the tables ----------------------------------------------------------
table() { # comparison peer title
  awk -v cmp="$1" -v peer="$2" -v title="$3" '
    $1 != cmp { next }
    $3 == "tlsbench" { a[$2] = $4; ac[$2] = $5; as[$2] = $6; n = ($2 > n ? $2 : n) }
    $3 == peer       { b[$2] = $4; bc[$2] = $5; bs[$2] = $6 }
    END {
      print title
      printf "%-5s %21s %8s  %21s  %21s\n", "", "per second", "", "client CPU µs/op", "server CPU µs/op"
      printf "%-5s %10s %10s %8s  %10s %10s  %10s %10s\n", "round", "tlsbench", peer, "ratio", "tlsbench", peer, "tlsbench", peer
      fmt = "%-5s %10.1f %10.1f %8.3f  %10.1f %10.1f  %10.1f %10.1f\n"
      lo = 1e300; hi = 0
      for (r = 1; r <= n; r++) {
        q = b[r] > 0 ? a[r] / b[r] : 0
        printf fmt, r, a[r], b[r], q, ac[r], bc[r], as[r], bs[r]
        sa += a[r]; sb += b[r]; sq += q; sac += ac[r]; sbc += bc[r]; sas += as[r]; sbs += bs[r]
        lo = q < lo ? q : lo; hi = q > hi ? q : hi
      }
      printf fmt, "mean", sa / n, sb / n, sq / n, sac / n, sbc / n, sas / n, sbs / n
      printf "ratio tlsbench/%s: %.3f (min %.3f, max %.3f over %d rounds)\n\n", peer, sq / n, lo, hi, n
    }' "$results"
}

table connect s_time "connect: new TLS 1.3 connection + one request each, c=1, conn/s"
own=$(awk '{ printf "%s%.1f", (NR > 1 ? ", " : ""), $2 }' "$tmp/stime_own")
echo "  s_time's own figure (N / whole 'real seconds'): $own conn/s; the table uses N / wall time of the process"
echo
for p in $PROTO; do for c in $POOL_C; do
  pool_cmp "$p" "$c"
  table "$cmp" wrk "pool: keep-alive ${p^^}, $c connection(s), wrk -t1 -c$c, requests/s"
done; done

groups=$(sort -u "$negotiated" | tr '\n' ' ')
echo "tlsbench negotiated group: ${groups% } (GODEBUG=${gotls:-none}); OpenSSL: ${ossl_neg##* }"
echo "client µs/op: CPU of the whole client process (rusage) per op; server µs/op: the server's CPU over the run per op"
echo "  (tlsbench's pool warm-up, --warmup ${WARMUP}, counts as operations at its measured rate)"
