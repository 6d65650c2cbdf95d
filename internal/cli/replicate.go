package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func newReplicateCmd(argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f replicateFlags
	cmd := &cobra.Command{
		Use:   "replicate [--lab postgres|postgres:18|redis|mariadb|galera | PRIMARY_URL --replica REPLICA_URL]",
		Short: "Measure the replication link between a primary and its replica, plain vs TLS",
		Long: `Measure what TLS on the replication link costs: tlsbench builds a lab cluster
(PostgreSQL 15: a primary and a physical streaming replica made by pg_basebackup;
--lab postgres:18: PostgreSQL 18's, the replica a file copy between pg_backup_start
and pg_backup_stop, as its npm build has no pg_basebackup; Redis: a primary and a
replica, asynchronous only; MariaDB: a primary and an asynchronous GTID replica made
from a mariadb-dump snapshot; Galera: 3 nodes, writes on node 1, the heartbeat read
on node 2), on loopback, and for each variant of the link (--tls, --key, --sync) runs
closed-loop writes on the primary (one-row INSERT transactions, -c writers) while
a heartbeat row is written every --heartbeat and read on the replica every
--lag-poll. It reports each write's commit latency, the replica's lag behind the
heartbeat (beside the server's own replay_lag), writes/s, the WAL bytes sent and
the CPU of each node. Each trial first checks from the primary (PostgreSQL: pg_stat_replication
joined with pg_stat_ssl; Redis: the port of the replica's connection in CLIENT
LIST; MariaDB: performance_schema.status_by_thread of the replica's connection;
Galera: each node's log and a TLS handshake with its group port) that the link is
TLS of the variant's version, or plain. A Galera cluster restarts when its group
link changes (socket.ssl is read at start only).

Only the replication link changes: the writers' link to the primary is plain
(--client-tls: TLS) in every variant. --rtt delays the replication link alone
(through a relay; Galera: node 3 runs behind a delay link, a network namespace
of its own, as a second data centre, which root and /dev/net/tun allow).
--resync times a whole copy of the primary over each variant's link first:
pg_basebackup, or Redis's full sync of 200,000 keys; Galera: an IST to node 3
(64 MiB of writes it missed, over the group link's TLS) and an SST (rsync,
through stunnel on a TLS link, plain across --rtt's delay link).

PRIMARY_URL --replica URL measures a PostgreSQL cluster of your own as it is: one
variant, the link as configured (checked from the primary's pg_stat_ssl, which
its user needs pg_monitor to read), the writers' link as PRIMARY_URL asks. It
writes only to two tables it creates on the primary and drops at the end.

-c 1,4,16 sweeps the writers, each count a cell of every variant. --rate runs
the writes at a rate instead (poisson arrivals, each timed from its intended
start); --rate auto (or FROM..TO) searches per variant the highest write rate
at which the replica's heartbeat lag p99 stays under --lag-slo (1s) and, with
--sync on or remote_apply, the commit p99 under --slo.

MariaDB's resync is not measured.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("replicate takes one URL, the primary's: give the replica's as --replica URL")}
			}
			raw := f.Replication
			if len(args) == 1 {
				raw.Primary = args[0]
			}
			giveTable(cmd.Flags(), replicateOptions, raw.Give)
			if f.rate != "" {
				var err error
				if raw.Rates, raw.Knee, err = plan.ParseRates(f.rate); err != nil {
					return err
				}
			}
			p, err := plan.NewReplication(raw)
			if err != nil {
				return err
			}
			return replicateRun(cmd.Context(), p, f.output, f.quiet, f.gate, argv, stdout, stderr)
		},
	}
	registerTable(cmd.Flags(), replicateOptions, onReplicate, &f, tableDefaults(replicateOptions, onReplicate, func(when string) (plan.Replication, error) {
		var raw plan.Replication
		if when == "search" {
			_, raw.Knee, _ = plan.ParseRates("auto")
		}
		return plan.NewReplication(raw)
	}))
	f.gate.register(cmd, "a gate the run must pass, else exit 3, repeatable: replicate[VARIANT|*].QUANTITY OP BOUND [UNIT] [@ci95], e.g. 'replicate[tls1.3].overhead.commit.p99 < 20% @ci95', 'replicate[tls1.3].lag.p99 < 1s' (docs/gates.md)",
		"stop after the first trial after which a gate can no longer pass: its figure fails the bound, with @ci95 its whole interval (the trials run are kept and saved)")
	refuseShard(cmd, "replicate measures a cluster tlsbench builds on this machine")
	return cmd
}

// replicateFlags are replicate's flags: plan.Replication's, and where the
// figures go.
type replicateFlags struct {
	plan.Replication
	rate   string
	output string
	quiet  bool
	gate   gateFlags // --gate, --gates, --gate-abort, --junit, --summary-md (gates.go)
}

type replicateOption = option[replicateFlags, plan.Replication]

// replicateOptions are replicate's flags.
var replicateOptions = []replicateOption{
	{flag: "lab", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Lab },
		usage: "the engine of the lab cluster: " + strings.Join(plan.ReplicaLabs, ", ") + " (postgres:18: PostgreSQL 18)", def: func(p plan.Replication) string { return p.Lab }},
	{flag: "tls", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.TLS },
		usage: "replication link variants: off, 1.2, 1.3", def: func(p plan.Replication) string { return strings.Join(p.TLS, ",") }},
	{flag: "key", field: "keys", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Keys },
		usage: "the primary's certificate keys for the TLS variants: " + strings.Join(plan.KeyTypes, ", "), def: func(p plan.Replication) string { return strings.Join(p.Keys, ",") }},
	{flag: "sync", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Sync },
		usage: "commit modes: off (asynchronous), on, remote_apply (synchronous_commit with the replica in synchronous_standby_names)", def: func(p plan.Replication) string { return strings.Join(p.Sync, ",") }},
	{flag: "replica", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Replica },
		usage: "with PRIMARY_URL, the URL of its replica: your own PostgreSQL cluster, measured as it is (one variant, the link as configured)"},
	{flag: "client-tls", section: secTarget, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.ClientTLS },
		usage: "the writers reach the primary over TLS (Go's default: 1.3) in every variant; plain by default"},
	{flag: "concurrency", short: "c", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Concurrency },
		usage: "writers on the primary, each in a closed loop; a list sweeps them (1,4,16); with --rate, the sessions that serve the arrivals", def: func(p plan.Replication) string { return ints(p.Concurrency) }},
	{flag: "duration", short: "d", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Duration },
		usage: "measured time of each trial", def: func(p plan.Replication) string { return p.Duration.String() }},
	{flag: "warmup", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Warmup },
		usage: "writes before each trial's measured time", def: func(p plan.Replication) string { return p.Warmup.String() }},
	{flag: "trials", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Trials },
		usage: "trials per variant, interleaved", def: func(p plan.Replication) string { return fmt.Sprint(p.Trials) }},
	{flag: "timeout", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Timeout },
		usage: "bound of each operation, and of the replica's catching up after a trial (past it the trial is marked behind)", def: func(p plan.Replication) string { return p.Timeout.String() }},
	{flag: "heartbeat", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Heartbeat },
		usage: "how often the heartbeat row is written on the primary", def: func(p plan.Replication) string { return p.Heartbeat.String() }},
	{flag: "lag-poll", section: secLoad, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.LagPoll },
		usage: "how often the replica is read for the heartbeat: the lag's resolution", def: func(p plan.Replication) string { return p.LagPoll.String() }},
	{flag: "rate", field: "rates", section: secRate, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.rate },
		usage: "writes per second (poisson arrivals) instead of a closed loop, a list compares, e.g. 200,1000; auto or FROM..TO searches each variant's highest rate within --lag-slo (and --slo); latency counts from each write's intended start"},
	{flag: "lag-slo", section: secRate, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.LagSLO },
		usage: "with --rate auto or FROM..TO: the replica's heartbeat lag p99 a rate must keep under", def: func(p plan.Replication) string { return p.LagSLO.String() }, when: "search"},
	{flag: "slo", section: secRate, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.SLO },
		usage: "with --rate auto or FROM..TO and --sync on or remote_apply: the commit p99 (from the intended start) a rate must keep under too (default " + plan.DefaultSLO.String() + ")"},
	{flag: "rtt", section: secPaths, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.RTT },
		usage: "emulated round trip of the replication link alone (a delaying relay between the nodes; Galera: node 3 behind a delay link)"},
	{flag: "resync", section: secOther, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.Resync },
		usage: "time a whole copy of the primary (pg_basebackup; Redis: a full sync; Galera: an IST and an SST to node 3) over each variant's link before the trials"},
	{flag: "output", short: "o", field: "-", section: secOutput, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.output },
		usage: "result file (default tlsbench-YYYYMMDD-HHMMSS.json)"},
	{flag: "quiet", short: "q", field: "-", section: secOutput, on: onReplicate, ptr: func(f *replicateFlags) any { return &f.quiet },
		usage: "no progress on stderr (warnings and errors still show)"},
}

// replicateRun builds the lab cluster, runs the trials, stops the cluster
// (also on an error or Ctrl-C) and saves the result with the trials that
// finished.
func replicateRun(ctx context.Context, p plan.Replication, output string, quiet bool, gf gateFlags, argv []string, stdout, stderr io.Writer) error {
	gates, err := gf.forReplicate(p)
	if err != nil {
		return err
	}
	out, err := openResultFile(output)
	if err != nil {
		return err
	}
	defer out.discard()
	sweepStale(stderr)
	lines := newRunProgress(stderr, quiet, "")
	c, kind, built, err := openCluster(ctx, p, lines)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	res := newResult(argv)
	res.Replicate = &result.Replicate{Plan: p, Built: built}
	res.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Replicate}, Trials: p.Trials, Duration: p.Duration, Timeout: p.Timeout, Lab: p.Lab, Keys: p.Keys}
	res.Target = result.Target{URL: cmp.Or(p.Primary, "lab:"+p.Lab+" cluster"), Kind: kind, Servers: c.Info()}
	res.Notes = append(res.Notes, c.Notes()...)
	res.Trials = []result.Trial{}
	// --gate-abort cancels the trials, not the run (as run's).
	trialsCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := gf.stopper(gates, cancel)
	var bar *progress
	judged := 0
	runErr := bench.Replicate(trialsCtx, res, c, func(done, total int, label string) {
		// Told before each trial, and at the end: a trial finished since.
		if n := len(res.Trials); n > judged {
			judged = n
			stop.afterTrial(res, res.Trials[n-1])
		}
		if stop.where() != "" {
			return // the next trial does not run
		}
		if bar == nil && !quiet {
			bar = newBar(stderr, int64(total), "replicate")
		}
		if bar != nil {
			bar.set(int64(done), int64(total))
		}
		if label != "" {
			lines.printf("%s", label)
		}
	})
	if bar != nil {
		bar.finish()
	}
	runErr = stop.ended(ctx, res, runErr)
	// The nodes are stopped before the tables print: a node killed
	// mid-run leaves nothing behind, whatever the save does.
	if serr := c.Stop(); serr != nil && runErr == nil && ctx.Err() == nil {
		runErr = serr
		res.Error = serr.Error()
	}
	if len(res.Trials) > 0 {
		recordVerdicts(gates, res)
	}
	if err := out.finish(res, len(res.Trials) > 0, "the trials that finished", runErr, stdout, stderr); err != nil {
		return err
	}
	return gf.finish(res.Gates, "tlsbench replicate", res.Started.Format(time.RFC3339), stop)
}

// labCluster is a lab cluster as replicate runs and records it.
type labCluster interface {
	bench.Cluster
	Info() []result.Server
	Notes() []string
	Stop() error
}

// openCluster opens the user's cluster or starts the lab cluster of p's
// engine, and says what it is and how its replica was built (nil when
// not timed).
func openCluster(ctx context.Context, p plan.Replication, lines *runProgress) (labCluster, string, *result.Resync, error) {
	if primary, replica := p.URLs(); primary != "" {
		lines.printf("checking your cluster: the primary, its replica, tlsbench's tables")
		c, err := lab.OpenUserCluster(ctx, primary, replica)
		return c, "your PostgreSQL primary + replica, as configured", nil, err
	}
	o := lab.Options{Keys: p.Keys, Version: p.Version()}
	switch p.Engine() {
	case "redis":
		lines.printf("starting the lab cluster: Redis primary and replica (REPLICAOF)")
		c, err := lab.StartRedisCluster(ctx, o)
		return c, "Redis primary + replica", nil, err
	case "mariadb":
		lines.printf("starting the lab cluster: MariaDB primary and replica (mariadb-dump snapshot, GTID)")
		// Its build (c.Built) copies kilobytes: no figure of a rate.
		c, err := lab.StartMariaDBCluster(ctx, o)
		return c, "MariaDB primary + asynchronous replica", nil, err
	case "galera":
		if p.RTT > 0 {
			lines.printf("starting the lab cluster: 3 Galera nodes, node 3 behind a delay link (node 1 bootstraps, nodes 2 and 3 join by rsync SST)")
			c, err := lab.StartGaleraClusterWAN(ctx, o, lab.DelayLinkOptions{})
			return c, "Galera cluster of 3 nodes, node 3 in another data centre", nil, err
		}
		lines.printf("starting the lab cluster: 3 Galera nodes (node 1 bootstraps, nodes 2 and 3 join by rsync SST)")
		c, err := lab.StartGaleraCluster(ctx, o)
		return c, "Galera cluster of 3 nodes", nil, err
	}
	lines.printf("starting the lab cluster: PostgreSQL %s primary and replica", cmp.Or(o.Version, "(the distribution's)"))
	c, err := lab.StartPostgresCluster(ctx, o)
	if err != nil {
		return nil, "", nil, err
	}
	return c, "PostgreSQL " + c.Primary.Info().Version + " primary + streaming replica", &c.Built, nil
}
