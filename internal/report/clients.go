package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Client stacks (--client): the same study run through Go's drivers and
// through the stacks applications use (psycopg, pgjdbc, node-postgres,
// libpq …). Server costs are alike for every stack, client costs are
// not, so every change is measured against the plain variant of the same
// stack (index.baselineOf), and the stacks are set side by side: what
// each is, what TLS costs each, how each scales with concurrency (the
// threads study), and whether a stack, not the server, set the pace.

// goStack names tlsbench's own drivers among the client stacks.
const goStack = "go"

// clientStacks lists the client stacks of the run's variants, in variant
// order; nil unless one is not Go's, so that a run of Go's alone reads
// as it always has.
func (ix *index) clientStacks() []string {
	var out []string
	other := false
	for _, n := range ix.variants {
		s := ix.stackOf(n)
		other = other || s != goStack
		out = addNew(out, s)
	}
	if !other {
		return nil
	}
	return out
}

// stackOf is the client stack of a variant: its Client, goStack for Go's.
func (ix *index) stackOf(name string) string {
	if c := ix.info[name].Client; c != "" {
		return c
	}
	return goStack
}

// deltaLegend is the legend of a change against the baseline, which in
// a run of several stacks is each stack's own plain.
func (ix *index) deltaLegend() string {
	if ix.stacks == nil {
		return deltaLegend
	}
	return deltaLegend + "; each client stack against its own plain variant"
}

// stackInfo is what a stack said of itself (result.Clients); for Go's,
// what the result says of tlsbench.
func (ix *index) stackInfo(name string) result.ClientStack {
	for _, c := range ix.r.Clients {
		if c.Name == name {
			return c
		}
	}
	if name != goStack {
		return result.ClientStack{Name: name}
	}
	return result.ClientStack{Name: name, Driver: goDriver(ix.r.Spec.Target), TLS: ix.r.Tool.TLSLibrary, Runtime: ix.r.Tool.Go, Model: "goroutines"}
}

// goDriver is the Go driver tlsbench uses for a target's engine.
func goDriver(target string) string {
	t, err := plan.ParseTarget(target)
	if err != nil {
		return ""
	}
	switch e := t.Engine(); {
	case strings.HasPrefix(e, "postgres"):
		return "pgx"
	case e == "mysql":
		return "go-sql-driver/mysql"
	case e == "mongodb":
		return "mongo-go-driver"
	case strings.HasPrefix(e, "redis"):
		return "go-redis"
	}
	return "net/http"
}

// stackShare is how many cores a stack's way of running connections can
// keep busy at concurrency c: one for an event loop, else one per
// connection up to the machine's cores; CPython's threads one.
func (ix *index) stackShare(name string, c int) int {
	if in := ix.stackInfo(ix.stackOf(name)); in.Model == "event-loop" || in.Model == "threads" && strings.HasPrefix(in.Runtime, "CPython") {
		return 1 // one loop; CPython's threads take turns holding one interpreter lock
	}
	if n := ix.r.Env.Cores; n > 0 {
		return min(c, n)
	}
	return c
}

// clientLoad is the most of its share of cores (stackShare) the client
// kept busy in one trial of a cell, as a fraction of one core, and that
// share: a client near it measures itself, not the server.
func (ix *index) clientLoad(k cellKey) (used float64, share int) {
	for _, t := range ix.trials[k] {
		if t.Elapsed > 0 {
			used = max(used, t.ClientCPU.Seconds()/t.Elapsed.Seconds())
		}
	}
	return used, ix.stackShare(k.variant, k.c)
}

// clientBound is the share of its cores past which a client is said to
// set the pace.
const clientBound = 0.85

// stackTLS lists, per stack in stack order, the TLS variants of e measured
// at c with the plain variant of the same stack they are set against.
func (ix *index) stackTLS(e plan.Experiment, c int) (tls, plain []string) {
	for _, s := range ix.stacks {
		for _, n := range ix.measured(e) {
			info, ok := ix.info[n]
			if !ok || ix.stackOf(n) != s || info.Plain() || info.Tunnel != "" || info.RTT != 0 || !ix.has(e, c, n) {
				continue
			}
			tls, plain = append(tls, n), append(plain, ix.plainOf(n))
		}
	}
	return tls, plain
}

// clientMS is a trial's client CPU per operation in ms (compare.go's
// cpuPerOp is in µs), false without.
func clientMS(t result.Trial) (float64, bool) {
	us, ok := clientUS(t)
	return us / 1000, ok
}

var clientUS = cpuPerOp(clientCPU)(nil, "")

// tlsCPU is what TLS adds to the client CPU of an operation of e at c
// with variant to over its plain from, ms, round by round as the
// contrasts pair them: its summary has the interval.
func (ix *index) tlsCPU(e plan.Experiment, c int, from, to string) (margin, stats.Summary) {
	a, b := ix.pairedTrials(e, c, from, to)
	return compareRounds(func(ts []result.Trial) (float64, bool) {
		x, okA := clientMS(ts[0])
		y, okB := clientMS(ts[1])
		return y - x, okA && okB
	}, a, b)
}

// stackTables writes the client stacks of the run: what each is, what TLS
// costs each at the lowest concurrency of connect and pool, and the
// threads study.
func (ix *index) stackTables(b *body) {
	if ix.stacks == nil {
		return
	}
	t := Table{
		Title:  "client stacks: what made the connections",
		Left:   5,
		Header: []string{"client", "driver", "TLS library", "runtime", "concurrency"},
		Foot:   []string{"concurrency: how the stack ran concurrent connections (threads, an event loop with that many in flight, processes; Go's goroutines)"},
	}
	for _, s := range ix.stacks {
		in := ix.stackInfo(s)
		t.add(s, dash(in.Driver), dash(in.TLS), dash(in.Runtime), dash(in.Model))
	}
	b.table(t)
	for _, e := range []plan.Experiment{plan.Connect, plan.Pool} {
		ix.stackCost(b, e)
	}
	ix.threads(b)
}

// stackUnits are the short names of e's figures per operation: ms of
// time and CPU per connection (connect) or µs of CPU per operation.
func (ix *index) stackUnits(e plan.Experiment) (rateUnit, opUnit, cpuUnit string, cpuScale float64) {
	if e == plan.Connect {
		return "conn/s", "ms/conn", "ms/conn", 1
	}
	return ix.metricName(e), "ms/op", "µs/op", 1000
}

// stackCost writes, for each stack's TLS variants of e at the lowest
// concurrency, the figures against the same stack's plain: rate and its
// change, time, client CPU and what TLS adds to it, server CPU, what was
// negotiated and the round trips TLS adds.
func (ix *index) stackCost(b *body, e plan.Experiment) {
	c, ok := ix.lowest(e)
	if !ok {
		return
	}
	tls, plain := ix.stackTLS(e, c)
	if len(tls) == 0 {
		return
	}
	rateUnit, opUnit, cpuUnit, scale := ix.stackUnits(e)
	server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Experiment == e && t.ServerCPU > 0 })
	t := Table{
		Title: fmt.Sprintf("client stacks, %s %s: TLS against the same stack's plain, mean (stddev) over %s", e, plan.Label(c), ix.trialCount(e, c)),
		Left:  2,
		Header: []string{"client", "variant", rateUnit + " plain", "TLS", "vs plain", opUnit + " plain", "TLS",
			"client CPU " + cpuUnit + " plain", "TLS", "TLS adds"},
	}
	if server {
		t.Header = append(t.Header, "server CPU "+cpuUnit+" plain", "TLS")
	}
	t.Header = append(t.Header, "negotiated", "round trips")
	last := ""
	for i, n := range tls {
		p := plain[i]
		s := ix.stackOf(n)
		label := s
		if s == last {
			label = ""
		}
		last = s
		tk, pk := cellKey{e, n, c}, cellKey{e, p, c}
		cpu := func(k cellKey, f func(result.Trial) time.Duration) Cell {
			return numCell(cpuMS(ix.trials[k], f)*scale, millis, cpuUnit)
		}
		mean := func(k cellKey) Cell { return latencyCell(ix.trials[k], func(h result.Hist) float64 { return h.Mean }) }
		row := []Cell{textCell(label), textCell(n), ix.rateCell(pk), ix.rateCell(tk), textCell("-"),
			mean(pk), mean(tk), cpu(pk, clientCPU), cpu(tk, clientCPU), textCell("-")}
		if p != "" && ix.has(e, c, p) {
			row[4] = deltaCell(ix.contrast(e, p, n, c).Delta)
			m, d := ix.tlsCPU(e, c, p, n)
			row[9] = addedCell(m, d, scale, cpuUnit)
		}
		if server {
			row = append(row, cpu(pk, serverCPU), cpu(tk, serverCPU))
		}
		rts := ix.addedRoundTrips(e, c, p, n)
		if s != goStack && e == plan.Connect {
			rts = ix.wireRoundTrips(p, n)
		}
		row = append(row, textCell(ix.stackNegotiated(n, ix.trials[tk])), rts)
		t.addCells(row...)
	}
	t.Foot = []string{
		"vs plain: the change of " + rateUnit + " against the same stack's plain, trials paired by round (rounds with an outlier left out, as in the findings); ± is the half-width of the 95% confidence interval; * when it excludes 0",
		"client CPU: the stack's own process (every thread: driver, TLS library, runtime) over the trials; TLS adds: TLS's client CPU minus plain's, round by round, ± 95% interval, * when it excludes 0",
		"round trips: those TLS adds to a connection's setup against the same stack's plain, and the TLS phases' own; per phase in the phases table",
	}
	if e == plan.Connect && len(ix.stacks) > 1 {
		t.Foot = append(t.Foot, "round trips of a stack other than Go's: from the wire (--wire), over the whole connection but its close, per phase in the wire's table; without --wire they are not measured (a stack reports only each operation's start and end)")
	}
	if server {
		t.Foot = slices.Insert(t.Foot, 2, "server CPU: the server's processes, alike for every stack")
	}
	b.table(t)
}

// addedCell is a difference round by round, ms, as a figure in unit
// (scale: µs 1000): "+2.05 ±0.12 *", a star where its 95% interval
// excludes 0; the mean alone from one round.
func addedCell(m margin, d stats.Summary, scale float64, unit string) Cell {
	if d.N == 0 || !finite(d.Mean) {
		return textCell("-")
	}
	mean := d.Mean * scale
	c := Cell{Text: signed(mean, millis), Unit: unit, Value: mean, StdDev: math.NaN(), CI: math.NaN()}
	if d.N >= 2 && finite(d.CI95) {
		c.CI, c.StdDev = d.CI95*scale, d.StdDev*scale
		c.Text += " ±" + ciWords(mean, c.CI)
		if m != about {
			c.Text += " *"
		} else {
			c.Text += "  "
		}
	}
	return c
}

// stackNegotiated is what variant's trials negotiated in short: as the
// wire shows its connections where the run captured them (--wire), marked
// so ("TLS 1.3 … P-256 after HRR (wire)"): the wire sees the group and a
// HelloRetryRequest, which few stacks tell and the C tools tell nothing
// of; else as the stack said it.
func (ix *index) stackNegotiated(variant string, ts []result.Trial) string {
	for _, ws := range ix.r.WireStacks {
		if ws.Variant != variant || ws.Negotiated == nil {
			continue
		}
		n := *ws.Negotiated
		n.HelloRetry = ws.HelloRetries > 0
		return negotiatedWords([]result.Trial{{Negotiated: &n}}) + " (wire)"
	}
	return negotiatedWords(ts)
}

// negotiatedWords is what a variant's trials negotiated in short:
// "TLSv1.3 TLS_AES_256_GCM_SHA384 P-256 after HRR", "-" if nothing.
func negotiatedWords(ts []result.Trial) string {
	var vals []string
	for _, t := range ts {
		n := t.Negotiated
		if n == nil {
			continue
		}
		s := strings.Join(slices.DeleteFunc([]string{n.Version, n.Suite, n.Group}, func(s string) bool { return s == "" || s == "-" }), " ")
		if n.HelloRetry {
			s += " after HRR"
		}
		if s != "" && !slices.Contains(vals, s) {
			vals = append(vals, s)
		}
	}
	if len(vals) == 0 {
		return "-"
	}
	return strings.Join(vals, " / ")
}

// addedRoundTrips is the round trips TLS adds to a connection's setup
// with variant to over plain from, and the TLS phases' own: "+2
// (tls-negotiation 1, tls-handshake 1)"; "-" without phases.
func (ix *index) addedRoundTrips(e plan.Experiment, c int, from, to string) Cell {
	ts := ix.trials[cellKey{e, to, c}]
	st, sp := setupOf(ts), setupOf(ix.trials[cellKey{e, from, c}])
	if !st.ok || !sp.ok {
		return textCell("-")
	}
	d := roundRT(st.rt - sp.rt)
	var names, parts []string
	for _, t := range withLatency(ts) {
		names = mergeOrder(names, t.Phases)
	}
	for _, p := range names {
		if !strings.HasPrefix(p, "tls") {
			continue
		}
		lo, hi := math.MaxInt, math.MinInt
		for _, t := range ts {
			for _, ph := range t.Phases {
				if ph.Name == p && ph.Latency.Count > 0 {
					lo, hi = min(lo, ph.RoundTrips.Min), max(hi, ph.RoundTrips.Max)
				}
			}
		}
		if lo <= hi {
			parts = append(parts, p+" "+roundTrips(lo, hi))
		}
	}
	text := signed(d, sig3)
	if d == math.Round(d) {
		text = fmt.Sprintf("%+d", int(d))
	}
	if len(parts) > 0 {
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	return Cell{Text: text, Unit: "round trips", Value: d, StdDev: math.NaN(), CI: math.NaN()}
}

// wireRoundTrips is, for a client stack other than Go's, the round trips
// TLS adds to a connection against the same stack's plain as the wire
// counted them (connect --wire), with the TLS phases' own; "not measured"
// without the wire's.
func (ix *index) wireRoundTrips(from, to string) Cell {
	sum := func(variant string) (float64, []string, bool) {
		rt, ok := 0.0, false
		var tls []string
		for _, c := range ix.r.WireChecks {
			if c.Variant != variant || c.Conns == 0 || c.Phase == "close" {
				continue
			}
			rt, ok = rt+c.WireRoundTrips, true
			if strings.HasPrefix(c.Phase, "tls") {
				tls = append(tls, c.Phase+" "+rtCell(c.WireRoundTrips).Text)
			}
		}
		return rt, tls, ok
	}
	rt, tls, okT := sum(to)
	plain, _, okP := sum(from)
	if !okT || !okP {
		return textCell("not measured (--wire)")
	}
	d := roundRT(rt - plain)
	text := signed(d, sig3)
	if d == math.Round(d) {
		text = fmt.Sprintf("%+d", int(d))
	}
	if len(tls) > 0 {
		text += " (" + strings.Join(tls, ", ") + ")"
	}
	return Cell{Text: text + " wire", Unit: "round trips", Value: d, StdDev: math.NaN(), CI: math.NaN()}
}

// threads writes the threads study: a connect sweep over concurrency
// through several stacks, each variant's connections/s, client CPU per
// connection and client cores in use at each concurrency.
func (ix *index) threads(b *body) {
	cs := ix.conc[plan.Connect]
	if len(cs) < 2 || len(ix.stacks) < 2 {
		return
	}
	t := Table{
		Title:  fmt.Sprintf("connect: the threads study, per client stack by concurrency, mean (stddev) over %s", ix.trialCount(plan.Connect, cs...)),
		Left:   3,
		Header: []string{"client", "variant", "figure"},
		Foot: []string{
			"client CPU: the stack's own process per connection, ms; client cores: its CPU over the trial's time, the most of any trial, against the cores its concurrency model can use (an event loop or CPython's threads one)",
			"more client CPU per connection as concurrency grows is what contention inside a stack looks like (locks in its TLS library, an interpreter lock)",
		},
	}
	for _, c := range cs {
		t.Header = append(t.Header, plan.Label(c))
	}
	last := ""
	for _, s := range ix.stacks {
		for _, n := range ix.measured(plan.Connect) {
			if ix.stackOf(n) != s {
				continue
			}
			label := s
			if s == last {
				label = ""
			}
			last = s
			rates, cpus, cores := []Cell{textCell(label), textCell(n), textCell("connections/s")},
				[]Cell{textCell(""), textCell(""), textCell("client CPU ms/conn")},
				[]Cell{textCell(""), textCell(""), textCell("client cores")}
			for _, c := range cs {
				k := cellKey{plan.Connect, n, c}
				rates = append(rates, ix.rateCell(k))
				cpus = append(cpus, meanCell(trialValues(ix.trials[k], clientMS), millis, "ms/conn"))
				if len(ix.trials[k]) == 0 {
					cores = append(cores, textCell("-"))
					continue
				}
				used, share := ix.clientLoad(k)
				cores = append(cores, Cell{Text: fmt.Sprintf("%.2f/%d", used, share), Unit: "cores", Value: used, StdDev: math.NaN(), CI: math.NaN()})
			}
			t.addCells(rates...)
			t.addCells(cpus...)
			t.addCells(cores...)
		}
	}
	b.table(t)
}

// stackSummaries are the rows of the csv and json summaries for the
// client stacks: per TLS variant of each stack, what TLS adds to the
// client CPU of an operation (connect: per connection, ms; pool: µs).
func (ix *index) stackSummaries() []CellSummary {
	var out []CellSummary
	if ix.stacks == nil {
		return nil
	}
	for _, e := range []plan.Experiment{plan.Connect, plan.Pool} {
		c, ok := ix.lowest(e)
		if !ok {
			continue
		}
		tls, plain := ix.stackTLS(e, c)
		_, _, cpuUnit, scale := ix.stackUnits(e)
		for i, n := range tls {
			if plain[i] == "" || !ix.has(e, c, plain[i]) {
				continue
			}
			_, d := ix.tlsCPU(e, c, plain[i], n)
			metric := "client CPU TLS adds " + cpuUnit
			s := ix.summary(string(e), n, c, ix.trials[cellKey{e, n, c}], metric, textCell("-"), noLatency)
			s.Trials = d.N
			s.Mean, s.StdDev, s.CI95 = number(d.Mean*scale), number(math.NaN()), number(math.NaN())
			if d.N >= 2 {
				s.StdDev, s.CI95 = number(d.StdDev*scale), number(d.CI95*scale)
			}
			out = append(out, s)
		}
	}
	return out
}

// The facts of the client stacks.

// StackCPU is what TLS adds to the client CPU of a new connection with
// each stack, at the lowest connect concurrency, for one TLS setting
// (Setting: "TLS 1.3"): Items, the dearest first. Ratio is the dearest's
// increment over the cheapest's; Apart says the dearest adds measurably
// more than the cheapest, round by round (Diff: their difference).
type StackCPU struct {
	Setting     string
	Concurrency int
	Items       []StackItem
	Ratio       float64
	Apart       bool
	Diff        stats.Summary
}

// StackItem is one stack's TLS variant against its plain: Added is the
// client CPU TLS adds per connection, ms, round by round; TLSMS the client
// CPU of a TLS connection, ms; Contrast the rate's change.
type StackItem struct {
	Stack    string
	Contrast Contrast
	Added    stats.Summary
	TLSMS    float64
}

// StackLoss is which stack loses the most of its connections per second
// to TLS in one setting: Items by their loss, the largest first; Apart
// says the first loses measurably more than the second, round by round
// (Diff: the difference of their changes, percentage points).
type StackLoss struct {
	Setting string
	Items   []StackItem
	Apart   bool
	Diff    stats.Summary
}

// ClientBound: the client of Stack kept Lo to Hi of its Share of cores
// busy in Cells ("connect psycopg plain c=4"): their figures are the
// stack's limit, not the server's. Model is how it runs connections,
// Runtime its language's.
type ClientBound struct {
	Stack          string
	Cells          []string
	Lo, Hi         float64
	Share          int
	Model, Runtime string
}

// StackScaling is the threads study of one stack's variant: from
// concurrency Lo to Hi, its connections/s (Rate, the change: more,
// less or about) and its client CPU per connection (CPU, ms at each;
// CPUChange measured round by round).
type StackScaling struct {
	Stack, Variant string
	Lo, Hi         int
	RateLo, RateHi float64
	Rate           margin
	CPULo, CPUHi   float64
	CPU            margin
	CPUDiff        stats.Summary
}

// StackThreads is the threads study: each stack's TLS variants (and Go's)
// from the lowest concurrency to the highest.
type StackThreads struct{ Items []StackScaling }

func (StackCPU) isFact()     {}
func (StackLoss) isFact()    {}
func (ClientBound) isFact()  {}
func (StackThreads) isFact() {}

// stackSetting names a TLS variant's setting without its stack: "TLS
// 1.3", "TLS 1.3 rsa2048"; variants in one setting differ by stack alone.
func (ix *index) stackSetting(name string) (plan.Variant, string) {
	k := ix.info[name]
	k.ID, k.Baseline, k.Client = "", false, ""
	words := "TLS " + k.TLS
	if k.Key != "" {
		words += " " + k.Key
	}
	if k.Resume {
		words += " resumed"
	}
	return k, words
}

// clients: what TLS costs each client stack, which loses the most to it,
// a stack that set the pace itself, and the threads study.
func (r *rules) clients() {
	ix := r.ix
	if ix.stacks == nil {
		return
	}
	if c, ok := ix.lowest(plan.Connect); ok {
		tls, plain := ix.stackTLS(plan.Connect, c)
		// Settings in order, each with its stacks' items.
		var keys []plan.Variant
		var words []string
		items := map[plan.Variant][]StackItem{}
		for i, n := range tls {
			p := plain[i]
			if p == "" || !ix.has(plan.Connect, c, p) {
				continue
			}
			k, w := ix.stackSetting(n)
			if _, ok := items[k]; !ok {
				keys, words = append(keys, k), append(words, w)
			}
			_, d := ix.tlsCPU(plan.Connect, c, p, n)
			items[k] = append(items[k], StackItem{Stack: ix.stackOf(n), Contrast: ix.contrast(plan.Connect, p, n, c), Added: d,
				TLSMS: cpuMS(ix.trials[cellKey{plan.Connect, n, c}], clientCPU)})
		}
		for i, k := range keys {
			r.stackCPU(words[i], c, items[k])
			r.stackLoss(words[i], c, items[k])
		}
	}
	r.clientBound()
	r.stackThreads()
}

// stackCPU states what TLS adds to each stack's client CPU per connection.
func (r *rules) stackCPU(setting string, c int, items []StackItem) {
	items = slices.DeleteFunc(slices.Clone(items), func(it StackItem) bool { return it.Added.N == 0 || !finite(it.Added.Mean) })
	if len(items) < 2 {
		return
	}
	slices.SortStableFunc(items, func(a, b StackItem) int { return cmp.Compare(b.Added.Mean, a.Added.Mean) })
	dear, cheap := items[0], items[len(items)-1]
	f := StackCPU{Setting: setting, Concurrency: c, Items: items, Ratio: math.NaN()}
	if cheap.Added.Mean > 0 {
		f.Ratio = dear.Added.Mean / cheap.Added.Mean
	}
	// Apart only where the two increments differ round by round.
	ix := r.ix
	a, b := ix.pairedTrials(plan.Connect, c, dear.Contrast.From, dear.Contrast.To)
	x, y := ix.pairedTrials(plan.Connect, c, cheap.Contrast.From, cheap.Contrast.To)
	m, d := compareRounds(func(ts []result.Trial) (float64, bool) {
		var v [4]float64
		for i, t := range ts {
			var ok bool
			if v[i], ok = clientMS(t); !ok {
				return 0, false
			}
		}
		return (v[1] - v[0]) - (v[3] - v[2]), true
	}, a, b, x, y)
	f.Apart, f.Diff = m == more, d
	r.add(KindFinding, TopicClients, f)
}

// stackLoss states which stack loses the most connections per second to
// TLS, where some loss is measurable.
func (r *rules) stackLoss(setting string, c int, items []StackItem) {
	if !slices.ContainsFunc(items, func(it StackItem) bool { return it.Contrast.Measurable() && it.Contrast.Delta.Pct < 0 }) || len(items) < 2 {
		return
	}
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b StackItem) int { return cmp.Compare(a.Contrast.Delta.Pct, b.Contrast.Delta.Pct) })
	first, second := items[0], items[1]
	ix := r.ix
	metric := ix.metric(plan.Connect)
	a, b := ix.pairedTrials(plan.Connect, c, first.Contrast.From, first.Contrast.To)
	x, y := ix.pairedTrials(plan.Connect, c, second.Contrast.From, second.Contrast.To)
	// The second's change minus the first's, in points: above 0 when the
	// first loses more.
	m, d := compareRounds(func(ts []result.Trial) (float64, bool) {
		p, q := metric(ts[0]), metric(ts[2])
		if p <= 0 || q <= 0 {
			return 0, false
		}
		return 100*(metric(ts[3])/q-1) - 100*(metric(ts[1])/p-1), true
	}, a, b, x, y)
	apart := m == more && first.Contrast.Measurable() && first.Contrast.Delta.Pct < 0
	r.add(KindFinding, TopicClients, StackLoss{Setting: setting, Items: items, Apart: apart, Diff: d})
}

// clientBound states, per stack, the cells where its client kept nearly
// all its share of cores busy.
func (r *rules) clientBound() {
	ix := r.ix
	for _, s := range ix.stacks {
		in := ix.stackInfo(s)
		f := ClientBound{Stack: s, Lo: math.Inf(1), Model: in.Model, Runtime: in.Runtime}
		for _, e := range ix.experiments {
			for _, k := range ix.cells(e) {
				if ix.stackOf(k.variant) != s {
					continue
				}
				if used, share := ix.clientLoad(k); used > clientBound*float64(share) {
					f.Cells = append(f.Cells, fmt.Sprintf("%s %s %s", e, k.variant, plan.Label(k.c)))
					f.Lo, f.Hi, f.Share = min(f.Lo, used), max(f.Hi, used), max(f.Share, share)
				}
			}
		}
		if len(f.Cells) > 0 {
			r.add(KindFinding, TopicClients, f)
		}
	}
}

// stackThreads states the threads study: each TLS variant from the lowest
// concurrency to the highest.
func (r *rules) stackThreads() {
	ix := r.ix
	cs := ix.conc[plan.Connect]
	if len(cs) < 2 || len(ix.stacks) < 2 {
		return
	}
	lo, hi := cs[0], cs[len(cs)-1]
	var f StackThreads
	tls, _ := ix.stackTLS(plan.Connect, lo)
	for _, n := range tls {
		if !ix.has(plan.Connect, hi, n) {
			continue
		}
		a, b := ix.trials[cellKey{plan.Connect, n, lo}], ix.trials[cellKey{plan.Connect, n, hi}]
		metric := ix.metric(plan.Connect)
		rm, _ := compareRounds(func(ts []result.Trial) (float64, bool) { return metric(ts[1]) - metric(ts[0]), true }, a, b)
		cm, cd := compareRounds(func(ts []result.Trial) (float64, bool) {
			x, okA := clientMS(ts[0])
			y, okB := clientMS(ts[1])
			return y - x, okA && okB
		}, a, b)
		f.Items = append(f.Items, StackScaling{Stack: ix.stackOf(n), Variant: n, Lo: lo, Hi: hi,
			RateLo: ix.meanRate(plan.Connect, n, lo), RateHi: ix.meanRate(plan.Connect, n, hi), Rate: rm,
			CPULo: stats.Summarize(trialValues(a, clientMS)).Mean, CPUHi: stats.Summarize(trialValues(b, clientMS)).Mean, CPU: cm, CPUDiff: cd})
	}
	if len(f.Items) >= 2 {
		r.add(KindFinding, TopicClients, f)
	}
}

// The words of the client stacks' facts.

// stackCPUWords: "On new connections (c=1), TLS 1.3 adds 2.05 ms ±0.11 of
// client CPU per psycopg connection, 1.61 ms ±0.09 per pgjdbc one and
// 1.12 ms ±0.06 per go one: psycopg's TLS costs its client 1.83× go's."
func stackCPUWords(f StackCPU) string {
	var parts []string
	for i, it := range f.Items {
		s := msWords(it.Added.Mean)
		if it.Added.N >= 2 {
			s += " ±" + ciWords(it.Added.Mean, it.Added.CI95)
		}
		if i == 0 {
			s += " of client CPU to each " + it.Stack + " connection"
		} else {
			s += " to each " + it.Stack + " one"
		}
		parts = append(parts, s)
	}
	dear, cheap := f.Items[0], f.Items[len(f.Items)-1]
	head := fmt.Sprintf("On new connections (connect %s), %s adds %s", plan.Label(f.Concurrency), f.Setting, listWords(parts))
	switch {
	case dear.Added.N < 2 || cheap.Added.N < 2 || f.Diff.N < 2:
		return head + ": one round, so no interval tells these apart; run --trials 3 or more before comparing the stacks."
	case f.Apart && finite(f.Ratio):
		return fmt.Sprintf("%s: %s's TLS handshake costs its client %s× what %s's does (%s of client CPU per TLS connection against %s).",
			head, dear.Stack, times(f.Ratio), cheap.Stack, msWords(dear.TLSMS), msWords(cheap.TLSMS))
	case f.Apart:
		return fmt.Sprintf("%s: %s's TLS costs its client measurably more than %s's.", head, dear.Stack, cheap.Stack)
	}
	return fmt.Sprintf("%s: %s's and %s's differ by %s ms ±%s round by round, an interval that holds 0: no stack measurably dearer here.",
		head, dear.Stack, cheap.Stack, num(f.Diff.Mean, millis), ciWords(f.Diff.Mean, f.Diff.CI95))
}

// ciWords is the half-width of an interval at the precision of its mean.
func ciWords(mean, ci float64) string { return fixed(ci, millis(mean)) }

// stackLossWords: "With TLS 1.3, psycopg loses the most connections per
// second to TLS against its own plain: 41.2% fewer (±3.1), against 30.5%
// fewer (±2.0) for pgjdbc and 22.1% fewer (±1.8) for go."
func (ix *index) stackLossWords(f StackLoss) string {
	item := func(it StackItem) string {
		s := ix.outcome(it.Contrast, "", true)
		if it.Contrast.Measurable() && finite(it.Contrast.Delta.CI95) {
			s += " (±" + num(it.Contrast.Delta.CI95, pct) + ")"
		}
		return s
	}
	noun, _ := ix.noun(plan.Connect)
	first, second := f.Items[0], f.Items[1]
	var rest []string
	for _, it := range f.Items[1:] {
		rest = append(rest, item(it)+" for "+it.Stack)
	}
	if f.Apart {
		return fmt.Sprintf("With %s, %s loses the most %s to TLS against its own plain: %s, against %s.", f.Setting, first.Stack, noun, item(first), listWords(rest))
	}
	s := fmt.Sprintf("With %s, against each stack's own plain: %s for %s, %s", f.Setting, item(first), first.Stack, listWords(rest))
	if f.Diff.N >= 2 {
		return s + fmt.Sprintf("; no stack measurably loses more %s to TLS than the next (%s and %s differ by %s ±%s points round by round, an interval that holds 0).",
			noun, first.Stack, second.Stack, num(f.Diff.Mean, pct), num(f.Diff.CI95, pct))
	}
	return s + "; one round cannot tell which loses more."
}

// clientBoundWords says a stack set the pace.
func clientBoundWords(f ClientBound) string {
	used := fmt.Sprintf("%.2f", f.Lo)
	if f.Hi-f.Lo >= 0.005 {
		used += fmt.Sprintf("-%.2f", f.Hi)
	}
	why := ""
	switch {
	case f.Model == "event-loop":
		why = " (one event loop runs on one core)"
	case f.Share == 1 && strings.HasPrefix(f.Runtime, "CPython") && f.Model == "threads":
		why = " (CPython's threads take turns on one interpreter lock)"
	}
	return fmt.Sprintf("The %s client kept %s of its %s busy%s in %s: there the figures are %s's own limit, not the server's; compare the stacks by their CPU per operation rather than their rates.",
		f.Stack, used, plural(f.Share, "core"), why, listWords(f.Cells), f.Stack)
}

// stackThreadsWords says the threads study, a clause per variant.
func stackThreadsWords(f StackThreads) string {
	var parts []string
	for _, it := range f.Items {
		rw := fmt.Sprintf("%s× the connections per second", times(it.RateHi/it.RateLo))
		if it.Rate == about {
			rw = fmt.Sprintf("no measurably different rate (%s against %s connections/s)", num(it.RateHi, rate), num(it.RateLo, rate))
		}
		var cpu string
		switch it.CPU {
		case more:
			cpu = fmt.Sprintf("its client CPU per connection rose %s, from %s to %s", pctWords(100*(it.CPUHi/it.CPULo-1)), msWords(it.CPULo), msWords(it.CPUHi))
		case less:
			cpu = fmt.Sprintf("its client CPU per connection fell %s, from %s to %s", pctWords(100*(1-it.CPUHi/it.CPULo)), msWords(it.CPULo), msWords(it.CPUHi))
		default:
			cpu = fmt.Sprintf("its client CPU per connection stayed about the same (%s, %s)", msWords(it.CPULo), msWords(it.CPUHi))
		}
		parts = append(parts, fmt.Sprintf("%s made %s and %s", it.Variant, rw, cpu))
	}
	it := f.Items[0]
	s := fmt.Sprintf("From %s to %s: %s.", plan.Label(it.Lo), plan.Label(it.Hi), strings.Join(parts, "; "))
	if slices.ContainsFunc(f.Items, func(it StackScaling) bool { return it.CPU == more }) {
		s += " CPU per connection that grows with concurrency is what contention inside a client stack (locks in its TLS library, its runtime) looks like; on 2 shared cores the server's share grows too, so compare the stacks with each other in this one run."
	}
	return s
}
