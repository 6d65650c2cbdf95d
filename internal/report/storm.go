package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Connection storms (the storm experiment): N clients connect at one
// instant. Their cells are the index's (experiment storm, concurrency N);
// they get tables of their own instead of the throughput table, and the
// recovery finding: how much longer until all clients are back with TLS.

// recovery is a storm trial's time until every client that made it was
// back: connected, or its first operation done where the storm ran one.
func recovery(t result.Trial) float64 {
	if t.Storm == nil {
		return math.NaN()
	}
	d := t.Storm.AllConnected
	if t.Storm.FirstOps > 0 {
		d = t.Storm.LastFirstOp
	}
	return float64(d) / float64(time.Millisecond)
}

// stormDelta is name's recovery time against from's with n clients,
// trials paired by round.
func (ix *index) stormDelta(from, name string, n int) stats.Delta {
	base := map[int]float64{}
	for _, t := range ix.trials[cellKey{plan.Storm, from, n}] {
		base[t.Round] = recovery(t)
	}
	var xs, ys []float64
	for _, t := range ix.trials[cellKey{plan.Storm, name, n}] {
		if x, ok := base[t.Round]; ok && !math.IsNaN(x) && !math.IsNaN(recovery(t)) {
			xs, ys = append(xs, x), append(ys, recovery(t))
		}
	}
	return stats.Paired(xs, ys)
}

// stormTables writes, for each number of clients, the storm of each
// variant (how many came back, when, at what percentiles, the errors, the
// listen queues, the server's CPU), then where the clients' time went,
// phase by phase.
func (ix *index) stormTables(b *body) {
	firstOp := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Storm != nil && t.Storm.FirstOps > 0 })
	server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Experiment == plan.Storm && t.ServerCPU > 0 })
	spread := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Storm != nil && t.Storm.DialSpread > 0 })
	somax := 0
	for _, n := range ix.conc[plan.Storm] {
		t := Table{
			Title:  fmt.Sprintf("storm: %s at one instant, mean (stddev) over %s", plan.StormLabel(n), ix.trialCount(plan.Storm, n)),
			Left:   2,
			Header: []string{"variant", "back", "all connected ms"},
		}
		if firstOp {
			t.Header = append(t.Header, "last first op ms")
		}
		t.Header = append(t.Header, "vs baseline")
		if spread {
			t.Header = append(t.Header, "dial spread ms")
		}
		t.Header = append(t.Header, "client p50", "p99", "max", "errors", "listen overflows/drops")
		if server {
			t.Header = append(t.Header, "server CPU ms")
		}
		for _, name := range ix.variants {
			ts := ix.trials[cellKey{plan.Storm, name, n}]
			if len(ts) == 0 {
				continue
			}
			var back, clients, errs, over, drops int64
			listen := false
			for _, tr := range ts {
				back += tr.Ops
				clients += int64(tr.Storm.Clients)
				for _, k := range tr.Errors {
					errs += k
				}
				if l := tr.Storm.Listen; l != nil {
					listen = true
					over, drops = over+l.Overflows, drops+l.Drops
					somax = max(somax, l.Somaxconn)
				}
			}
			ms := func(d func(result.Trial) time.Duration) Cell {
				return meanCell(collect(ts, func(t result.Trial) float64 { return float64(d(t)) / float64(time.Millisecond) }), millis, "ms")
			}
			vs := textCell("baseline")
			if base := ix.baselineOf(name); base != name {
				vs = deltaCell(ix.stormDelta(base, name, n))
			}
			row := []Cell{textCell(name), countCell(back, "clients").shown(fmt.Sprintf("%d/%d", back, clients)), ms(func(t result.Trial) time.Duration { return t.Storm.AllConnected })}
			if firstOp {
				row = append(row, ms(func(t result.Trial) time.Duration { return t.Storm.LastFirstOp }))
			}
			lq := textCell("-")
			if listen {
				lq = countCell(over, "overflows").shown(fmt.Sprintf("%d/%d", over, drops))
			}
			row = append(row, vs)
			if spread {
				row = append(row, ms(func(t result.Trial) time.Duration { return t.Storm.DialSpread }))
			}
			row = append(row, latencyCell(ts, func(h result.Hist) float64 { return h.P50 }), latencyCell(ts, func(h result.Hist) float64 { return h.P99 }),
				latencyCell(ts, func(h result.Hist) float64 { return h.Max }), countCell(errs, "errors"), lq)
			if server {
				row = append(row, ms(func(t result.Trial) time.Duration { return t.ServerCPU }))
			}
			t.addCells(row...)
		}
		t.Foot = []string{
			"back: clients connected (and with --first-op, done with their first operation), summed over trials; vs baseline: the time until the last was back, paired by round (± 95% CI, * when it excludes 0)",
			"client p50, p99, max: each client's time from the release until it was back, ms",
		}
		if spread {
			t.Foot = append(t.Foot, "dial spread: from the first client's dial start to the last's (the clients that connected): how close to one instant the storm was")
		}
		t.Foot = append(t.Foot,
			fmt.Sprintf("listen overflows/drops: /proc/net/netstat TcpExt ListenOverflows/ListenDrops over the storms, summed: machine-wide counters, every listener on this machine; net.core.somaxconn %d caps every listen backlog", somax))
		if server {
			t.Foot = append(t.Foot, "server CPU ms: the server's CPU from the release until the last client was back, per storm")
		}
		b.table(t)
		ix.stormPhases(b, n)
	}
}

// stormPhases writes each phase of the storm's connections, then the
// hold (in none of them): p50, p99 and max, means over trials.
func (ix *index) stormPhases(b *body, n int) {
	var names []string
	hold, toDial := false, false
	for _, name := range ix.variants {
		for _, t := range ix.trials[cellKey{plan.Storm, name, n}] {
			names = mergeOrder(names, t.Phases)
			hold = hold || t.Storm != nil && t.Storm.Hold != nil
			toDial = toDial || t.Storm != nil && t.Storm.ToDial != nil
		}
	}
	if len(names) == 0 {
		return
	}
	t := Table{
		Title:  fmt.Sprintf("storm: %s, phases of a connection, ms p50 / p99 / max, means over trials", plan.StormLabel(n)),
		Left:   1,
		Header: []string{"variant"},
	}
	if toDial {
		t.Header = append(t.Header, "(to dial)")
	}
	t.Header = append(t.Header, names...)
	if hold {
		t.Header = append(t.Header, "(hold)")
		t.Foot = []string{"each phase ends where its answer arrived; close: from the client's close until it was done; (hold): from the client's last answer (--first-op: its operation done) until its close began, while the others came back, in no phase"}
	}
	if toDial {
		t.Foot = append(t.Foot, "(to dial): from the release until the client's dial began, in no phase: its goroutine's wait for a CPU while the other clients started (a client waits for one again after each step, which (hold) and client p50/p99/max include)")
	}
	// storm keeps a storm trial's own figures (ToDial, Hold) apart from
	// its phases.
	storm := func(ts []result.Trial, of func(*result.Storm) *result.Hist) []result.Hist {
		var hs []result.Hist
		for _, tr := range ts {
			if tr.Storm != nil && of(tr.Storm) != nil {
				hs = append(hs, *of(tr.Storm))
			}
		}
		return hs
	}
	cell := func(hs []result.Hist) Cell {
		var p50, p99, most []float64
		for _, h := range hs {
			if h.Count > 0 {
				p50, p99, most = append(p50, h.P50), append(p99, h.P99), append(most, h.Max)
			}
		}
		if len(p50) == 0 {
			return textCell("-")
		}
		mean := func(xs []float64) Cell { return numCell(stats.Summarize(xs).Mean, millis, "ms") }
		c := mean(p50)
		return c.shown(c.Text + " / " + mean(p99).Text + " / " + mean(most).Text)
	}
	for _, name := range ix.variants {
		ts := withLatency(ix.trials[cellKey{plan.Storm, name, n}])
		if len(ts) == 0 {
			continue
		}
		row := []Cell{textCell(name)}
		if toDial {
			row = append(row, cell(storm(ts, func(s *result.Storm) *result.Hist { return s.ToDial })))
		}
		for _, p := range names {
			var hs []result.Hist
			for _, tr := range ts {
				for _, ph := range tr.Phases {
					if ph.Name == p {
						hs = append(hs, ph.Latency)
					}
				}
			}
			row = append(row, cell(hs))
		}
		if hold {
			row = append(row, cell(storm(ts, func(s *result.Storm) *result.Hist { return s.Hold })))
		}
		t.addCells(row...)
	}
	b.table(t)
}

// memoryTable writes the memory each held connection added to the
// server tlsbench started, where pool or storm trials measured it.
func (ix *index) memoryTable(b *body) {
	t := Table{
		Title:  "server memory per held connection, mean (stddev) over trials",
		Left:   3,
		Header: []string{"experiment", "conns", "variant", "idle MiB", "held MiB", "KiB per conn", "round 1", "of"},
	}
	// The idle readings over the run, in the order taken: a server that
	// keeps freed memory shows it growing.
	var idles []result.Trial
	negative := false // a trial whose server shrank while it held connections
	for _, tr := range ix.r.Trials {
		if tr.ServerMemory != nil {
			idles = append(idles, tr)
		}
	}
	for _, e := range ix.experiments {
		for _, k := range ix.cells(e) {
			var ms []result.ServerMemory
			for _, tr := range ix.trials[k] {
				if tr.ServerMemory != nil {
					ms = append(ms, *tr.ServerMemory)
				}
			}
			if len(ms) == 0 {
				continue
			}
			mib := func(f func(result.ServerMemory) int64) Cell {
				xs := make([]float64, len(ms))
				for i, m := range ms {
					xs[i] = float64(f(m)) / (1 << 20)
				}
				return meanCell(xs, millis, "MiB")
			}
			per := make([]float64, len(ms))
			for i, m := range ms {
				per[i] = m.PerConn() / 1024
				negative = negative || per[i] < 0
			}
			first := textCell("-")
			if ts := ix.trials[k]; len(ts) > 0 && ts[0].Round == 0 && ts[0].ServerMemory != nil {
				first = numCell(ts[0].ServerMemory.PerConn()/1024, rate, "KiB/conn")
			}
			t.addCells(textCell(string(e)), countCell(int64(ms[0].Conns), "connections"), textCell(k.variant),
				mib(func(m result.ServerMemory) int64 { return m.IdleBytes }), mib(func(m result.ServerMemory) int64 { return m.HeldBytes }),
				meanCell(per, rate, "KiB/conn"), first, textCell(strings.ToUpper(ms[0].Kind)))
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	t.Foot = []string{
		"the server's whole process tree (PostgreSQL: a backend per connection), idle before the trial opened its connections and with them open: (held - idle) / conns; round 1: the first round's trial alone",
		"of: PSS sums each shared page once; RSS (where PSS cannot be read) counts shared pages in every process",
	}
	if negative {
		// Measured on the built-in server: -180 KiB around one connection
		// in the first trial, its start-up garbage collected and returned
		// to the system by Go's scavenger between the two readings.
		t.Foot = append(t.Foot, "below 0: the server held less with the connections open than idle just before, because it returned memory to the system between the two readings (a garbage collector or an allocator releasing what earlier work left, earlier connections' processes exiting) more than the connections took; with few connections, a figure near 0 is within that noise")
	}
	if len(idles) > 1 {
		// Growth that matters is against what the connections take, not
		// the server's size (PostgreSQL's shared buffers warm up too).
		first, most, held := idles[0].ServerMemory.IdleBytes, idles[0].ServerMemory.IdleBytes, int64(0)
		for _, tr := range idles {
			m := tr.ServerMemory
			most, held = max(most, m.IdleBytes), max(held, m.HeldBytes-m.IdleBytes)
		}
		if most-first > held/2 {
			t.Foot = append(t.Foot, fmt.Sprintf("the idle server grew from %.1f to %.1f MiB over the run: it keeps memory that earlier connections freed (a thread cache, an allocator, a garbage collector), so later trials understate what a connection takes; round 1's figure, before any other trial, is the one to read",
				float64(first)/(1<<20), float64(most)/(1<<20)))
		}
	}
	b.table(t)
}

// StormRecovery is how long a storm of Clients took until all were back
// with a TLS variant against its plain sibling, trials paired by round.
type StormRecovery struct {
	Variant, Plain string
	Clients        int
	FirstOp        bool
	MS, PlainMS    float64 // means over trials
	Delta          stats.Delta
}

func (StormRecovery) isFact() {}

// TopicStorm is the findings on connection storms.
const TopicStorm Topic = "storm"

// storm: for each storm size, how much longer every TLS variant (one per
// key type) took than plain until all clients were back.
func (r *rules) storm() {
	ix := r.ix
	for _, n := range ix.conc[plan.Storm] {
		for _, name := range ix.variants {
			info, ok := ix.info[name]
			p := ix.plainOf(name)
			if !ok || info.Plain() || p == "" {
				continue
			}
			d := ix.stormDelta(p, name, n)
			if d.N == 0 {
				continue
			}
			mean := func(v string) float64 {
				xs := collect(ix.trials[cellKey{plan.Storm, v, n}], recovery)
				return stats.Summarize(xs).Mean
			}
			first := slices.ContainsFunc(ix.trials[cellKey{plan.Storm, name, n}], func(t result.Trial) bool { return t.Storm != nil && t.Storm.FirstOps > 0 })
			r.add(KindFinding, TopicStorm, StormRecovery{Variant: name, Plain: p, Clients: n, FirstOp: first, MS: mean(name), PlainMS: mean(p), Delta: d})
		}
	}
}

// stormWords says a StormRecovery.
func stormWords(f StormRecovery) string {
	back := "connected"
	if f.FirstOp {
		back = "back with their first operation done"
	}
	ci := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(delta(f.Delta)), "*")) + ", 95% CI"
	storm := fmt.Sprintf("With %d clients connecting at once", f.Clients)
	if f.Delta.N == 1 {
		return fmt.Sprintf("%s, all were %s after %s with %s against %s with %s (%s%%; %s× as long) in one trial each: one trial gives no interval, so this run cannot tell that from noise.",
			storm, back, msWords(f.MS), f.Variant, msWords(f.PlainMS), f.Plain, signed(f.Delta.Pct, pct), times(f.MS/f.PlainMS))
	}
	if !f.Delta.Significant {
		return fmt.Sprintf("%s, %s made no measurable difference to the time until all were %s (%s against %s with %s; %s).",
			storm, f.Variant, back, msWords(f.MS), msWords(f.PlainMS), f.Plain, ci)
	}
	if f.Delta.Pct < 0 {
		return fmt.Sprintf("%s, all were %s sooner with %s than with %s (%s against %s; %s).", storm, back, f.Variant, f.Plain, msWords(f.MS), msWords(f.PlainMS), ci)
	}
	ratio := ""
	if f.PlainMS > 0 {
		ratio = "; " + times(f.MS/f.PlainMS) + "× as long"
	}
	return fmt.Sprintf("%s, all were %s after %s with %s against %s with %s (%s%s): TLS with this key makes the recovery after a failover that much longer.",
		storm, back, msWords(f.MS), f.Variant, msWords(f.PlainMS), f.Plain, ci, ratio)
}

// stormChart draws each variant's time until all its clients were back
// against the storm's size.
func (b *figurer) stormChart() {
	ns := b.ix.conc[plan.Storm]
	if len(ns) == 0 {
		return
	}
	if len(ns) == 1 {
		// One storm size: a bar per variant, not a line of one point each.
		n := ns[0]
		b.bars(plan.Storm, b.ix.measured(plan.Storm), n, "storm", fmt.Sprintf("storm: %d clients at once, time until every client was back", n),
			fmt.Sprintf("ms until the last was back (%s)", b.trialsPhrase(plan.Storm)),
			func(t result.Trial) (float64, bool) { return recovery(t), t.Storm != nil },
			func(x float64) string { return num(x, millis) + " ms" },
			"Bars: the time from the release until the last client was connected (with --first-op: done with its first operation), mean over trials; whiskers: ±1 standard deviation.")
		return
	}
	var series []chart.Series
	lo, hi, top := math.Inf(1), 0.0, 0.0
	for _, name := range b.ix.variants {
		var pts []chart.Point
		for _, n := range ns {
			s := stats.Summarize(collect(b.ix.trials[cellKey{plan.Storm, name, n}], recovery))
			ci := s.CI95
			if math.IsNaN(ci) {
				ci = 0
			}
			if s.N == 0 || !finite(s.Mean, ci) {
				continue
			}
			pts = append(pts, chart.Point{X: float64(n), Y: s.Mean, Err: ci})
			lo, hi, top = min(lo, float64(n)), max(hi, float64(n)), max(top, s.Mean+ci)
		}
		series = b.addSeries(series, name, pts)
	}
	if len(series) == 0 {
		return
	}
	b.add(chart.Figure{
		ID:      "storm",
		Title:   "storm: time until every client was back",
		Caption: "Points: the mean over trials of the time from the release until the last client was connected (with --first-op: done with its first operation); error bars: 95% confidence interval.",
		Kind:    chart.Lines,
		X:       chart.Axis{Label: "clients connecting at once (--clients)", Log: true, Min: chart.At(lo / 1.5), Max: chart.At(hi * 1.5)},
		Y:       chart.Axis{Label: "ms until the last was back", Min: chart.At(0), Max: chart.At(top * 1.08)},
		Series:  series,
	})
}
