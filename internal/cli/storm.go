package cli

const stormShort = "Connect N clients at one instant, as after a failover: how long until all are back"

// stormLong says in storm's help what the storm measures.
const stormLong = `

storm releases --clients N clients at one instant, each trial: every client
connects (and with --first-op runs the workload once) and all stay connected
until the last is done, then close. Per variant: the time until all were
connected and until the last first operation, the spread of their dial
starts, each phase's percentiles (the wait for the others until the close,
the hold, apart), errors by kind, the kernel's listen-queue overflows (machine-wide counters),
and, for servers tlsbench starts, their CPU during the storm and their memory
per held connection. -c, -d and -n do not apply: each client connects once.`
