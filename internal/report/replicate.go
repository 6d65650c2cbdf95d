package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// A replicate result (tlsbench replicate): per variant of the replication
// link, the writes' commit latency and rate on the primary, the replica's
// lag by heartbeat beside the server's own view, the stream sent and each
// node's CPU; each TLS link compared with the plain link of its commit
// mode, trials paired by round.

// isReplicate reports whether r is a replicate result.
func isReplicate(r *result.Result) bool { return r.Replicate != nil }

// replIndex is a replicate result's trials by variant, in round order.
type replIndex struct {
	vs     []plan.ReplicaVariant
	trials map[string][]result.Trial
	rounds int
}

func newReplIndex(r *result.Result) *replIndex {
	x := &replIndex{vs: r.Replicate.Plan.Variants(), trials: map[string][]result.Trial{}}
	for _, t := range r.Trials {
		if t.Replication != nil {
			x.trials[t.Variant] = append(x.trials[t.Variant], t)
			x.rounds = max(x.rounds, len(x.trials[t.Variant]))
		}
	}
	return x
}

// baseline is the plain variant of v's commit mode, "" when none was
// measured.
func (x *replIndex) baseline(v plan.ReplicaVariant) string {
	for _, b := range x.vs {
		if b.Baseline && b.Sync == v.Sync && len(x.trials[b.ID]) > 0 {
			return b.ID
		}
	}
	return ""
}

// replBaseline is the baseline of the variant named name in a replicate
// result: the plain link of its commit mode, "" for none; what the
// generic summaries (CSV, JSON) compare it with too.
func replBaseline(r *result.Result, name string) string {
	x := newReplIndex(r)
	for _, v := range x.vs {
		if v.ID == name {
			return x.baseline(v)
		}
	}
	return ""
}

// replFigure reads one figure of a replicate trial.
type replFigure func(t result.Trial) float64

var (
	writesPerSec replFigure = func(t result.Trial) float64 { return t.Replication.WritesPerSec }
	commitP50    replFigure = func(t result.Trial) float64 { return t.Replication.Commit.P50 }
	commitP95    replFigure = func(t result.Trial) float64 { return t.Replication.Commit.P95 }
	commitP99    replFigure = func(t result.Trial) float64 { return t.Replication.Commit.P99 }
	lagP50       replFigure = func(t result.Trial) float64 { return lagShown(t.Replication.Lag.P50) }
	lagP95       replFigure = func(t result.Trial) float64 { return lagShown(t.Replication.Lag.P95) }
	lagP99       replFigure = func(t result.Trial) float64 { return lagShown(t.Replication.Lag.P99) }
	lagMax       replFigure = func(t result.Trial) float64 { return lagShown(t.Replication.Lag.Max) }
	serverLagP50 replFigure = func(t result.Trial) float64 {
		if t.Replication.ServerLag.Count == 0 {
			return math.NaN() // none sampled, or none the engine reports (Redis)
		}
		return lagShown(t.Replication.ServerLag.P50) // Seconds_Behind_Master's 0 is the histogram's least value
	}
	lagRes   replFigure = func(t result.Trial) float64 { return float64(t.Replication.LagResolution) / 1e6 }
	linkMBps replFigure = func(t result.Trial) float64 {
		return float64(t.Replication.LinkBytes) / 1e6 / t.Elapsed.Seconds()
	}
	primaryUs replFigure = func(t result.Trial) float64 { return perWrite(t, t.Replication.PrimaryCPU.Seconds()) }
	replicaUs replFigure = func(t result.Trial) float64 { return perWrite(t, t.Replication.ReplicaCPU.Seconds()) }
)

// nodeUs is the CPU per write of the node at index i of NodeCPU (past
// the primary and the replica: Galera's third node).
func nodeUs(i int) replFigure {
	return func(t result.Trial) float64 {
		if i >= len(t.Replication.NodeCPU) {
			return math.NaN()
		}
		return perWrite(t, t.Replication.NodeCPU[i].Seconds())
	}
}

// moreNodes is how many nodes past the primary and the replica r's
// trials measured the CPU of.
func moreNodes(r *result.Result) int {
	n := 0
	for _, t := range r.Trials {
		if t.Replication != nil {
			n = max(n, len(t.Replication.NodeCPU)-2)
		}
	}
	return n
}

// lagShown is a heartbeat lag in ms, 0 below a microsecond: a lag of 0
// (seen before the commit answered) is kept as the histogram's least
// value, 100 ns.
func lagShown(ms float64) float64 {
	if ms < 0.001 {
		return 0
	}
	return ms
}

// perWrite is CPU seconds per committed write, in µs.
func perWrite(t result.Trial, sec float64) float64 {
	if t.Ops == 0 || sec == 0 { // no writes, or CPU not measured (your own cluster)
		return math.NaN()
	}
	return sec * 1e6 / float64(t.Ops)
}

// cell is the mean (stddev) of f over v's trials.
func (x *replIndex) cell(v string, f replFigure, p precision, unit string) Cell {
	var xs []float64
	for _, t := range x.trials[v] {
		if y := f(t); finite(y) {
			xs = append(xs, y)
		}
	}
	return meanCell(xs, p, unit)
}

// pairs are f of v's and of base's trials of the same rounds.
func (x *replIndex) pairs(v, base string, f replFigure) (bs, vs []float64) {
	for _, t := range x.trials[v] {
		for _, b := range x.trials[base] {
			if b.Round == t.Round && finite(f(t), f(b)) {
				bs, vs = append(bs, f(b)), append(vs, f(t))
			}
		}
	}
	return bs, vs
}

// change is v's f against its baseline's, paired by round: relative.
func (x *replIndex) change(v plan.ReplicaVariant, f replFigure) stats.Delta {
	base := x.baseline(v)
	if base == "" || base == v.ID {
		return stats.Delta{}
	}
	return stats.Paired(x.pairs(v.ID, base, f))
}

// diff is v's f minus its baseline's, paired by round: absolute.
func (x *replIndex) diff(v plan.ReplicaVariant, f replFigure) stats.Summary {
	base := x.baseline(v)
	if base == "" || base == v.ID {
		return stats.Summary{}
	}
	bs, vs := x.pairs(v.ID, base, f)
	ds := make([]float64, len(bs))
	for i := range bs {
		ds[i] = vs[i] - bs[i]
	}
	return stats.Summarize(ds)
}

// vsCell is the relative change cell: "baseline", "-" or the change.
func (x *replIndex) vsCell(v plan.ReplicaVariant, f replFigure) Cell {
	if v.ID == x.baseline(v) {
		return textCell("baseline")
	}
	return deltaCell(x.change(v, f))
}

// diffCell is the absolute difference cell, "+1.2 ±0.4 *" in unit.
func (x *replIndex) diffCell(v plan.ReplicaVariant, f replFigure, unit string) Cell {
	if v.ID == x.baseline(v) {
		return textCell("baseline")
	}
	s := x.diff(v, f)
	if s.N == 0 {
		return textCell("-")
	}
	c := Cell{Text: diffText(s), Unit: unit, Value: s.Mean, StdDev: s.StdDev, CI: s.CI95}
	return c
}

// diffText renders a paired difference: "+1.23 ±0.40 *", the star when
// its interval excludes 0.
func diffText(s stats.Summary) string {
	out := signed(s.Mean, millis)
	if finite(s.CI95) {
		out += " ±" + num(s.CI95, millis)
		if math.Abs(s.Mean) > s.CI95 {
			return out + " *"
		}
	}
	return out + "  "
}

// replEngine is how a replicate result's tables name what its engine
// does.
type replEngine struct{ write, stream, link, server, copier string }

var replEngines = map[string]replEngine{
	"postgres": {
		write:  "one INSERT of a 100-byte row, its own transaction",
		stream: "WAL sent: sent_lsn's advance over the trial (the payload, before TLS's framing)",
		link:   "as pg_stat_ssl showed the walsender's connection after each trial",
		server: "server replay_lag is pg_stat_replication's, sampled every 100 ms, the replica's reports at most 1 s apart",
	},
	"redis": {
		write:  "one SET of a 100-byte value",
		stream: "stream sent: master_repl_offset's advance over the trial (the replication stream, before TLS's framing)",
		link:   "as the primary's CLIENT LIST showed the replica's connection after each trial (the tls-port: TLS, of the version tls-protocols allows; Redis does not report a connection's)",
		server: "Redis reports no replay lag of its own (INFO's lag is whole seconds since the replica's last ack)",
	},
	"mariadb": {
		write:  "one INSERT of a 100-byte row, autocommit",
		stream: "bytes sent: Bytes_sent of the primary's binlog dump connection to the replica over the trial (binlog events, before TLS's framing)",
		link:   "as the primary's performance_schema.status_by_thread showed the replica's connection (Ssl_version) after each trial",
		server: "server's lag is the replica's Seconds_Behind_Master, sampled every 100 ms: whole seconds, a resolution of 1 s",
		copier: "mariadb-dump's and the loading mariadb client's CPU",
	},
	"galera": {
		write:  "one INSERT of a 100-byte row on node 1, autocommit, answered once every node has certified it",
		stream: "bytes sent: node 1's wsrep_replicated_bytes over the trial (its writesets, before TLS's framing)",
		link:   "as each node's log showed its group link (ssl:// or tcp://) and a TLS handshake with each node's group port answered, when the cluster started with the variant's link; primary: node 1 (written), replica: node 2 (read)",
		server: "Galera reports no lag in time: its own view is node 2's receive queue and flow control (below)",
	},
}

// pausedPct is the share of a Galera trial that flow control paused
// replication, in percent.
var pausedPct replFigure = func(t result.Trial) float64 { return 100 * t.Replication.FlowControlPaused }

// replicateTables writes a replicate result's tables.
func (ix *index) replicateTables(b *body) {
	x := newReplIndex(ix.r)
	eng, ok := replEngines[ix.r.Replicate.Plan.Lab]
	if !ok {
		eng = replEngines["postgres"]
	}
	over := "mean (stddev) over " + plural(x.rounds, "trial")
	legend := ix.deltaLegend()
	w := Table{Title: "replicate: writes on the primary and their commit latency, " + over, Left: 1,
		Header: []string{"variant", "writes/s", "vs baseline", "commit p50 ms", "p95 ms", "p99 ms", "p99 vs baseline, ms"}}
	l := Table{Title: "replicate: replica lag by heartbeat, ms, " + over, Left: 1,
		Header: []string{"variant", "p50", "p95", "p99", "max", "p99 vs baseline", "server's lag p50", "resolution"}}
	n := Table{Title: "replicate: the replication link and each node's CPU, " + over, Left: 1,
		Header: []string{"variant", "link (from the primary)", "sent MB/s", "primary µs/write", "vs baseline", "replica µs/write", "vs baseline"}}
	more := moreNodes(ix.r)
	for i := range more {
		n.Header = append(n.Header, fmt.Sprintf("node %d µs/write", i+3))
	}
	var behind []string
	for _, v := range x.vs {
		ts := x.trials[v.ID]
		if len(ts) == 0 {
			continue
		}
		name := textCell(v.ID)
		w.addCells(name, x.cell(v.ID, writesPerSec, rate, "writes/s"), x.vsCell(v, writesPerSec),
			x.cell(v.ID, commitP50, millis, "ms"), x.cell(v.ID, commitP95, millis, "ms"), x.cell(v.ID, commitP99, millis, "ms"),
			x.diffCell(v, commitP99, "ms"))
		l.addCells(name, x.cell(v.ID, lagP50, millis, "ms"), x.cell(v.ID, lagP95, millis, "ms"), x.cell(v.ID, lagP99, millis, "ms"),
			x.cell(v.ID, lagMax, millis, "ms"), x.diffCell(v, lagP99, "ms"), x.cell(v.ID, serverLagP50, millis, "ms"),
			x.cell(v.ID, lagRes, millis, "ms"))
		cells := []Cell{name, textCell(linkShown(ts)), x.cell(v.ID, linkMBps, rate, "MB/s"),
			x.cell(v.ID, primaryUs, rate, "µs"), x.vsCell(v, primaryUs), x.cell(v.ID, replicaUs, rate, "µs"), x.vsCell(v, replicaUs)}
		for i := range more {
			cells = append(cells, x.cell(v.ID, nodeUs(i+2), rate, "µs"))
		}
		n.addCells(cells...)
		for _, t := range ts {
			if t.Replication.BehindTimeout || t.Replication.Unseen > 0 {
				behind = append(behind, fmt.Sprintf("%s trial %d: %d of %d heartbeats not seen on the replica within --timeout after the writes stopped", v.ID, t.Round+1, t.Replication.Unseen, t.Replication.Heartbeats))
			}
		}
	}
	w.Foot = []string{"each write is " + eng.write + "; commit latency is the client's, on the primary; each TLS link is compared with the plain link of its commit mode; " + legend}
	l.Foot = append([]string{
		"lag: per heartbeat (a row or key written on the primary every " + ix.r.Replicate.Plan.Heartbeat.String() + "), from its commit's answer to its first sight on the replica (read every " + ix.r.Replicate.Plan.LagPoll.String() + "), both on tlsbench's clock; 0 when the replica had it before the commit answered (remote_apply)",
		"resolution: the poll interval plus a read's mean time; " + eng.server,
	}, behind...)
	if ix.r.Replicate.Plan.Lab == "galera" {
		for _, v := range x.vs {
			var most int64
			for _, t := range x.trials[v.ID] {
				most = max(most, t.Replication.ServerQueueMax)
			}
			if len(x.trials[v.ID]) > 0 {
				l.Foot = append(l.Foot, fmt.Sprintf("%s: node 2's wsrep_local_recv_queue held at most %d writes; flow control paused replication %s%% of the time",
					v.ID, most, x.cell(v.ID, pausedPct, millis, "%").Text))
			}
		}
	}
	n.Foot = []string{"link: " + eng.link + "; " + eng.stream + "; CPU: all of each node's processes (the replica's includes the heartbeat's reads)"}
	b.table(w)
	b.table(l)
	b.table(n)
	if rs := ix.r.Replicate.Resyncs; len(rs) > 0 || ix.r.Replicate.Built != nil {
		t := Table{Title: "replicate: a full resync (a whole copy of the primary), once per link", Left: 1,
			Header: []string{"link", "MB", "seconds", "MB/s", "primary CPU ms/MB", "copier CPU ms/MB"}}
		row := func(name string, r result.Resync) {
			mb := float64(r.Bytes) / 1e6
			t.addCells(textCell(name), numCell(mb, rate, "MB"), numCell(r.Elapsed.Seconds(), millis, "s"), numCell(r.MBPerSec(), rate, "MB/s"),
				numCell(float64(r.SourceCPU.Milliseconds())/mb, millis, "ms/MB"), numCell(float64(r.DestCPU.Milliseconds())/mb, millis, "ms/MB"))
		}
		if r := ix.r.Replicate.Built; r != nil {
			row("the replica's build (plain, to disk)", *r)
		}
		methods := []string{}
		for _, r := range rs {
			row(r.Link, r)
			if !slices.Contains(methods, r.Method) {
				methods = append(methods, r.Method)
			}
		}
		if b := ix.r.Replicate.Built; b != nil {
			methods = append([]string{"build: " + b.Method}, methods...)
		}
		t.Foot = []string{"one copy each, no trials: " + strings.Join(methods, "; ") + "; copier: " + cmp.Or(eng.copier, "pg_basebackup's own CPU")}
		b.table(t)
	}
}

// linkShown is the link as the primary showed it in every trial of a
// variant: "TLSv1.3", "plain", or each seen.
func linkShown(ts []result.Trial) string {
	var seen []string
	for _, t := range ts {
		s := "plain"
		if t.Replication.LinkEncrypted {
			s = t.Replication.LinkTLS
		}
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	return strings.Join(seen, ", ")
}

// ReplicationFact: one TLS link against the plain link of its commit
// mode, trials paired by round.
type ReplicationFact struct {
	Variant, Baseline string
	Writes            stats.Delta   // writes/s, relative
	CommitP99         stats.Summary // ms, absolute
	LagP99            stats.Summary // ms, absolute
	PrimaryCPU        stats.Delta   // per write, relative
}

func (ReplicationFact) isFact() {}

// replication finds what each TLS link cost against its plain twin.
func (r *rules) replication() {
	if !isReplicate(r.ix.r) {
		return
	}
	x := newReplIndex(r.ix.r)
	for _, v := range x.vs {
		base := x.baseline(v)
		if base == "" || base == v.ID || len(x.trials[v.ID]) == 0 {
			continue
		}
		r.add(KindFinding, TopicReplica, ReplicationFact{Variant: v.ID, Baseline: base,
			Writes: x.change(v, writesPerSec), CommitP99: x.diff(v, commitP99), LagP99: x.diff(v, lagP99),
			PrimaryCPU: x.change(v, primaryUs)})
	}
}

// replicationWords: "tls1.3 async against plain async: commit p99 +1.2 ms
// (±0.4), writes/s -30% (±5), ...", each without an interval that
// excludes 0 said to be no measurable difference.
func replicationWords(f ReplicationFact) string {
	abs := func(what string, s stats.Summary) string {
		switch {
		case s.N == 0:
			return what + " not compared"
		case s.N < 2:
			return fmt.Sprintf("%s %s ms (one pair, no interval)", what, signed(s.Mean, millis))
		case math.Abs(s.Mean) > s.CI95:
			return fmt.Sprintf("%s %s ms (±%s)", what, signed(s.Mean, millis), num(s.CI95, millis))
		}
		return fmt.Sprintf("%s no measurable difference (%s ms ±%s)", what, signed(s.Mean, millis), num(s.CI95, millis))
	}
	rel := func(what string, d stats.Delta) string {
		switch {
		case d.N == 0:
			return what + " not compared"
		case d.N < 2:
			return fmt.Sprintf("%s %s%% (one pair, no interval)", what, signed(d.Pct, pct))
		case d.Significant:
			return fmt.Sprintf("%s %s", what, pctCI(d))
		}
		return fmt.Sprintf("%s no measurable difference (%s)", what, pctCI(d))
	}
	return fmt.Sprintf("Replication link %s against %s: %s; %s; %s; %s.", f.Variant, f.Baseline,
		abs("commit p99", f.CommitP99), rel("writes/s", f.Writes), abs("replica lag p99", f.LagP99), rel("primary CPU per write", f.PrimaryCPU))
}
