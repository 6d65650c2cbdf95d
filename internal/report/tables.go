package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

const deltaLegend = "vs baseline: paired by round; ± is the half-width of the 95% confidence interval; * when it excludes 0"

// throughput writes the main table of an experiment and its change against
// the baseline: as a last column with one concurrency, as a table of its own
// with several.
func (ix *index) throughput(b *body, e plan.Experiment) {
	cs := ix.conc[e]
	head := []string{"variant"}
	for _, c := range cs {
		head = append(head, plan.Label(c))
	}
	t := Table{
		Title:  fmt.Sprintf("%s: %s, mean (stddev) over %s", e, ix.unit(e), ix.trialCount(e, ix.conc[e]...)),
		Left:   1,
		Header: head,
	}
	d := Table{Title: fmt.Sprintf("%s: %s vs baseline, %% (95%% CI)", e, ix.unit(e)), Left: 1, Header: head}
	compare := len(ix.variants) > 1
	inline := compare && len(cs) == 1
	if inline {
		t.Header = append(slices.Clip(head), "vs baseline")
		t.Foot = []string{ix.deltaLegend()}
	}
	for _, name := range ix.variants {
		row, drow := []Cell{textCell(name)}, []Cell{textCell(name)}
		for _, c := range cs {
			k := cellKey{e, name, c}
			row = append(row, ix.rateCell(k))
			drow = append(drow, ix.deltaCell(k))
		}
		if inline {
			row = append(row, drow[1])
		}
		t.addCells(row...)
		d.addCells(drow...)
	}
	b.table(t)
	if compare && !inline {
		d.Foot = []string{ix.deltaLegend()}
		b.table(d)
	}
}

// rateCell is a cell's throughput, the mean over its trials: the figure of
// the throughput table and of the cell's summary.
func (ix *index) rateCell(k cellKey) Cell {
	return meanCell(collect(ix.trials[k], ix.metric(k.exp)), rate, ix.metricName(k.exp))
}

// deltaCell is the change of a variant's throughput against the
// baseline's in the same experiment and concurrency, trials paired by
// round: the figure of the change table and of the cell's summary.
func (ix *index) deltaCell(k cellKey) Cell {
	switch ix.baselineOf(k.variant) {
	case k.variant:
		return textCell("baseline")
	case "":
		return textCell("-")
	}
	return deltaCell(ix.paired(k.exp, k.variant, k.c))
}

// p95 writes the pool's p95 latency per variant and concurrency.
func (ix *index) p95(b *body, e plan.Experiment) {
	t := Table{Title: fmt.Sprintf("%s: p95 latency, ms, mean (stddev) over %s", e, ix.trialCount(e, ix.conc[e]...)), Left: 1}
	t.Header = []string{"variant"}
	for _, c := range ix.conc[e] {
		t.Header = append(t.Header, plan.Label(c))
	}
	for _, name := range ix.variants {
		row := []Cell{textCell(name)}
		for _, c := range ix.conc[e] {
			ts := withLatency(ix.trials[cellKey{e, name, c}])
			row = append(row, meanCell(collect(ts, func(t result.Trial) float64 { return t.Latency.P95 }), millis, "ms"))
		}
		t.addCells(row...)
	}
	b.table(t)
}

// phases writes, per concurrency, where a connection's time goes: each
// phase's mean latency with its round trips, then the whole connection's.
func (ix *index) phases(b *body, e plan.Experiment) {
	var all []string
	for _, c := range ix.conc[e] {
		var names []string
		for _, name := range ix.variants {
			for _, t := range ix.trials[cellKey{e, name, c}] {
				names = mergeOrder(names, t.Phases)
			}
		}
		t := Table{
			Title: fmt.Sprintf("%s %s: phases, ms, mean over %s [round trips]", e, plan.Label(c), ix.trialCount(e, c)),
			Left:  1,
		}
		t.Header = append(append([]string{"variant"}, names...), "total", "p50", "p95", "p99", "max")
		for _, name := range ix.variants {
			ts := withLatency(ix.trials[cellKey{e, name, c}])
			row := []Cell{textCell(name)}
			for _, p := range names {
				row = append(row, phaseCell(ts, p))
			}
			row = append(row,
				latencyCell(ts, func(h result.Hist) float64 { return h.Mean }),
				latencyCell(ts, func(h result.Hist) float64 { return h.P50 }),
				latencyCell(ts, func(h result.Hist) float64 { return h.P95 }),
				latencyCell(ts, func(h result.Hist) float64 { return h.P99 }))
			if len(ts) == 0 {
				row = append(row, textCell("-"))
			} else {
				row = append(row, numCell(slices.Max(collect(ts, func(t result.Trial) float64 { return t.Latency.Max })), millis, "ms"))
			}
			t.addCells(row...)
		}
		b.table(t)
		all = append(all, names...)
	}
	if notes := phaseNotes(all); len(notes) > 0 {
		b.prose(notes...)
	}
}

// latencyCell is f of the latency of each trial of ts that has one (its
// mean, a percentile), averaged over them, in ms; "-" where none has.
func latencyCell(ts []result.Trial, f func(result.Hist) float64) Cell {
	ts = withLatency(ts)
	if len(ts) == 0 {
		return textCell("-")
	}
	return numCell(stats.Summarize(collect(ts, func(t result.Trial) float64 { return f(t.Latency) })).Mean, millis, "ms")
}

// phaseCell is "0.052 [1]": the phase's mean latency over trials, in ms,
// and its round trips.
func phaseCell(ts []result.Trial, name string) Cell {
	var ms []float64
	lo, hi := math.MaxInt, math.MinInt
	for _, t := range ts {
		for _, p := range t.Phases {
			if p.Name == name && p.Latency.Count > 0 {
				ms = append(ms, p.Latency.Mean)
				lo, hi = min(lo, p.RoundTrips.Min), max(hi, p.RoundTrips.Max)
			}
		}
	}
	if len(ms) == 0 {
		return textCell("-")
	}
	c := numCell(stats.Summarize(ms).Mean, millis, "ms")
	return c.shown(fmt.Sprintf("%s [%s]", c.Text, roundTrips(lo, hi)))
}

// negotiated writes what each TLS variant's handshakes settled on.
func (ix *index) negotiated(b *body) {
	t := Table{
		Title:  "negotiated, as the client saw it",
		Left:   5,
		Header: []string{"variant", "version", "suite", "group", "server key", "resumed"},
	}
	// What the server said of the check connection, where it can tell.
	server := map[string]string{}
	for _, c := range ix.r.Checks {
		switch sv := c.Server; {
		case sv == nil && c.ServerUnknown != "":
			server[c.Variant] = "not available" // a client stack's, where the server cannot tell
		case sv == nil:
		case !sv.TLS:
			server[c.Variant] = "plaintext"
		case sv.Version == "" && sv.Cipher == "":
			server[c.Variant] = "TLS"
		default:
			server[c.Variant] = strings.TrimSpace(sv.Version + " " + sv.Cipher)
		}
		if sv := c.Server; sv != nil && sv.ClientCert != "" {
			server[c.Variant] += ", client cert " + sv.ClientCert
		}
	}
	// A column for the client certificate (mutual TLS) where one was sent.
	mtls := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Negotiated != nil && t.Negotiated.ClientCert != "" })
	if mtls {
		t.Header = append(t.Header, "client cert")
	}
	// The ClientHello's size, where recorded: a post-quantum key share
	// makes it about six times larger.
	hello := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Negotiated != nil && t.Negotiated.ClientHelloBytes > 0 })
	if hello {
		t.Header = slices.Insert(t.Header, 5, "hello B")
	}
	if isWire(ix.r) {
		t.Title = "negotiated, as the capture showed it"
	}
	if len(server) > 0 {
		t.Title = "negotiated, as the client saw it and as the server reports it"
		t.Header = append(t.Header, "server says")
	}
	add := func(name string, cells ...Cell) {
		row := append([]Cell{textCell(name)}, cells[:4]...)
		if hello {
			row = append(row, cells[4])
		}
		row = append(row, cells[5])
		if mtls {
			row = append(row, cells[6])
		}
		if len(server) > 0 {
			s := server[name]
			if s == "" {
				s = "-"
			}
			row = append(row, textCell(s))
		}
		t.addCells(row...)
	}
	tls := len(server) > 0
	for _, name := range ix.variants {
		var ts []result.Trial
		for _, e := range ix.experiments {
			for _, c := range ix.conc[e] {
				ts = append(ts, ix.trials[cellKey{e, name, c}]...)
			}
		}
		ts = append(ts, ix.rateTrialsOf(name)...)
		if len(ts) == 0 {
			continue
		}
		info, known := ix.info[name]
		if (known && info.Plain()) || (!known && !slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Negotiated != nil })) {
			dash := textCell("-")
			add(name, dash, dash, dash, dash, dash, dash, dash)
			continue
		}
		tls = true
		var resumed, conns int64
		for _, t := range ts {
			resumed += t.Resumed
			conns += t.Conns
		}
		field := func(f func(*result.Negotiated) string) Cell {
			var vals []string
			for _, t := range ts {
				if t.Negotiated != nil && f(t.Negotiated) != "" && !slices.Contains(vals, f(t.Negotiated)) {
					vals = append(vals, f(t.Negotiated))
				}
			}
			if len(vals) == 0 {
				return textCell("-")
			}
			return textCell(strings.Join(vals, "/"))
		}
		// The ClientHello's size in bytes: a figure where the trials agree.
		var sizes []int
		for _, t := range ts {
			if n := t.Negotiated; n != nil && n.ClientHelloBytes > 0 && !slices.Contains(sizes, n.ClientHelloBytes) {
				sizes = append(sizes, n.ClientHelloBytes)
			}
		}
		helloCell := textCell("-")
		if len(sizes) > 0 {
			helloCell = countCell(int64(sizes[0]), "bytes")
			if len(sizes) > 1 {
				helloCell = field(func(n *result.Negotiated) string {
					if n.ClientHelloBytes <= 0 {
						return ""
					}
					return fmt.Sprint(n.ClientHelloBytes)
				})
			}
		}
		add(name,
			field(func(n *result.Negotiated) string { return n.Version }),
			field(func(n *result.Negotiated) string { return n.Suite }),
			field(func(n *result.Negotiated) string {
				if n.HelloRetry {
					return n.Group + " after HRR"
				}
				return n.Group
			}),
			field(func(n *result.Negotiated) string { return n.PeerKey }),
			helloCell,
			shareCell(resumed, conns),
			field(func(n *result.Negotiated) string { return n.ClientCert }))
	}
	if tls {
		b.table(t)
	}
}

// cpu writes the CPU each operation cost the client and the server, and how
// many cores the client kept busy.
func (ix *index) cpu(b *body) {
	server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.ServerCPU > 0 })
	t := Table{Title: "CPU: µs per operation, client cores in use (sums over trials)", Left: 3}
	t.Header = []string{"experiment", "", "variant", "client µs/op"}
	if server {
		t.Header = append(t.Header, "server µs/op")
	}
	t.Header = append(t.Header, "client cores")
	var last cellKey
	for _, e := range ix.experiments {
		if e == plan.Wire {
			continue // a capture measures no CPU
		}
		for _, k := range ix.cells(e) {
			var ops int64
			var client, srv, elapsed time.Duration
			for _, t := range ix.trials[k] {
				ops += t.Ops
				client += t.ClientCPU
				srv += t.ServerCPU
				elapsed += t.Elapsed
			}
			// Name the experiment and concurrency only where they change.
			exp, conc := string(k.exp), plan.Label(k.c)
			if k.exp == last.exp {
				exp = ""
				if k.c == last.c {
					conc = ""
				}
			}
			last = k
			row := []Cell{textCell(exp), textCell(conc), textCell(k.variant), perOp(client, ops)}
			if server {
				row = append(row, perOp(srv, ops))
			}
			cores := textCell("-")
			if elapsed > 0 {
				v := client.Seconds() / elapsed.Seconds()
				cores = Cell{Text: fmt.Sprintf("%.2f", v), Unit: "cores", Value: v, StdDev: math.NaN(), CI: math.NaN()}
			}
			t.addCells(append(row, cores)...)
		}
	}
	if len(t.Rows) > 0 {
		b.table(t)
	}
}

// perOp is CPU per operation in µs, "-" without CPU or operations: the
// CPU tables' cells and the summaries' figures.
func perOp(cpu time.Duration, ops int64) Cell {
	if ops <= 0 || cpu <= 0 {
		return textCell("-")
	}
	return numCell(float64(cpu)/float64(time.Microsecond)/float64(ops), millis, "µs/op")
}
