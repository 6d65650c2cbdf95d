// Package report renders result files as text tables; it never runs anything.
package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Text writes the seed-style tables of r to w: throughput per variant and
// concurrency with the change against the baseline, latency, connection
// phases, what was negotiated, CPU, and warnings drawn from the figures.
// Output is deterministic: the same result renders byte for byte the same,
// which is what lets `tlsbench report` re-render a run's output.
func Text(w io.Writer, r *result.Result) error {
	v := newIndex(r)
	var b strings.Builder
	v.header(&b)
	v.tables(&b)
	if !isCrypto(r) {
		v.warnings(&b)
	}
	v.findings(&b)
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// tables writes the tables of r, each followed by a blank line (the HTML
// page shows them too).
func (ix *index) tables(b *strings.Builder) {
	if isCrypto(ix.r) {
		ix.crypto(b)
		return
	}
	for _, e := range ix.experiments {
		ix.throughput(b, e)
		switch e {
		case plan.Connect:
			ix.phases(b, e)
			ix.ceilings(b)
			ix.rttModel(b)
		case plan.Pool, plan.Stream:
			ix.p95(b, e)
		}
	}
	ix.negotiated(b)
	ix.tunnels(b)
	ix.cpu(b)
}

// cellKey names the trials behind one cell of the tables: one experiment,
// variant and concurrency (a CellSummary summarizes them).
type cellKey struct {
	exp     plan.Experiment
	variant string
	c       int
}

// index is a result's trials by cellKey, and the orders the tables list
// experiments, variants and concurrencies in.
type index struct {
	r           *result.Result
	experiments []plan.Experiment // connect, pool, then any other, as measured
	variants    []string          // r.Variants order, then variants only trials name
	info        map[string]plan.Variant
	baseline    string
	conc        map[plan.Experiment][]int
	trials      map[cellKey][]result.Trial // by round
}

func newIndex(r *result.Result) *index {
	v := &index{
		r:      r,
		info:   map[string]plan.Variant{},
		conc:   map[plan.Experiment][]int{},
		trials: map[cellKey][]result.Trial{},
	}
	for _, pv := range r.Variants {
		v.variants = append(v.variants, pv.ID)
		v.info[pv.ID] = pv
		if pv.Baseline && v.baseline == "" {
			v.baseline = pv.ID
		}
	}
	for _, t := range r.Trials {
		k := cellKey{t.Experiment, t.Variant, t.Concurrency}
		v.trials[k] = append(v.trials[k], t)
		if !slices.Contains(v.experiments, t.Experiment) {
			v.experiments = append(v.experiments, t.Experiment)
		}
		if !slices.Contains(v.conc[t.Experiment], t.Concurrency) {
			v.conc[t.Experiment] = append(v.conc[t.Experiment], t.Concurrency)
		}
		if !slices.Contains(v.variants, t.Variant) {
			v.variants = append(v.variants, t.Variant)
		}
	}
	if v.baseline == "" && len(v.variants) > 0 {
		v.baseline = v.variants[0]
	}
	for _, ts := range v.trials {
		slices.SortStableFunc(ts, func(a, b result.Trial) int { return cmp.Compare(a.Round, b.Round) })
	}
	for _, cs := range v.conc {
		slices.Sort(cs)
	}
	slices.SortFunc(v.experiments, expOrder)
	return v
}

// cells lists the cells of an experiment that hold trials, column by column.
func (ix *index) cells(e plan.Experiment) []cellKey {
	var out []cellKey
	for _, c := range ix.conc[e] {
		for _, name := range ix.variants {
			if k := (cellKey{e, name, c}); len(ix.trials[k]) > 0 {
				out = append(out, k)
			}
		}
	}
	return out
}

// trialCount says over how many trials the cells of an experiment's columns
// cs were averaged: "3 trials", or "1-3 trials" after an interrupted run.
func (ix *index) trialCount(e plan.Experiment, cs ...int) string {
	lo, hi := math.MaxInt, 0
	for _, c := range cs {
		for _, name := range ix.variants {
			if n := len(ix.trials[cellKey{e, name, c}]); n > 0 {
				lo, hi = min(lo, n), max(hi, n)
			}
		}
	}
	if lo >= hi {
		return plural(hi, "trial")
	}
	return fmt.Sprintf("%d-%d trials", lo, hi)
}

func (ix *index) header(b *strings.Builder) {
	r := ix.r
	title := "tlsbench"
	if r.Tool.Version != "" {
		title += " " + r.Tool.Version
	}
	target := r.Target.URL
	if r.Target.Kind != "" && r.Target.Kind != r.Target.URL {
		target += " (" + r.Target.Kind + ")"
	}
	fmt.Fprintf(b, "%s — %s\n", title, target)
	line := func(key, val string) { fmt.Fprintf(b, "%-8s%s\n", key+":", val) }
	if !r.Started.IsZero() {
		line("date", r.Started.UTC().Format(time.RFC3339))
	}
	switch {
	case isCrypto(r):
		line("timing", cryptoBounds(r.Spec))
	case r.Spec.Count > 0:
		line("trials", fmt.Sprintf("%d × %d operations (at most %s)", r.Spec.Trials, r.Spec.Count, r.Spec.Duration))
	default:
		line("trials", fmt.Sprintf("%d × %s", r.Spec.Trials, r.Spec.Duration))
	}
	client := []string{r.Env.OS + "/" + r.Env.Arch}
	if r.Env.Kernel != "" {
		client = append(client, "kernel "+r.Env.Kernel)
	}
	client = append(client, plural(r.Env.Cores, "core"))
	if r.Env.CPUModel != "" {
		client = append(client, r.Env.CPUModel)
	}
	if r.Env.AESNI {
		client = append(client, "AES-NI")
	} else {
		client = append(client, "no AES-NI")
	}
	line("client", strings.Join(client, ", "))
	line("Go/TLS", r.Tool.Go+", "+r.Tool.TLSLibrary)
	if s := r.Target.Server; s != nil {
		line("server", strings.TrimSpace(s.Software+" "+s.Version))
	}
	if r.Interrupted {
		if want := len(r.Spec.Experiments) * len(r.Variants) * len(r.Spec.Concurrency) * r.Spec.Trials; want > 0 {
			fmt.Fprintf(b, "interrupted: %d of %d trials finished\n", len(r.Trials), want)
		} else {
			fmt.Fprintf(b, "interrupted: %s finished\n", plural(len(r.Trials), "trial"))
		}
	}
	if r.Error != "" {
		fmt.Fprintf(b, "error: %s\n", r.Error)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	b.WriteString("\n")
}

// unit names what an experiment's main table counts, and metric computes
// it from a trial: the seed's figures (connections/s, queries/s) and MB/s
// for streams.
func (ix *index) unit(e plan.Experiment) string {
	switch {
	case e == plan.Connect:
		return "connections/s"
	case e == plan.Stream:
		return "MB/s received"
	case ix.r.Spec.Workload == "read-only":
		return "queries/s (16 per read-only transaction, as sysbench counts)"
	case ix.r.Spec.Workload == "point-select":
		return "queries/s"
	}
	return "requests/s" // HTTP and Redis GETs
}

func (ix *index) metric(e plan.Experiment) func(result.Trial) float64 {
	switch {
	case e == plan.Stream:
		return func(t result.Trial) float64 {
			if t.Elapsed <= 0 {
				return 0
			}
			return float64(t.BytesReceived) / 1e6 / t.Elapsed.Seconds()
		}
	case e == plan.Pool && ix.r.Spec.Workload == "read-only":
		return func(t result.Trial) float64 {
			if t.Elapsed <= 0 {
				return 0
			}
			return float64(t.Queries) / t.Elapsed.Seconds()
		}
	}
	return result.Trial.Throughput
}

const deltaLegend = "vs baseline: paired by round; ± is the half-width of the 95% confidence interval; * when it excludes 0"

// throughput writes the main table of an experiment and its change against
// the baseline: as a last column with one concurrency, as a table of its own
// with several.
func (ix *index) throughput(b *strings.Builder, e plan.Experiment) {
	cs := ix.conc[e]
	head := []string{"variant"}
	for _, c := range cs {
		head = append(head, plan.Label(c))
	}
	t := table{
		title:  fmt.Sprintf("%s: %s, mean (stddev) over %s", e, ix.unit(e), ix.trialCount(e, ix.conc[e]...)),
		left:   1,
		header: head,
	}
	d := table{title: fmt.Sprintf("%s: %s vs baseline, %% (95%% CI)", e, ix.unit(e)), left: 1, header: head}
	metric := ix.metric(e)
	compare := len(ix.variants) > 1
	inline := compare && len(cs) == 1
	if inline {
		t.header = append(slices.Clip(head), "vs baseline")
		t.foot = []string{deltaLegend}
	}
	for _, name := range ix.variants {
		row, drow := []string{name}, []string{name}
		for _, c := range cs {
			ts := ix.trials[cellKey{e, name, c}]
			row = append(row, meanStd(collect(ts, metric), rate))
			drow = append(drow, ix.delta(e, name, c))
		}
		if inline {
			row = append(row, drow[1])
		}
		t.add(row...)
		d.add(drow...)
	}
	t.write(b)
	if compare && !inline {
		d.foot = []string{deltaLegend}
		d.write(b)
	}
}

// delta is the change of a variant's throughput against the baseline's in
// the same experiment and concurrency, trials paired by round.
func (ix *index) delta(e plan.Experiment, name string, c int) string {
	if name == ix.baseline {
		return "baseline"
	}
	return delta(ix.paired(e, name, c))
}

// paired is that change as figures.
func (ix *index) paired(e plan.Experiment, name string, c int) stats.Delta {
	metric := ix.metric(e)
	base := map[int]float64{}
	for _, t := range ix.trials[cellKey{e, ix.baseline, c}] {
		base[t.Round] = metric(t)
	}
	var bs, vs []float64
	for _, t := range ix.trials[cellKey{e, name, c}] {
		if x, ok := base[t.Round]; ok {
			bs, vs = append(bs, x), append(vs, metric(t))
		}
	}
	return stats.Paired(bs, vs)
}

// p95 writes the pool's p95 latency per variant and concurrency.
func (ix *index) p95(b *strings.Builder, e plan.Experiment) {
	t := table{title: fmt.Sprintf("%s: p95 latency, ms, mean (stddev) over %s", e, ix.trialCount(e, ix.conc[e]...)), left: 1}
	t.header = []string{"variant"}
	for _, c := range ix.conc[e] {
		t.header = append(t.header, plan.Label(c))
	}
	for _, name := range ix.variants {
		row := []string{name}
		for _, c := range ix.conc[e] {
			ts := withLatency(ix.trials[cellKey{e, name, c}])
			row = append(row, meanStd(collect(ts, func(t result.Trial) float64 { return t.Latency.P95 }), millis))
		}
		t.add(row...)
	}
	t.write(b)
}

// phases writes, per concurrency, where a connection's time goes: each
// phase's mean latency with its round trips, then the whole connection's.
func (ix *index) phases(b *strings.Builder, e plan.Experiment) {
	for _, c := range ix.conc[e] {
		var names []string
		for _, name := range ix.variants {
			for _, t := range ix.trials[cellKey{e, name, c}] {
				names = mergeOrder(names, t.Phases)
			}
		}
		t := table{
			title: fmt.Sprintf("%s %s: phases, ms, mean over %s [round trips]", e, plan.Label(c), ix.trialCount(e, c)),
			left:  1,
		}
		t.header = append(append([]string{"variant"}, names...), "total", "p50", "p95", "p99", "max")
		for _, name := range ix.variants {
			ts := withLatency(ix.trials[cellKey{e, name, c}])
			row := []string{name}
			for _, p := range names {
				row = append(row, phaseCell(ts, p))
			}
			mean := func(f func(result.Hist) float64) string {
				if len(ts) == 0 {
					return "-"
				}
				return num(stats.Summarize(collect(ts, func(t result.Trial) float64 { return f(t.Latency) })).Mean, millis)
			}
			row = append(row,
				mean(func(h result.Hist) float64 { return h.Mean }),
				mean(func(h result.Hist) float64 { return h.P50 }),
				mean(func(h result.Hist) float64 { return h.P95 }),
				mean(func(h result.Hist) float64 { return h.P99 }))
			if len(ts) == 0 {
				row = append(row, "-")
			} else {
				row = append(row, num(slices.Max(collect(ts, func(t result.Trial) float64 { return t.Latency.Max })), millis))
			}
			t.add(row...)
		}
		t.write(b)
	}
}

// mergeOrder adds the phase names of one trial to names, each new one right
// after the phase that precedes it in the trial, so that plain's tcp, request
// and TLS's tcp, tls-handshake, request merge into tcp, tls-handshake, request.
func mergeOrder(names []string, phases []result.Phase) []string {
	at := 0
	for _, p := range phases {
		if i := slices.Index(names, p.Name); i >= 0 {
			at = i + 1
			continue
		}
		names = slices.Insert(names, at, p.Name)
		at++
	}
	return names
}

// phaseCell is "0.052 [1]": the phase's mean latency over trials and its round trips.
func phaseCell(ts []result.Trial, name string) string {
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
		return "-"
	}
	return fmt.Sprintf("%s [%s]", num(stats.Summarize(ms).Mean, millis), roundTrips(lo, hi))
}

// negotiated writes what each TLS variant's handshakes settled on.
func (ix *index) negotiated(b *strings.Builder) {
	t := table{
		title:  "negotiated, as the client saw it",
		left:   5,
		header: []string{"variant", "version", "suite", "group", "server key", "resumed"},
	}
	// What the server said of the check connection, where it can tell.
	server := map[string]string{}
	for _, c := range ix.r.Checks {
		switch sv := c.Server; {
		case sv == nil:
		case !sv.TLS:
			server[c.Variant] = "plaintext"
		case sv.Version == "" && sv.Cipher == "":
			server[c.Variant] = "TLS"
		default:
			server[c.Variant] = strings.TrimSpace(sv.Version + " " + sv.Cipher)
		}
	}
	if len(server) > 0 {
		t.title = "negotiated, as the client saw it and as the server reports it"
		t.header = append(t.header, "server says")
	}
	add := func(name string, cells ...string) {
		row := append([]string{name}, cells...)
		if len(server) > 0 {
			s := server[name]
			if s == "" {
				s = "-"
			}
			row = append(row, s)
		}
		t.add(row...)
	}
	tls := len(server) > 0
	for _, name := range ix.variants {
		var ts []result.Trial
		for _, e := range ix.experiments {
			for _, c := range ix.conc[e] {
				ts = append(ts, ix.trials[cellKey{e, name, c}]...)
			}
		}
		if len(ts) == 0 {
			continue
		}
		info, known := ix.info[name]
		if (known && info.Plain()) || (!known && !slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Negotiated != nil })) {
			add(name, "-", "-", "-", "-", "-")
			continue
		}
		tls = true
		var resumed, conns int64
		for _, t := range ts {
			resumed += t.Resumed
			conns += t.Conns
		}
		field := func(f func(*result.Negotiated) string) string {
			var vals []string
			for _, t := range ts {
				if t.Negotiated != nil && f(t.Negotiated) != "" && !slices.Contains(vals, f(t.Negotiated)) {
					vals = append(vals, f(t.Negotiated))
				}
			}
			if len(vals) == 0 {
				return "-"
			}
			return strings.Join(vals, "/")
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
			percent(resumed, conns))
	}
	if tls {
		t.write(b)
	}
}

// cpu writes the CPU each operation cost the client and the server, and how
// many cores the client kept busy.
func (ix *index) cpu(b *strings.Builder) {
	server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.ServerCPU > 0 })
	t := table{title: "CPU: µs per operation, client cores in use (sums over trials)", left: 3}
	t.header = []string{"experiment", "", "variant", "client µs/op"}
	if server {
		t.header = append(t.header, "server µs/op")
	}
	t.header = append(t.header, "client cores")
	var last cellKey
	for _, e := range ix.experiments {
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
			row := []string{exp, conc, k.variant, perOp(client, ops)}
			if server {
				row = append(row, perOp(srv, ops))
			}
			cores := "-"
			if elapsed > 0 {
				cores = fmt.Sprintf("%.2f", client.Seconds()/elapsed.Seconds())
			}
			t.add(append(row, cores)...)
		}
	}
	if len(t.rows) > 0 {
		t.write(b)
	}
}

func perOp(cpu time.Duration, ops int64) string {
	if ops <= 0 || cpu <= 0 {
		return "-"
	}
	return num(float64(cpu)/float64(time.Microsecond)/float64(ops), millis)
}

// warnings writes what the figures themselves say about their own limits.
func (ix *index) warnings(b *strings.Builder) {
	r := ix.r
	if len(r.Trials) == 0 {
		b.WriteString("warning: no trial finished: there is nothing to report\n")
		return
	}
	for _, e := range ix.experiments {
		for _, name := range ix.variants {
			for _, c := range ix.conc[e] {
				// A client near its CPU limit measures itself, not the server.
				limit := c
				if r.Env.Cores > 0 {
					limit = min(c, r.Env.Cores)
				}
				used := 0.0
				for _, t := range ix.trials[cellKey{e, name, c}] {
					if t.Elapsed > 0 {
						used = max(used, t.ClientCPU.Seconds()/t.Elapsed.Seconds())
					}
				}
				if used > 0.85*float64(limit) {
					fmt.Fprintf(b, "warning: the client used %.2f of %s in %s %s %s: the figures may be limited by tlsbench, not the server\n",
						used, plural(limit, "core"), e, name, plan.Label(c))
				}
			}
		}
	}
	for _, e := range ix.experiments {
		for _, name := range ix.variants {
			for _, c := range ix.conc[e] {
				errs, first := map[string]int64{}, map[string]string{}
				for _, t := range ix.trials[cellKey{e, name, c}] {
					for kind, n := range t.Errors {
						errs[kind] += n
						if first[kind] == "" {
							first[kind] = t.ErrorSamples[kind]
						}
					}
				}
				kinds := make([]string, 0, len(errs))
				for k := range errs {
					kinds = append(kinds, k)
				}
				slices.Sort(kinds)
				for _, k := range kinds {
					msg := ""
					if first[k] != "" {
						msg = ", the first: " + first[k]
					}
					fmt.Fprintf(b, "warning: %s %s %s: %d %s%s\n", e, name, plan.Label(c), errs[k], errorWord(errs[k], k), msg)
				}
			}
		}
	}
	// Resumption asked for but refused is a property of the server, and
	// it changes what the resume variant measures.
	for _, name := range ix.variants {
		if info, ok := ix.info[name]; !ok || !info.Resume {
			continue
		}
		var resumed, conns int64
		for _, e := range ix.experiments {
			for _, c := range ix.conc[e] {
				for _, t := range ix.trials[cellKey{e, name, c}] {
					resumed += t.Resumed
					conns += t.Conns
				}
			}
		}
		if conns > 0 && resumed*2 < conns {
			fmt.Fprintf(b, "warning: %s: the server resumed %s of the sessions the client offered to resume: it refuses or limits resumption\n", name, percent(resumed, conns))
		}
	}
	single, all := 0, 0
	for _, e := range ix.experiments {
		for _, k := range ix.cells(e) {
			all++
			if len(ix.trials[k]) < 2 {
				single++
			}
		}
	}
	switch {
	case single == all:
		b.WriteString("warning: one trial: no stddev or confidence interval\n")
	case single > 0:
		fmt.Fprintf(b, "warning: one trial in %d of %d cells: no stddev or confidence interval there\n", single, all)
	}
}

func errorWord(n int64, kind string) string {
	if n == 1 {
		return kind + " error"
	}
	return kind + " errors"
}

// collect maps trials to one figure each.
func collect(ts []result.Trial, f func(result.Trial) float64) []float64 {
	xs := make([]float64, len(ts))
	for i, t := range ts {
		xs[i] = f(t)
	}
	return xs
}

// withLatency drops trials that recorded no latency (every operation failed),
// whose zeros would pull the means down.
func withLatency(ts []result.Trial) []result.Trial {
	var out []result.Trial
	for _, t := range ts {
		if t.Latency.Count > 0 {
			out = append(out, t)
		}
	}
	return out
}
