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

// replIndex is a replicate result's closed-loop trials by variant and
// writers, in round order, and its trials at write rates
// (replicate_rate.go).
type replIndex struct {
	vs      []plan.ReplicaVariant
	trials  map[replKey][]result.Trial
	writers []int // ascending
	rounds  int
	rated   replRated
}

// replKey names a variant's cell: its ID at a count of writers.
type replKey struct {
	id      string
	writers int
}

func newReplIndex(r *result.Result) *replIndex {
	x := &replIndex{vs: r.Replicate.Plan.Variants(), trials: map[replKey][]result.Trial{}}
	for _, t := range r.Trials {
		switch {
		case t.Replication == nil:
		case t.Open != nil:
			x.rated.add(t)
		default:
			k := replKey{t.Variant, t.Concurrency}
			x.trials[k] = append(x.trials[k], t)
			x.rounds = max(x.rounds, len(x.trials[k]))
			x.writers = addNew(x.writers, t.Concurrency)
		}
	}
	slices.Sort(x.writers)
	return x
}

// baseline is the plain variant of v's commit mode, "" when none was
// measured (at any count of writers).
func (x *replIndex) baseline(v plan.ReplicaVariant) string {
	for _, b := range x.vs {
		if b.Baseline && b.Sync == v.Sync && x.measured(b.ID) {
			return b.ID
		}
	}
	return ""
}

// measured reports whether variant id has trials.
func (x *replIndex) measured(id string) bool {
	for k := range x.trials {
		if k.id == id {
			return true
		}
	}
	return x.rated.measured(id)
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

// cell is the mean (stddev) of f over the trials of k.
func (x *replIndex) cell(k replKey, f replFigure, p precision, unit string) Cell {
	var xs []float64
	for _, t := range x.trials[k] {
		if y := f(t); finite(y) {
			xs = append(xs, y)
		}
	}
	return meanCell(xs, p, unit)
}

// pairs are f of v's and of base's trials of the same rounds, at n
// writers.
func (x *replIndex) pairs(v, base string, n int, f replFigure) (bs, vs []float64) {
	for _, t := range x.trials[replKey{v, n}] {
		for _, b := range x.trials[replKey{base, n}] {
			if b.Round == t.Round && finite(f(t), f(b)) {
				bs, vs = append(bs, f(b)), append(vs, f(t))
			}
		}
	}
	return bs, vs
}

// change is v's f against its baseline's at n writers, paired by round:
// relative.
func (x *replIndex) change(v plan.ReplicaVariant, n int, f replFigure) stats.Delta {
	base := x.baseline(v)
	if base == "" || base == v.ID {
		return stats.Delta{}
	}
	return stats.Paired(x.pairs(v.ID, base, n, f))
}

// diff is v's f minus its baseline's at n writers, paired by round:
// absolute.
func (x *replIndex) diff(v plan.ReplicaVariant, n int, f replFigure) stats.Summary {
	base := x.baseline(v)
	if base == "" || base == v.ID {
		return stats.Summary{}
	}
	bs, vs := x.pairs(v.ID, base, n, f)
	ds := make([]float64, len(bs))
	for i := range bs {
		ds[i] = vs[i] - bs[i]
	}
	return stats.Summarize(ds)
}

// vsCell is the relative change cell: "baseline", "-" or the change.
func (x *replIndex) vsCell(v plan.ReplicaVariant, n int, f replFigure) Cell {
	if v.ID == x.baseline(v) {
		return textCell("baseline")
	}
	return deltaCell(x.change(v, n, f))
}

// diffCell is the absolute difference cell, "+1.2 ±0.4 *" in unit.
func (x *replIndex) diffCell(v plan.ReplicaVariant, n int, f replFigure, unit string) Cell {
	if v.ID == x.baseline(v) {
		return textCell("baseline")
	}
	s := x.diff(v, n, f)
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
		copier: "pg_basebackup's own CPU (0 for a copy of the files by tlsbench, where this PostgreSQL has no pg_basebackup)",
	},
	"redis": {
		write:  "one SET of a 100-byte value",
		stream: "stream sent: master_repl_offset's advance over the trial (the replication stream, before TLS's framing)",
		link:   "as the primary's CLIENT LIST showed the replica's connection after each trial (the tls-port: TLS, of the version tls-protocols allows; Redis does not report a connection's)",
		server: "Redis reports no replay lag of its own (INFO's lag is whole seconds since the replica's last ack)",
		copier: "the replica's CPU (its load of the RDB); the primary's includes the child it forks to write the RDB",
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
		copier: "node 3's, the joiner's, from its start (its mariadbd, with the SST script and rsync it runs); the donor's is node 1's",
	},
}

// pausedPct is the share of a Galera trial that flow control paused
// replication, in percent.
var pausedPct replFigure = func(t result.Trial) float64 { return 100 * t.Replication.FlowControlPaused }

// replicateTables writes a replicate result's tables.
func (ix *index) replicateTables(b *body) {
	x := newReplIndex(ix.r)
	eng, ok := replEngines[ix.r.Replicate.Plan.Engine()]
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
	sweep := len(x.writers) > 1 // -c 1,4,16: a column of writers first
	if sweep {
		for _, t := range []*Table{&w, &l, &n} {
			t.Header, t.Left = append([]string{"writers"}, t.Header...), 2
		}
	}
	more := moreNodes(ix.r)
	for i := range more {
		n.Header = append(n.Header, fmt.Sprintf("node %d µs/write", i+3))
	}
	var behind []string
	for _, c := range x.writers {
		first := true
		for _, v := range x.vs {
			k := replKey{v.ID, c}
			ts := x.trials[k]
			if len(ts) == 0 {
				continue
			}
			name := []Cell{textCell(v.ID)}
			if sweep {
				label := ""
				if first {
					label = plan.Label(c)
				}
				name, first = append([]Cell{textCell(label)}, name...), false
			}
			w.addCells(append(name, x.cell(k, writesPerSec, rate, "writes/s"), x.vsCell(v, c, writesPerSec),
				x.cell(k, commitP50, millis, "ms"), x.cell(k, commitP95, millis, "ms"), x.cell(k, commitP99, millis, "ms"),
				x.diffCell(v, c, commitP99, "ms"))...)
			l.addCells(append(name, x.cell(k, lagP50, millis, "ms"), x.cell(k, lagP95, millis, "ms"), x.cell(k, lagP99, millis, "ms"),
				x.cell(k, lagMax, millis, "ms"), x.diffCell(v, c, lagP99, "ms"), x.cell(k, serverLagP50, millis, "ms"),
				x.cell(k, lagRes, millis, "ms"))...)
			cells := append(name, textCell(linkShown(ts)), x.cell(k, linkMBps, rate, "MB/s"),
				x.cell(k, primaryUs, rate, "µs"), x.vsCell(v, c, primaryUs), x.cell(k, replicaUs, rate, "µs"), x.vsCell(v, c, replicaUs))
			for i := range more {
				cells = append(cells, x.cell(k, nodeUs(i+2), rate, "µs"))
			}
			n.addCells(cells...)
			for _, t := range ts {
				if t.Replication.BehindTimeout || t.Replication.Unseen > 0 {
					behind = append(behind, fmt.Sprintf("%s trial %d: %d of %d heartbeats not seen on the replica within --timeout after the writes stopped", replicaCell(v.ID, c, sweep), t.Round+1, t.Replication.Unseen, t.Replication.Heartbeats))
				}
			}
		}
	}
	w.Foot = []string{"each write is " + eng.write + "; commit latency is the client's, on the primary; each TLS link is compared with the plain link of its commit mode; " + legend}
	l.Foot = append([]string{
		"lag: per heartbeat (a row or key written on the primary every " + ix.r.Replicate.Plan.Heartbeat.String() + "), from its commit's answer to its first sight on the replica (read every " + ix.r.Replicate.Plan.LagPoll.String() + "), both on tlsbench's clock; 0 when the replica had it before the commit answered (remote_apply)",
		"resolution: the poll interval plus a read's mean time; " + eng.server,
	}, behind...)
	if ix.r.Replicate.Plan.Lab == "galera" {
		for _, c := range x.writers {
			for _, v := range x.vs {
				k := replKey{v.ID, c}
				var most int64
				for _, t := range x.trials[k] {
					most = max(most, t.Replication.ServerQueueMax)
				}
				if len(x.trials[k]) > 0 {
					l.Foot = append(l.Foot, fmt.Sprintf("%s: node 2's wsrep_local_recv_queue held at most %d writes; flow control paused replication %s%% of the time",
						replicaCell(v.ID, c, len(x.writers) > 1), most, x.cell(k, pausedPct, millis, "%").Text))
				}
			}
		}
	}
	n.Foot = []string{"link: " + eng.link + "; " + eng.stream + "; CPU: all of each node's processes (the replica's includes the heartbeat's reads)"}
	if len(x.writers) > 0 {
		b.table(w)
		b.table(l)
		b.table(n)
	}
	x.rateTables(b, ix.r.Replicate.Plan, eng)
	if rs := ix.r.Replicate.Resyncs; len(rs) > 0 || ix.r.Replicate.Built != nil {
		t := Table{Title: "replicate: a full resync (a whole copy of the primary), once per link", Left: 1,
			Header: []string{"link", "MB", "seconds", "MB/s", "primary CPU ms/MB", "copier CPU ms/MB"}}
		if ix.r.Replicate.Plan.Lab == "galera" {
			t.Title = "replicate: state transfers from node 1 to node 3, an IST (the writesets it missed) and an SST (a whole copy), once per link"
			t.Header[4], t.Header[5] = "donor CPU ms/MB", "joiner CPU ms/MB"
		}
		row := func(name string, r result.Resync) {
			mb := float64(r.Bytes) / 1e6
			t.addCells(textCell(name), numCell(mb, rate, "MB"), numCell(r.Elapsed.Seconds(), millis, "s"), numCell(r.MBPerSec(), rate, "MB/s"),
				numCell(float64(r.SourceCPU.Milliseconds())/mb, millis, "ms/MB"), numCell(float64(r.DestCPU.Milliseconds())/mb, millis, "ms/MB"))
		}
		if r := ix.r.Replicate.Built; r != nil {
			row("the replica's build (plain, to disk)", *r)
		}
		methods := []string{}
		var shown []string
		for _, r := range rs {
			name := r.Link
			if r.Transfer != "" {
				// Galera: an IST and an SST per link, each as encrypted
				// as the nodes' logs showed it.
				name += " " + r.Transfer + map[bool]string{false: " (plain)", true: " (encrypted)"}[r.Encrypted]
				shown = append(shown, name+": "+r.Shown)
			}
			row(name, r)
			if !slices.Contains(methods, r.Method) {
				methods = append(methods, r.Method)
			}
		}
		if b := ix.r.Replicate.Built; b != nil {
			methods = append([]string{"build: " + b.Method}, methods...)
		}
		t.Foot = append([]string{"one copy each, no trials: " + strings.Join(methods, "; ") + "; copier: " + cmp.Or(eng.copier, "pg_basebackup's own CPU")}, shown...)
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

// replicaCell names variant id at c writers where a run swept them:
// "tls1.3 async at c=16".
func replicaCell(id string, c int, sweep bool) string {
	if !sweep {
		return id
	}
	return id + " at " + plan.Label(c)
}

// ReplicationFact: one TLS link against the plain link of its commit
// mode, trials paired by round.
type ReplicationFact struct {
	Variant, Baseline string
	// Writers is the writers of both when a run swept them (-c 1,4,16),
	// 0 when it had one count.
	Writers    int
	Writes     stats.Delta   // writes/s, relative
	CommitP99  stats.Summary // ms, absolute
	LagP99     stats.Summary // ms, absolute
	PrimaryCPU stats.Delta   // per write, relative
}

func (ReplicationFact) isFact() {}

// replication finds what each TLS link cost against its plain twin.
func (r *rules) replication() {
	if !isReplicate(r.ix.r) {
		return
	}
	x := newReplIndex(r.ix.r)
	for _, c := range x.writers {
		for _, v := range x.vs {
			base := x.baseline(v)
			if base == "" || base == v.ID || len(x.trials[replKey{v.ID, c}]) == 0 {
				continue
			}
			f := ReplicationFact{Variant: v.ID, Baseline: base,
				Writes: x.change(v, c, writesPerSec), CommitP99: x.diff(v, c, commitP99), LagP99: x.diff(v, c, lagP99),
				PrimaryCPU: x.change(v, c, primaryUs)}
			if len(x.writers) > 1 {
				f.Writers = c
			}
			r.add(KindFinding, TopicReplica, f)
		}
	}
	x.capacity(r)
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
	at := ""
	if f.Writers > 0 {
		at = " at " + plural(f.Writers, "writer")
	}
	return fmt.Sprintf("Replication link %s against %s%s: %s; %s; %s; %s.", f.Variant, f.Baseline, at,
		abs("commit p99", f.CommitP99), rel("writes/s", f.Writes), abs("replica lag p99", f.LagP99), rel("primary CPU per write", f.PrimaryCPU))
}
