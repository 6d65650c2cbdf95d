# cpus.sh, sourced by the peers scripts: PEERS_CLIENT_CPUS.
#
# Empty (the default): every client and server shares the CPUs this shell
# may use, as on a machine that runs its own database. A CPU list in
# taskset's syntax (0, 0-1,3): the clients (tlsbench with --client-cpus,
# the peer under taskset) run there and the servers on the other CPUs, so
# that a client's own cost cannot take CPU from the server it drives, and
# the kernel has no client and server threads to pair on one CPU (on a
# shared 2-CPU machine whether it does decides ±20% of a run's rate).
#
# Sets: cpus_note (a line for the header), peer_pin (a command prefix for
# the peers), tb_pin (tlsbench's flags), srv_pin (a prefix for the
# servers).

# cpu_set LIST -> one CPU number a line; fails on anything else.
cpu_set() {
  local part parts
  IFS=, read -ra parts <<<"$1"
  [ "${#parts[@]}" -gt 0 ] || return 1
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ]; then
      seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    elif [[ $part =~ ^[0-9]+$ ]]; then
      echo "$part"
    else
      return 1
    fi
  done
}

peer_pin=()
tb_pin=()
srv_pin=()
usable_cpus=$(taskset -pc $$ | awk -F': ' '{ print $2 }')
cpus_note="clients and servers share CPUs $usable_cpus"
if [ -n "${PEERS_CLIENT_CPUS:-}" ]; then
  client_set=$(cpu_set "$PEERS_CLIENT_CPUS" | sort -nu) ||
    die "PEERS_CLIENT_CPUS=$PEERS_CLIENT_CPUS: use taskset's list syntax, e.g. 0 or 0-1,3"
  usable_set=$(cpu_set "$usable_cpus" | sort -nu)
  [ -z "$(comm -23 <(echo "$client_set") <(echo "$usable_set"))" ] ||
    die "PEERS_CLIENT_CPUS=$PEERS_CLIENT_CPUS: this shell may use CPUs $usable_cpus only"
  server_set=$(comm -13 <(echo "$client_set") <(echo "$usable_set"))
  [ -n "$server_set" ] ||
    die "PEERS_CLIENT_CPUS=$PEERS_CLIENT_CPUS leaves no CPU of $usable_cpus for the servers: name fewer"
  client_cpus=$(paste -sd, <<<"$client_set")
  server_cpus=$(paste -sd, <<<"$server_set")
  peer_pin=(taskset -c "$client_cpus")
  tb_pin=(--client-cpus "$client_cpus")
  srv_pin=(taskset -c "$server_cpus")
  cpus_note="clients on CPUs $client_cpus (tlsbench --client-cpus, the peers under taskset), servers on $server_cpus"
fi
