#!/usr/bin/env bash
# peers-db.sh: tlsbench next to pgbench and sysbench, on the same lab
# servers, in one run.
#
#   PostgreSQL 15, pgbench, point select by primary key on sbtest1 (the
#   custom script below is pgbench -S's statement on tlsbench's table):
#     pg-pool-*     tlsbench pool -c C     vs  pgbench -n -M prepared -c C -j C
#     pg-connect-*  tlsbench connect -c C  vs  pgbench -n -C -M prepared -c C -j C
#                   (a new connection per transaction)
#     each with sslmode=disable (tlsbench --tls off) and sslmode=require
#     (tlsbench --tls auto: TLS, and like libpq's require no other checks)
#     pg-libpq-*    tlsbench pool --client libpq -c C (libpq's C stack: the
#                   pgbench internal/clientstack runs) vs pgbench -n -M
#                   prepared -c C -j C run by hand: what driving the C stack
#                   costs (target: >= 0.95x, not >= 1x), in transactions/s
#                   and in pgbench's own CPU per transaction
#   MariaDB, sysbench 1.0:
#     my-point-*    tlsbench pool --workload point-select  vs  sysbench oltp_point_select
#     my-ro-*       tlsbench pool --workload read-only     vs  sysbench oltp_read_only
#     each with --mysql-ssl=off (--tls off) and --mysql-ssl=on (--tls auto)
#
# One `tlsbench lab postgres mariadb --key rsa2048` serves every run, with
# sbtest1 of 100000 rows prepared in both. Each round runs every comparison
# once, tlsbench first and the peer right after (A B A B ...), so that drift
# hits both alike. A ratio is tlsbench / peer: the mean of the per-round
# ratios, with their min and max. tlsbench is a load generator first: its
# throughput should be at least the peer's and its connection time within
# 5% of pgbench's; the summary says yes or no for each. This is a benchmark,
# not a test: it fails only when a tool fails, never on a ratio.
#
# Settings (environment):
#   PEERS_T=5        seconds per run (whole seconds: pgbench -T and sysbench --time)
#   PEERS_ROUNDS=3   rounds
#   PEERS_C=4        clients: connections (pool), workers (connect), pgbench
#                    -c/-j, sysbench --threads
#   PEERS_PG_AUTH=   PostgreSQL login of the lab: scram-sha-256 (its default),
#                    md5 or trust (trust: no client-side SCRAM key derivation,
#                    which costs libpq 15 with OpenSSL 3 far more than pgx)
#   PEERS_WARMUP=1s  tlsbench pool --warmup, its default: the peers have none,
#                    and with more clients than CPUs tlsbench picks in it how
#                    its workers wait (in their threads or its poller)
#   PEERS_CLIENT_CPUS=  CPUs for the clients, e.g. 0: tlsbench (--client-cpus)
#                    and the peers run there, the lab's servers on the others
#                    (default: all share; see bench/cpus.sh)
#   PEERS_ONLY=      a pattern of the comparisons to run, e.g. 'pg-libpq-*'
#   TLSBENCH=path    use this binary instead of building ./cmd/tlsbench
#   PGBENCH=path     pgbench (default: on PATH, else /usr/lib/postgresql/*/bin)
# Defaults take about 4-5 minutes.
set -euo pipefail

T=${PEERS_T:-5}
ROUNDS=${PEERS_ROUNDS:-3}
C=${PEERS_C:-4}
PG_AUTH=${PEERS_PG_AUTH:-}
WARMUP=${PEERS_WARMUP:-1s}
ONLY=${PEERS_ONLY:-*}
ROWS=100000

die() { echo "peers-db.sh: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/cpus.sh"

[[ $T =~ ^[1-9][0-9]*$ ]] || die "PEERS_T=$T: use whole seconds, e.g. 5"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "PEERS_ROUNDS=$ROUNDS: use a positive number"
[[ $C =~ ^[1-9][0-9]*$ ]] || die "PEERS_C=$C: use a positive number of clients"
[[ $PG_AUTH =~ ^(|scram-sha-256|md5|trust)$ ]] || die "PEERS_PG_AUTH=$PG_AUTH: use scram-sha-256, md5 or trust"

pgbench=${PGBENCH:-}
if [ -z "$pgbench" ]; then
  pgbench=$(command -v pgbench 2>/dev/null || true)
  if [ -z "$pgbench" ]; then
    for p in /usr/lib/postgresql/*/bin/pgbench; do
      if [ -x "$p" ]; then pgbench=$p; fi # the last match in glob order
    done
  fi
fi
[[ -n $pgbench && -x $pgbench ]] ||
  die "pgbench is missing: install postgresql-15 (scripts/install.sh) or set PGBENCH"
psql=$(dirname "$pgbench")/psql
[ -x "$psql" ] || psql=$(command -v psql 2>/dev/null || true)
command -v sysbench >/dev/null 2>&1 || die "sysbench is missing: run scripts/install.sh bench"
for tool in jq openssl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install.sh bench"
done
mariadb_cli=$(command -v mariadb 2>/dev/null || command -v mysql 2>/dev/null || true)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
umask 077 # the temp dir holds a password file and a copy of a private key
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsbench-peers-db.XXXXXX")
lab_pid=
cur_pid=

cleanup() {
  # The job running now, then the lab (on SIGTERM it stops its servers and
  # removes their directories and keys), then our files.
  if [ -n "$cur_pid" ]; then kill -TERM "$cur_pid" 2>/dev/null || true; wait "$cur_pid" 2>/dev/null || true; fi
  if [ -n "$lab_pid" ]; then
    kill -TERM "$lab_pid" 2>/dev/null || true
    wait "$lab_pid" 2>/dev/null || true
    local p
    for p in ${pg_pid:-} ${my_pid:-}; do
      if kill -0 "$p" 2>/dev/null; then echo "peers-db.sh: warning: lab server pid $p still runs after the lab stopped" >&2; fi
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "peers-db.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

if [ -n "${TLSBENCH:-}" ]; then
  bin=$TLSBENCH
else
  command -v go >/dev/null 2>&1 || die "go is missing: install Go or set TLSBENCH to a tlsbench binary"
  (cd "$root" && go build -o "$tmp/tlsbench" ./cmd/tlsbench) || die "go build ./cmd/tlsbench failed"
  bin=$tmp/tlsbench
fi

# --- the lab -------------------------------------------------------------
echo "starting the lab (postgres, mariadb) ..." >&2
"${srv_pin[@]}" "$bin" lab postgres mariadb --key rsa2048 >"$tmp/lab.out" 2>"$tmp/lab.err" &
lab_pid=$!
for _ in $(seq 1200); do
  grep -q '^Ctrl-C stops the servers' "$tmp/lab.out" && break
  kill -0 "$lab_pid" 2>/dev/null || die "tlsbench lab exited: $(tail -c 400 "$tmp/lab.err" | tr '\n' ' ')"
  sleep 0.1
done
grep -q '^Ctrl-C stops the servers' "$tmp/lab.out" || die "tlsbench lab printed no servers in 120 s"

# lab_field ENGINE what [AUTH]: the first URL of ENGINE's section (its
# default auth) or of AUTH, that URL's auth method, the CA file, or the
# header line.
lab_field() {
  awk -v eng="$1" -v what="$2" -v auth="${3:-}" '
    /^[^ ]/ { sec = $1; if (sec == eng && what == "header") { print; exit } next }
    sec != eng { next }
    $NF ~ /^[a-z]+:\/\// && (auth == "" || $1 == auth) {
      if (what == "url") { print $NF; exit }
      if (what == "auth") { print $1; exit }
    }
    what == "ca" && $1 == "ca" { print $2; exit }' "$tmp/lab.out"
}
pg_url=$(lab_field postgres url "$PG_AUTH")
my_url=$(lab_field mariadb url)
pg_ca=$(lab_field postgres ca)
my_ca=$(lab_field mariadb ca)
[[ -n $pg_url && -n $my_url && -n $pg_ca && -n $my_ca ]] ||
  die "cannot read the lab's URLs and CAs from its output"
pg_auth=$(lab_field postgres auth "$PG_AUTH")
my_auth=$(lab_field mariadb auth)

urldecode() { local s=${1//+/ }; printf '%b' "${s//%/\\x}"; }
# parse_url URL PREFIX: sets PREFIX_user, _host, _port, _db, _passfile.
parse_url() {
  local re='^[a-z]+://([^@/]+)@([^:/]+):([0-9]+)/([^?]+)\?(.*)$' kv pf=''
  [[ $1 =~ $re ]] || die "unexpected lab URL form: ${1%%\?*}"
  printf -v "$2_user" '%s' "${BASH_REMATCH[1]}"
  printf -v "$2_host" '%s' "${BASH_REMATCH[2]}"
  printf -v "$2_port" '%s' "${BASH_REMATCH[3]}"
  printf -v "$2_db" '%s' "${BASH_REMATCH[4]}"
  local IFS='&'
  for kv in ${BASH_REMATCH[5]}; do
    if [[ $kv == passfile=* ]]; then pf=$(urldecode "${kv#passfile=}"); fi
  done
  [[ -n $pf && -r $pf ]] || die "the lab URL ${1%%\?*} names no readable passfile"
  printf -v "$2_passfile" '%s' "$pf"
}
pg_user='' pg_host='' pg_port='' pg_db='' pg_passfile=''
my_user='' my_host='' my_port='' my_db='' my_passfile=''
parse_url "$pg_url" pg
parse_url "$my_url" my
[[ $pg_host == 127.0.0.1 && $my_host == 127.0.0.1 ]] || die "the lab does not listen on 127.0.0.1"
pg_dir=$(dirname "$pg_passfile")
my_dir=$(dirname "$my_passfile")
# libpq: no GSSAPI encryption attempt (pgx makes none either).
pg_conninfo="host=$pg_host port=$pg_port user=$pg_user dbname=$pg_db gssencmode=disable"
my_args=(--db-driver=mysql --mysql-host="$my_host" --mysql-port="$my_port" --mysql-user="$my_user" --mysql-db="$my_db")
# The servers' processes, for their CPU: the postmaster (whose children are
# the backends) and mariadbd.
pg_pid='' my_pid=''
if [ -r "$pg_dir/data/postmaster.pid" ]; then read -r pg_pid <"$pg_dir/data/postmaster.pid" || true; fi
if [ -r "$my_dir/mariadbd.pid" ]; then read -r my_pid <"$my_dir/mariadbd.pid" || true; fi
srv_cpu=1
for p in "$pg_pid" "$my_pid"; do
  [[ $p =~ ^[0-9]+$ && -r /proc/$p/stat ]] || srv_cpu=0
done
if [ "$srv_cpu" = 1 ] && [ ! -r "/proc/$pg_pid/task/$pg_pid/children" ]; then srv_cpu=0; fi
pg_backends() { # -> $1: how many client backends run (their title names the client address)
  local k=() p t cnt=0
  read -r -a k <"/proc/$pg_pid/task/$pg_pid/children" || true
  for p in "${k[@]}"; do
    t=''
    { IFS= read -r -d '' t <"/proc/$p/cmdline"; } 2>/dev/null || true
    if [[ $t == *" $pg_host("* ]]; then cnt=$((cnt + 1)); fi
  done
  printf -v "$1" '%d' "$cnt"
}

# MariaDB's password never goes on a command line: sysbench reads it from a
# --config-file, the mariadb client from --defaults-extra-file (both 0600).
my_password=''
IFS= read -r my_password <"$my_passfile" || [ -n "$my_password" ] || die "empty MariaDB passfile"
[[ $my_password != *[[:space:]#\"\'\\]* ]] || die "the MariaDB password has characters the option files cannot carry"
printf 'mysql-password=%s\n' "$my_password" >"$tmp/sysbench.cfg"
printf '[client]\npassword=%s\n' "$my_password" >"$tmp/my.cnf"
unset my_password

# sysbench --mysql-ssl=on is mutual TLS with fixed file names in its working
# directory: the lab's client-capable leaf certificate and its CA.
sbdir=$tmp/sysbench
mkdir "$sbdir"
cp "$my_dir/rsa2048.key" "$sbdir/client-key.pem"
cp "$my_dir/rsa2048.crt" "$sbdir/client-cert.pem"
cp "$my_ca" "$sbdir/cacert.pem"

# pgbench's equivalent of -S on tlsbench's table: the statement of
# tlsbench's point-select (and of sysbench's oltp_point_select).
printf '%s\n' '\set id random(1, 100000)' 'SELECT c FROM sbtest1 WHERE id = :id;' >"$tmp/point_select.sql"

echo "preparing sbtest1 ($ROWS rows) on both servers ..." >&2
for u in "$pg_url" "$my_url"; do
  "$bin" prepare "$u" --tables 1 --rows "$ROWS" >"$tmp/prepare.out" 2>&1 ||
    die "tlsbench prepare ${u%%\?*} failed: $(tail -n 3 "$tmp/prepare.out" | tr '\n' ' ')"
done

# --- what the peers' TLS library negotiates -------------------------------
# pgbench and sysbench use OpenSSL 3 (through libpq and libmariadb) and do
# not say what they negotiated; psql (libpq) asks pg_stat_ssl, the mariadb
# client (libmariadb) asks Ssl_version/Ssl_cipher, and openssl s_client,
# with the same library defaults and (for MariaDB) sysbench's client
# certificate, shows the key exchange group.
pg_peer_tls='?' my_peer_tls='?'
if [ -n "$psql" ]; then
  pg_peer_tls=$(PGPASSFILE=$pg_passfile "$psql" "$pg_conninfo sslmode=require" -XAt -F ' ' \
    -c "SELECT version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()" 2>/dev/null) || pg_peer_tls='?'
fi
if [ -n "$mariadb_cli" ]; then
  my_peer_tls=$("$mariadb_cli" --defaults-extra-file="$tmp/my.cnf" -h "$my_host" -P "$my_port" -u "$my_user" \
    --ssl-ca="$sbdir/cacert.pem" --ssl-cert="$sbdir/client-cert.pem" --ssl-key="$sbdir/client-key.pem" "$my_db" -N \
    -e "SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')" 2>/dev/null |
    awk '{ v[$1] = $2 } END { print v["Ssl_version"], v["Ssl_cipher"] }') || my_peer_tls='?'
fi
s_client_group() { # starttls-protocol port extra-args...
  local proto=$1 port=$2
  shift 2
  openssl s_client -starttls "$proto" -connect "127.0.0.1:$port" -brief "$@" </dev/null 2>&1 |
    awk -F': ' '/^Server Temp Key/ { split($2, g, ", "); print (g[1] == "ECDH" ? g[2] : g[1]); exit }'
}
pg_peer_group=$(s_client_group postgres "$pg_port" -CAfile "$pg_ca" || true)
my_peer_group=$(s_client_group mysql "$my_port" -CAfile "$my_ca" -cert "$sbdir/client-cert.pem" -key "$sbdir/client-key.pem" || true)

# Ssl_accepts counts the server's TLS handshakes: read around each sysbench
# run on a plaintext session, it shows whether sysbench really used TLS.
ssl_accepts() { # -> $1 (empty if unknown)
  local v=''
  if [ -n "$mariadb_cli" ]; then
    v=$("$mariadb_cli" --defaults-extra-file="$tmp/my.cnf" --skip-ssl -h "$my_host" -P "$my_port" -u "$my_user" "$my_db" -N \
      -e "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'" 2>/dev/null | awk '{ print $2 }') || v=''
  fi
  printf -v "$1" '%s' "$v"
}

# --- measuring -----------------------------------------------------------
# Each run records wall time, the CPU of the tool (rusage of reaped children,
# from the `times` builtin, so no helper process may run in between) and the
# server's CPU (/proc, clock ticks): mariadbd's threads; the postmaster, its
# reaped children (backends that ended) and its live children.

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
server_ticks() { # engine -> $2: CPU clock ticks of that server so far
  local line f kids='' ch total=0
  [ "$srv_cpu" = 1 ] || { printf -v "$2" '%d' 0; return; }
  if [ "$1" = pg ]; then
    read -r line <"/proc/$pg_pid/stat" || die "postgres (pid $pg_pid) is gone"
    # The fields after "(comm) ": state is f[0], utime f[11], stime f[12],
    # cutime f[13], cstime f[14].
    read -r -a f <<<"${line##*) }"
    total=$((f[11] + f[12] + f[13] + f[14]))
    read -r kids <"/proc/$pg_pid/task/$pg_pid/children" || true
    for ch in $kids; do
      { read -r line <"/proc/$ch/stat"; } 2>/dev/null || continue
      read -r -a f <<<"${line##*) }"
      total=$((total + f[11] + f[12]))
    done
  else
    read -r line <"/proc/$my_pid/stat" || die "mariadbd (pid $my_pid) is gone"
    read -r -a f <<<"${line##*) }"
    total=$((f[11] + f[12]))
  fi
  printf -v "$2" '%d' "$total"
}

# settle ENGINE: after a PostgreSQL run, waits until the run's backends have
# ended and the postmaster has reaped them: only then is their CPU in its
# cutime (a backend that has just exited is briefly in neither place).
settle() {
  [ "$1" = pg ] && [ "$srv_cpu" = 1 ] || return 0
  local nb i
  for ((i = 0; i < 100; i++)); do
    pg_backends nb
    [ "$nb" -gt 0 ] || break
    sleep 0.02
  done
  sleep 0.1
}

# run ENGINE CMD...: runs CMD in the background (so that a signal stops it at
# once), recording client CPU seconds (CCPU) and server CPU seconds (SCPU).
run() {
  local eng=$1 c0 c1 s0 s1 rc=0
  shift
  server_ticks "$eng" s0; children_cpu c0
  "$@" >"$tmp/run.out" 2>&1 &
  cur_pid=$!
  wait "$cur_pid" || rc=$?
  cur_pid=
  children_cpu c1; settle "$eng"; server_ticks "$eng" s1
  CCPU=$(awk "BEGIN { print ($c1 - $c0) / 1000 }")
  SCPU=$(awk "BEGIN { print ($s1 - $s0) / $tck }")
  return "$rc"
}
tail3() { tail -n 3 "$tmp/run.out" | tr '\n' ' '; }

results=$tmp/results       # cmp round tool figure figure2 client_us server_us close_ms
negotiated=$tmp/negotiated # cmp what tlsbench negotiated
checks=$tmp/checks         # cmp what the server says of the peer's TLS
meta=$tmp/meta             # cmp|peer|title|unit|unit2|kind2
: >"$results"; : >"$negotiated"; : >"$checks"; : >"$meta"

record() { # cmp round tool units figure figure2 close_ms
  local us_c us_s n=${CPU_UNITS:-$4}
  us_c=$(awk "BEGIN { printf \"%.1f\", $CCPU / $n * 1e6 }")
  if [ "$srv_cpu" = 1 ]; then us_s=$(awk "BEGIN { printf \"%.1f\", $SCPU / $n * 1e6 }"); else us_s=-; fi
  echo "$1 $2 $3 $5 $6 $us_c $us_s $7" >>"$results"
  printf '  round %d  %-20s %-9s %10.1f /s  %s  (%d ops, client %s µs/op, server %s µs/op)\n' \
    "$2" "$1" "$3" "$5" "$([ "$6" = - ] || echo "[$6]")" "$4" "$us_c" "$us_s" >&2
}

# tlsbench_run cmp round engine tls(off|on) experiment url args...
tlsbench_run() {
  local cmp=$1 round=$2 eng=$3 tls=$4 exp=$5 url=$6
  shift 6
  local out=$tmp/tb.json
  run "$eng" "$bin" "$exp" "$url" --tables 1 --rows "$ROWS" --query-mode prepared \
    -c "$C" -d "${T}s" --trials 1 -o "$out" "${tb_pin[@]}" "$@" ||
    die "tlsbench $exp ($cmp) failed: $(grep -v '^result:' "$tmp/run.out" | tail -n 3 | tr '\n' ' ')"
  local ops queries ns errs err ver suite group hrr conn close
  # "|"-separated: tabs would merge an empty field with the next one.
  IFS='|' read -r ops queries ns errs err ver suite group hrr conn close < <(jq -r '
    .trials[0] as $t
    | ($t.phases // []) as $ph
    | def ms(names): [$ph[] | select(.name as $n | names | any(. == $n)) | .latency.mean_ms] | add // 0;
    [$t.ops, ($t.queries // $t.ops), $t.elapsed_ns,
     (($t.errors // {}) | add // 0), (.error // ""),
     ($t.negotiated.version // "-"), ($t.negotiated.suite // "-"), ($t.negotiated.group // "-"),
     ($t.negotiated.hello_retry // false),
     ms(["tcp", "startup", "tls-negotiation", "tls-handshake", "auth"]), ms(["close"])]
    | map(tostring | gsub("[|\n]"; " ")) | join("|")' "$out")
  [ -z "$err" ] || die "tlsbench $exp ($cmp): $err"
  [ "$ops" -gt 0 ] || die "tlsbench $exp ($cmp) completed no operation"
  [ "$errs" -eq 0 ] || echo "  warning: tlsbench $exp ($cmp) had $errs failed operations" >&2
  if [ "$tls" = on ]; then
    [ "$ver" != - ] || die "tlsbench $exp ($cmp) did not negotiate TLS"
    echo "$cmp $ver $suite $group$([ "$hrr" = true ] && echo ' after HelloRetryRequest')" >>"$negotiated"
  else
    [ "$ver" = - ] || die "tlsbench $exp ($cmp) negotiated $ver where it should not use TLS"
    echo "$cmp plaintext" >>"$negotiated"
  fi
  local secs rate fig2=- cls=-
  secs=$(awk "BEGIN { print $ns / 1e9 }")
  case $cmp in
    pg-connect-*) # connections/s; connection time, ms; the close phase, ms
      rate=$(awk "BEGIN { print $ops / $secs }")
      fig2=$(awk "BEGIN { printf \"%.3f\", $conn }")
      cls=$(awk "BEGIN { printf \"%.3f\", $close }") ;;
    my-ro-*) # queries/s; transactions/s
      [ "$queries" -eq $((ops * 16)) ] || echo "  warning: tlsbench read-only counted $queries statements for $ops transactions, not 16 each" >&2
      rate=$(awk "BEGIN { print $queries / $secs }")
      fig2=$(awk "BEGIN { printf \"%.1f\", $ops / $secs }") ;;
    *) rate=$(awk "BEGIN { print $queries / $secs }") ;;
  esac
  # CPU is the whole process's, warm-up included: its operations count too,
  # at the measured rate (the warm-up is tlsbench's own; the peers have none).
  local units
  units=$(jq -r '.trials[0] as $t | if $t.experiment == "pool"
    then $t.ops * ($t.elapsed_ns + (.spec.warmup_ns // 0)) / $t.elapsed_ns else $t.ops end' "$out")
  CPU_UNITS=$units record "$cmp" "$round" tlsbench "$ops" "$rate" "$fig2" "$cls"
  local waited
  waited=$(jq -r '.trials[0].client_wait // empty' "$out")
  [ -z "$waited" ] || echo "    tlsbench's workers waited: $waited" >&2
}

# pgbench_run cmp round sslmode [-C]
pgbench_run() {
  local cmp=$1 round=$2 mode=$3
  shift 3
  run pg env PGPASSFILE="$pg_passfile" "${peer_pin[@]}" "$pgbench" -n "$@" -M prepared -c "$C" -j "$C" -T "$T" \
    -f "$tmp/point_select.sql" "$pg_conninfo sslmode=$mode" || die "pgbench ($cmp) failed: $(tail3)"
  local n failed tps conn
  n=$(awk -F': ' '/^number of transactions actually processed/ { print $2 + 0 }' "$tmp/run.out")
  failed=$(awk -F': ' '/^number of failed transactions/ { print $2 + 0 }' "$tmp/run.out")
  tps=$(awk '/^tps = / { print $3 }' "$tmp/run.out")
  conn=$(awk '/^average connection time = / { print $5 }' "$tmp/run.out")
  [[ -n $tps && ${n:-0} -gt 0 ]] || die "pgbench ($cmp) printed no tps: $(tail3)"
  [ "${failed:-0}" -eq 0 ] || echo "  warning: pgbench ($cmp) had $failed failed transactions" >&2
  if [ "$*" = -C ]; then
    [ -n "$conn" ] || die "pgbench -C ($cmp) printed no average connection time: $(tail3)"
    record "$cmp" "$round" pgbench "$n" "$tps" "$conn" -
  elif [[ $cmp == pg-libpq-* ]]; then # its own CPU per transaction, as libpq_run's
    record "$cmp" "$round" pgbench "$n" "$tps" "$(awk "BEGIN { printf \"%.2f\", $CCPU / $n * 1e6 }")" -
  else
    record "$cmp" "$round" pgbench "$n" "$tps" - -
  fi
}

# libpq_run cmp round tls(off|on) url args...: tlsbench pool --client
# libpq, the statement, clients and threads of pgbench_run. Its figures:
# transactions/s, and pgbench's own CPU per transaction (the trial's
# client CPU, pgbench's rusage, after the warm-up) beside that of the
# pgbench run by hand; the client µs/op column is tlsbench's and its
# pgbench's together (the shell's reaped children and theirs).
libpq_run() {
  local cmp=$1 round=$2 tls=$3 url=$4
  shift 4
  local out=$tmp/tb.json
  run pg "$bin" pool "$url" --client libpq --tables 1 --rows "$ROWS" --query-mode prepared --workload point-select \
    -c "$C" -d "${T}s" --trials 1 --warmup "$WARMUP" -o "$out" "${tb_pin[@]}" "$@" ||
    die "tlsbench pool --client libpq ($cmp) failed: $(grep -v '^result:' "$tmp/run.out" | tail -n 3 | tr '\n' ' ')"
  local ops ns errs err cpu variant
  IFS='|' read -r ops ns errs err cpu variant < <(jq -r '.trials[0] as $t
    | [$t.ops, $t.elapsed_ns, (($t.errors // {}) | add // 0), (.error // ""), ($t.client_cpu_ns // 0), $t.variant]
    | map(tostring | gsub("[|\n]"; " ")) | join("|")' "$out")
  [ -z "$err" ] || die "tlsbench pool --client libpq ($cmp): $err"
  [ "$ops" -gt 0 ] || die "tlsbench pool --client libpq ($cmp) completed no operation"
  [ "$errs" -eq 0 ] || echo "  warning: tlsbench pool --client libpq ($cmp) had $errs failed operations" >&2
  case $tls in
    on) [[ $variant == *tls* ]] || die "tlsbench pool --client libpq ($cmp) ran $variant, not TLS" ;;
    off) [[ $variant == *plain* ]] || die "tlsbench pool --client libpq ($cmp) ran $variant, not plain" ;;
  esac
  echo "$cmp libpq's own (pgbench says nothing; see the header)" >>"$negotiated"
  local rate own units
  rate=$(awk "BEGIN { print $ops / ($ns / 1e9) }")
  own=$(awk "BEGIN { printf \"%.2f\", $cpu / $ops / 1e3 }")
  units=$(jq -r '.trials[0].ops * (.trials[0].elapsed_ns + (.spec.warmup_ns // 0)) / .trials[0].elapsed_ns' "$out")
  CPU_UNITS=$units record "$cmp" "$round" tlsbench "$ops" "$rate" "$own" -
}

# sysbench_run cmp round test on|off
sysbench_run() {
  local cmp=$1 round=$2 test=$3 ssl=$4 a0 a1
  ssl_accepts a0
  run my env -C "$sbdir" "${peer_pin[@]}" sysbench --config-file="$tmp/sysbench.cfg" "$test" "${my_args[@]}" \
    --tables=1 --table-size="$ROWS" --rand-type=uniform --db-ps-mode=auto \
    --threads="$C" --time="$T" --mysql-ssl="$ssl" run || die "sysbench $test ($cmp) failed: $(tail3)"
  ssl_accepts a1
  local read other total q qps tx tps ign
  read -r read other total q qps tx tps ign < <(awk '
    /^ +read:/ { r = $2 } /^ +other:/ { o = $2 } /^ +total:/ { t = $2 }
    /^ +queries:/ { q = $2; qs = $3; sub(/^\(/, "", qs) }
    /^ +transactions:/ { x = $2; xs = $3; sub(/^\(/, "", xs) }
    /^ +ignored errors:/ { e = $3 }
    END { print r + 0, o + 0, t + 0, q + 0, qs + 0, x + 0, xs + 0, e + 0 }' "$tmp/run.out")
  [ "$q" -gt 0 ] || die "sysbench $test ($cmp) ran no query: $(tail3)"
  [ "$q" -eq "$total" ] || echo "  warning: sysbench's queries ($q) is not its total ($total)" >&2
  [ "$ign" -eq 0 ] || echo "  warning: sysbench $test ($cmp) ignored $ign errors" >&2
  if [ "$test" = oltp_read_only ]; then
    # 14 reads + BEGIN and COMMIT ("other") per transaction: 16 statements,
    # as tlsbench counts them.
    [[ $other -eq $((2 * tx)) && $read -eq $((14 * tx)) ]] ||
      echo "  warning: sysbench read-only: $read reads and $other other queries for $tx transactions, not 14 and 2 each" >&2
  fi
  if [ -n "$a0" ] && [ -n "$a1" ]; then
    local d=$((a1 - a0))
    if [ "$ssl" = on ] && [ "$d" -lt "$C" ]; then
      die "sysbench --mysql-ssl=on ($cmp): the server accepted $d TLS connections, fewer than its $C threads"
    elif [ "$ssl" = off ] && [ "$d" -ne 0 ]; then
      die "sysbench --mysql-ssl=off ($cmp): the server accepted $d TLS connections meanwhile"
    fi
    echo "$cmp $d" >>"$checks"
  fi
  if [ "$test" = oltp_read_only ]; then
    record "$cmp" "$round" sysbench "$tx" "$qps" "$tps" -
  else
    record "$cmp" "$round" sysbench "$q" "$qps" - -
  fi
}

# --- the comparisons -----------------------------------------------------
what="point select by primary key on sbtest1 (pgbench -S's statement, on sysbench's table)"
cat >"$meta" <<EOF
pg-pool-disable|pgbench|PostgreSQL pool, sslmode=disable: $C persistent connections, $what; pgbench -n -M prepared -c $C -j $C|statements/s|-|-
pg-pool-require|pgbench|PostgreSQL pool, sslmode=require: $C persistent TLS connections, $what; pgbench -n -M prepared -c $C -j $C|statements/s|-|-
pg-connect-disable|pgbench|PostgreSQL connect, sslmode=disable: a new connection per point select, $C workers; pgbench -n -C -M prepared -c $C -j $C|conn/s|conn time ms|conn
pg-connect-require|pgbench|PostgreSQL connect, sslmode=require: a new TLS connection per point select, $C workers; pgbench -n -C -M prepared -c $C -j $C|conn/s|conn time ms|conn
my-point-off|sysbench|MariaDB pool, --mysql-ssl=off: sysbench oltp_point_select --threads=$C, prepared statements|queries/s|-|-
my-point-on|sysbench|MariaDB pool, --mysql-ssl=on: sysbench oltp_point_select --threads=$C, prepared statements, TLS|queries/s|-|-
my-ro-off|sysbench|MariaDB pool, --mysql-ssl=off: sysbench oltp_read_only --threads=$C (16 statements a transaction, BEGIN and COMMIT included)|queries/s|transactions/s|tps
my-ro-on|sysbench|MariaDB pool, --mysql-ssl=on: sysbench oltp_read_only --threads=$C (16 statements a transaction, BEGIN and COMMIT included), TLS|queries/s|transactions/s|tps
pg-libpq-disable|pgbench|PostgreSQL pool, sslmode=disable: tlsbench pool --client libpq -c $C (its pgbench) vs pgbench -n -M prepared -c $C -j $C by hand, $what|transactions/s|pgbench µs/tx|cpu|0.95
pg-libpq-require|pgbench|PostgreSQL pool, sslmode=require: tlsbench pool --client libpq -c $C (its pgbench) vs pgbench -n -M prepared -c $C -j $C by hand, $what|transactions/s|pgbench µs/tx|cpu|0.95
EOF

echo "tlsbench vs pgbench and sysbench: $("$bin" version), $("$pgbench" --version | awk '{ print $1, $3 }'), $(sysbench --version), $(openssl version | cut -d' ' -f1-2)"
echo "machine: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cpus:    $cpus_note"
echo "servers: tlsbench lab, key rsa2048, the same two for every run:"
echo "         $(lab_field postgres header | cut -d, -f1), user $pg_user ($pg_auth), $pg_host:$pg_port"
echo "         $(lab_field mariadb header | cut -d, -f1), user $my_user ($my_auth), $my_host:$my_port"
echo "runs:    $ROUNDS rounds x 10 comparisons x 2 tools, ${T}s each, $C clients, tlsbench first in odd rounds, the peer first in even ones"
echo "TLS the peers negotiate (OpenSSL 3 through libpq and libmariadb; asked once, outside the runs):"
echo "         libpq, sslmode=require:  ${pg_peer_tls:-?} (pg_stat_ssl via psql), group ${pg_peer_group:-?} (openssl s_client -starttls postgres); no client certificate"
echo "         libmariadb, ssl on:      ${my_peer_tls:-?} (Ssl_version/Ssl_cipher via the mariadb client), group ${my_peer_group:-?} (openssl s_client -starttls mysql); with sysbench's client certificate (rsa2048): mutual TLS"
echo

pg_tb_url() { echo "$pg_url&sslmode=$1"; }
# A pair runs tlsbench and its peer back to back, tlsbench first in odd
# rounds and second in even ones (A B, B A, ...): whatever the first run of
# a pair pays or leaves behind (cold server caches, a new process) falls
# on each tool alike.
pair() { # cmp "tlsbench command" "peer command"
  # shellcheck disable=SC2053 # ONLY is a pattern
  [[ $1 == $ONLY ]] || return 0
  if ((r % 2)); then eval "$2"; eval "$3"; else eval "$3"; eval "$2"; fi
}
for ((r = 1; r <= ROUNDS; r++)); do
  echo "round $r/$ROUNDS" >&2
  pair pg-pool-disable 'tlsbench_run pg-pool-disable "$r" pg off pool "$(pg_tb_url disable)" --tls off --workload point-select --warmup "$WARMUP"' \
    'pgbench_run pg-pool-disable "$r" disable'
  pair pg-pool-require 'tlsbench_run pg-pool-require "$r" pg on pool "$(pg_tb_url require)" --tls auto --ca "$pg_ca" --workload point-select --warmup "$WARMUP"' \
    'pgbench_run pg-pool-require "$r" require'
  pair pg-connect-disable 'tlsbench_run pg-connect-disable "$r" pg off connect "$(pg_tb_url disable)" --tls off --workload point-select' \
    'pgbench_run pg-connect-disable "$r" disable -C'
  pair pg-connect-require 'tlsbench_run pg-connect-require "$r" pg on connect "$(pg_tb_url require)" --tls auto --ca "$pg_ca" --workload point-select' \
    'pgbench_run pg-connect-require "$r" require -C'
  pair my-point-off 'tlsbench_run my-point-off "$r" my off pool "$my_url" --tls off --workload point-select --warmup "$WARMUP"' \
    'sysbench_run my-point-off "$r" oltp_point_select off'
  pair my-point-on 'tlsbench_run my-point-on "$r" my on pool "$my_url" --tls auto --ca "$my_ca" --workload point-select --warmup "$WARMUP"' \
    'sysbench_run my-point-on "$r" oltp_point_select on'
  pair my-ro-off 'tlsbench_run my-ro-off "$r" my off pool "$my_url" --tls off --workload read-only --warmup "$WARMUP"' \
    'sysbench_run my-ro-off "$r" oltp_read_only off'
  pair my-ro-on 'tlsbench_run my-ro-on "$r" my on pool "$my_url" --tls auto --ca "$my_ca" --workload read-only --warmup "$WARMUP"' \
    'sysbench_run my-ro-on "$r" oltp_read_only on'
  pair pg-libpq-disable 'libpq_run pg-libpq-disable "$r" off "$(pg_tb_url disable)" --tls off' 'pgbench_run pg-libpq-disable "$r" disable'
  pair pg-libpq-require 'libpq_run pg-libpq-require "$r" on "$(pg_tb_url require)" --tls auto --ca "$pg_ca"' 'pgbench_run pg-libpq-require "$r" require'
done
echo >&2

# --- the tables ----------------------------------------------------------
table() { # cmp
  local peer title unit unit2 kind2
  IFS='|' read -r _ peer title unit unit2 kind2 _ < <(grep "^$1|" "$meta")
  echo "$1: $title"
  awk -v cmp="$1" -v peer="$peer" -v unit="$unit" -v unit2="$unit2" -v kind2="$kind2" '
    $1 != cmp { next }
    $3 == "tlsbench" { a[$2] = $4; a2[$2] = $5; ac[$2] = $6; as[$2] = $7; cl[$2] = $8; n = ($2 > n ? $2 : n) }
    $3 == peer       { b[$2] = $4; b2[$2] = $5; bc[$2] = $6; bs[$2] = $7 }
    function stat(sum, lo, hi) { return sprintf("%.3f (%.3f-%.3f)", sum / n, lo, hi) }
    function caption(u,   w, l, s) { # u centred in 33 columns of dashes
      w = 33 - length(u) - 2; l = int(w / 2); s = ""
      while (length(s) < l) s = s "-"
      s = s " " u " "
      while (length(s) < 33) s = s "-"
      return s
    }
    END {
      two = kind2 != "-"
      printf "%-5s %s", "", caption(unit)
      if (two) printf "  %s", caption(unit2)
      if (kind2 == "conn") printf "  %9s", "(ms)"
      printf "\n"
      printf "%-5s %12s %12s %7s", "round", "tlsbench", peer, "ratio"
      if (two) printf "  %12s %12s %7s", "tlsbench", peer, "ratio"
      if (kind2 == "conn") printf "  %9s", "tb close"
      printf "  %-19s %-19s\n", "client µs/op tb/" substr(peer, 1, 3), "server µs/op tb/" substr(peer, 1, 3)
      lo = lo2 = loc = 1e300; hi = hi2 = hic = 0
      for (r = 1; r <= n; r++) {
        q = b[r] > 0 ? a[r] / b[r] : 0
        sq += q; lo = q < lo ? q : lo; hi = q > hi ? q : hi
        sa += a[r]; sb += b[r]
        printf "%-5s %12.1f %12.1f %7.3f", r, a[r], b[r], q
        if (two) {
          q2 = b2[r] > 0 ? a2[r] / b2[r] : 0
          sq2 += q2; lo2 = q2 < lo2 ? q2 : lo2; hi2 = q2 > hi2 ? q2 : hi2
          sa2 += a2[r]; sb2 += b2[r]
          printf "  %12.3f %12.3f %7.3f", a2[r], b2[r], q2
        }
        if (kind2 == "conn") {
          qc = b2[r] > 0 ? (a2[r] + cl[r]) / b2[r] : 0
          sqc += qc; loc = qc < loc ? qc : loc; hic = qc > hic ? qc : hic; scl += cl[r]
          printf "  %9.3f", cl[r]
        }
        printf "  %8s / %-8s %8s / %-8s\n", ac[r], bc[r], as[r], bs[r]
      }
      printf "%-5s %12.1f %12.1f %7.3f", "mean", sa / n, sb / n, sq / n
      if (two) printf "  %12.3f %12.3f %7.3f", sa2 / n, sb2 / n, sq2 / n
      if (kind2 == "conn") printf "  %9.3f", scl / n
      printf "\n"
      printf "ratio tlsbench/%s, %s: %s over %d rounds\n", peer, unit, stat(sq, lo, hi), n
      if (two) printf "ratio tlsbench/%s, %s: %s\n", peer, unit2, stat(sq2, lo2, hi2)
      if (kind2 == "conn")
        printf "  (tlsbench conn time = mean of its phases tcp + startup + tls-handshake + auth; pgbench times\n   PQconnectdb and, under -C, PQfinish too: with tlsbench'"'"'s close phase added the ratio is %s)\n", stat(sqc, loc, hic)
    }' "$results"
  local neg
  neg=$(awk -v cmp="$1" '$1 == cmp { $1 = ""; sub(/^ /, ""); print }' "$negotiated" | sort | uniq -c |
    awk '{ n = $1; $1 = ""; printf "%s%s%s", (NR > 1 ? "; " : ""), substr($0, 2), (n > 1 ? " (x" n ")" : "") }')
  echo "tlsbench negotiated: $neg"
  case $1 in
    pg-*-require) echo "pgbench (libpq) negotiates: ${pg_peer_tls:-?}, group ${pg_peer_group:-?} (probed once, see the header)" ;;
    my-*-on)
      local acc
      acc=$(awk -v cmp="$1" '$1 == cmp { printf "%s%s", (s ? ", " : ""), $2; s = 1 }' "$checks")
      echo "sysbench (libmariadb) negotiates: ${my_peer_tls:-?}, group ${my_peer_group:-?}; the server accepted ${acc:-?} TLS connections during its runs" ;;
    my-*-off)
      local acc
      acc=$(awk -v cmp="$1" '$1 == cmp { printf "%s%s", (s ? ", " : ""), $2; s = 1 }' "$checks")
      echo "sysbench: plaintext; the server accepted ${acc:-?} TLS connections during its runs" ;;
  esac
  echo
}

for cmp in pg-pool-disable pg-pool-require pg-connect-disable pg-connect-require \
  my-point-off my-point-on my-ro-off my-ro-on pg-libpq-disable pg-libpq-require; do
  # shellcheck disable=SC2053 # ONLY is a pattern
  [[ $cmp == $ONLY ]] || continue
  table "$cmp"
done
echo "client µs/op: CPU of the whole tool process (rusage) per op; server µs/op: the server's CPU over the run"
echo "  (postmaster and backends / mariadbd) per op; op = statement (point select), connection (connect),"
echo "  transaction (read-only). CPUs: $cpus_note."
echo "  tlsbench's pool warm-up (--warmup ${WARMUP}) counts as operations at its measured rate."
echo

# --- the summary -----------------------------------------------------------
echo "summary: ratio = tlsbench / peer, mean of the per-round ratios (min-max), $ROUNDS rounds, ${T}s, $C clients"
awk -F'|' 'NR == FNR { peer[$1] = $2; unit[$1] = $4; unit2[$1] = $5; kind2[$1] = $6; target[$1] = ($7 == "" ? 1 : $7); order[++m] = $1; next }
  { split($0, f, " "); c = f[1]; t = f[3]
    if (t == "tlsbench") { a[c, f[2]] = f[4]; a2[c, f[2]] = f[5]; cl[c, f[2]] = f[8]; if (f[2] > n[c]) n[c] = f[2] }
    else { b[c, f[2]] = f[4]; b2[c, f[2]] = f[5] } }
  END {
    for (i = 1; i <= m; i++) {
      c = order[i]; k = n[c]; s = s2 = 0; lo = lo2 = 1e300; hi = hi2 = 0
      if (k == 0) continue # not run (PEERS_ONLY)
      for (r = 1; r <= k; r++) {
        q = a[c, r] / b[c, r]; s += q; lo = q < lo ? q : lo; hi = q > hi ? q : hi
        if (kind2[c] != "-") { q2 = a2[c, r] / b2[c, r]; s2 += q2; lo2 = q2 < lo2 ? q2 : lo2; hi2 = q2 > hi2 ? q2 : hi2 }
      }
      printf "  %-19s %-15s %.3f (%.3f-%.3f)   tlsbench >= %s%s: %s\n", c, unit[c], s / k, lo, hi, (target[c] == 1 ? "" : target[c] "x "), peer[c], (s / k >= target[c] ? "yes" : "no")
      if (kind2[c] == "conn") {
        d = (s2 / k - 1) * 100
        printf "  %-19s %-15s %.3f (%.3f-%.3f)   connection time within 5%%: %s (%+.1f%%)\n", "", unit2[c], s2 / k, lo2, hi2, (d <= 5 && d >= -5 ? "yes" : "no"), d
      } else if (kind2[c] == "tps" || kind2[c] == "cpu") {
        printf "  %-19s %-15s %.3f (%.3f-%.3f)\n", "", unit2[c], s2 / k, lo2, hi2
      }
    }
  }' "$meta" "$results"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
