package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Kind tells what a Finding is.
type Kind string

// The kinds of findings.
const (
	// KindCaveat says what the run cannot tell: it stopped early, it has
	// nothing to compare, it has no plain baseline.
	KindCaveat Kind = "caveat"
	// KindFinding states a measured difference (or its absence).
	KindFinding Kind = "finding"
	// KindRecommendation is a change the findings support.
	KindRecommendation Kind = "recommendation"
)

// Finding is one sentence drawn from a result's figures.
type Finding struct {
	Kind Kind   `json:"kind"`
	Text string `json:"text"`
}

// Findings states in plain words what r's figures show: caveats first,
// then findings, then the recommendations that follow from them. A
// difference is a finding only when its 95% interval (trials paired by
// round) excludes 0; otherwise it is reported as no measurable difference,
// and it never leads to a recommendation.
func Findings(r *result.Result) []Finding { return newIndex(r).findingsList() }

func (ix *index) findingsList() []Finding {
	f := &finder{ix: ix}
	f.caveats()
	if len(f.ix.r.Trials) > 0 && f.comparable() {
		f.connect()
		f.hello()
		f.auth()
		f.versions()
		f.keys()
		f.resumption()
		f.tunnels()
		f.persistent()
		f.rtt()
		f.pooling()
	}
	f.ceilings()
	f.crypto()
	var out []Finding
	for _, k := range []Kind{KindCaveat, KindFinding, KindRecommendation} {
		for _, x := range f.out {
			if x.Kind == k {
				out = append(out, x)
			}
		}
	}
	return out
}

// writeFindings writes the findings section of the text report: caveats
// and findings, then recommendations, wrapped for a terminal.
func writeFindings(b *strings.Builder, fs []Finding) {
	b.WriteString("findings (a difference whose 95% interval includes 0 counts as none)\n")
	head := false
	for _, x := range fs {
		if x.Kind == KindRecommendation && !head {
			b.WriteString("recommendations\n")
			head = true
		}
		wrap(b, x.Text, textWidth, "- ", "  ")
	}
}

// textWidth is where the text report wraps sentences.
const textWidth = 100

// wrap writes text in lines of at most width runes (longer words stand
// alone), the first starting with first, the others with rest.
func wrap(b *strings.Builder, text string, width int, first, rest string) {
	line, n := first, utf8.RuneCountInString(first)
	empty := true
	// A figure and its unit stay on one line: "2.45 ms" is one word here.
	var tokens []string
	for _, w := range strings.Fields(text) {
		if k := len(tokens) - 1; k >= 0 && isUnit(w) && strings.ContainsAny(tokens[k][len(tokens[k])-1:], "0123456789") {
			tokens[k] += " " + w
			continue
		}
		tokens = append(tokens, w)
	}
	for _, w := range tokens {
		wn := utf8.RuneCountInString(w)
		if !empty && n+1+wn > width {
			b.WriteString(line + "\n")
			line, n, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			line += " "
			n++
		}
		line += w
		n += wn
		empty = false
	}
	b.WriteString(line + "\n")
}

// isUnit reports whether a word is a unit that follows a figure.
func isUnit(w string) bool {
	for _, u := range []string{"ms", "MB/s", "µs"} {
		if rest, ok := strings.CutPrefix(w, u); ok && strings.Trim(rest, ".,;:)") == "" {
			return true
		}
	}
	return false
}

// finder collects findings, and what later ones refer to.
type finder struct {
	ix  *index
	out []Finding
	// cost is the headline TLS cost of a new connection (the cheapest
	// full handshake that differs measurably from plain), if any.
	cost *contrast
	// dearest is the costliest such handshake.
	dearest *contrast
	// tunnelled is set when the run measured connections through a tunnel.
	tunnelled bool
}

func (f *finder) add(k Kind, format string, args ...any) {
	f.out = append(f.out, Finding{Kind: k, Text: fmt.Sprintf(format, args...)})
}

// measured lists the variants with trials in experiment e, in result order.
func (f *finder) measured(e plan.Experiment) []string {
	var out []string
	for _, name := range f.ix.variants {
		for _, c := range f.ix.conc[e] {
			if len(f.ix.trials[cellKey{e, name, c}]) > 0 {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// all lists the variants with trials in any experiment.
func (f *finder) all() []string {
	var out []string
	for _, name := range f.ix.variants {
		for _, e := range f.ix.experiments {
			if slices.Contains(f.measured(e), name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// comparable reports whether the run measured two variants or more.
func (f *finder) comparable() bool { return len(f.all()) > 1 }

func (f *finder) caveats() {
	r := f.ix.r
	switch {
	case len(r.Trials) == 0 && len(r.Crypto) == 0 && len(r.Ceilings) == 0:
		f.add(KindCaveat, "No trial finished: there is nothing to conclude from this run.")
		return
	case len(r.Trials) == 0:
		return
	}
	if r.Interrupted {
		want := len(r.Spec.Experiments) * len(r.Variants) * len(r.Spec.Concurrency) * r.Spec.Trials
		if want > 0 {
			f.add(KindCaveat, "The run was interrupted after %d of %d trials: what follows rests on the trials that finished.", len(r.Trials), want)
		} else {
			f.add(KindCaveat, "The run was interrupted after %s: what follows rests on the trials that finished.", plural(len(r.Trials), "trial"))
		}
	}
	if r.Error != "" {
		f.add(KindCaveat, "The run stopped on an error after %s (%s): what follows rests on the trials that finished.", plural(len(r.Trials), "trial"), r.Error)
	}
	names := f.all()
	if len(names) == 1 {
		f.add(KindCaveat, "Only one variant was measured (%s): there is nothing to compare it with, so this run says nothing about what TLS costs and supports no recommendation.", names[0])
		return
	}
	plain := slices.ContainsFunc(names, func(n string) bool {
		info, ok := f.ix.info[n]
		return ok && direct(info)
	})
	if !plain {
		f.add(KindCaveat, "No plain variant was measured: what TLS itself costs cannot be told from this run; the variants are compared with each other.")
	}
}

// contrast is one variant against another in one experiment and
// concurrency, their trials paired by round.
type contrast struct {
	e        plan.Experiment
	from, to string
	c        int
	// d is the change of the experiment's main figure (connections/s,
	// queries/s, MB/s), to against from.
	d stats.Delta
	// ms is the change of the mean operation latency; rt and local that of
	// the setup round trips and setup time (connect); client and server
	// that of the CPU per operation, ms. NaN where unknown.
	ms, rt, local  float64
	client, server float64
}

// measurable reports whether the change's 95% interval excludes 0.
func (c contrast) measurable() bool { return c.d.N >= 2 && c.d.Significant }

func (ix *index) contrast(e plan.Experiment, from, to string, c int) contrast {
	a, b := ix.trials[cellKey{e, from, c}], ix.trials[cellKey{e, to, c}]
	out := contrast{e: e, from: from, to: to, c: c, ms: math.NaN(), rt: math.NaN(), local: math.NaN(), client: math.NaN(), server: math.NaN()}
	metric := ix.metric(e)
	base := map[int]float64{}
	for _, t := range a {
		base[t.Round] = metric(t)
	}
	var xs, ys []float64
	for _, t := range b {
		if x, ok := base[t.Round]; ok {
			xs, ys = append(xs, x), append(ys, metric(t))
		}
	}
	out.d = stats.Paired(xs, ys)
	meanLat := func(ts []result.Trial) float64 {
		return stats.Summarize(collect(withLatency(ts), func(t result.Trial) float64 { return t.Latency.Mean })).Mean
	}
	out.ms = meanLat(b) - meanLat(a)
	if sa, sb := setupOf(a), setupOf(b); sa.ok && sb.ok {
		out.rt, out.local = sb.rt-sa.rt, sb.ms-sa.ms
	}
	out.client = cpuMS(b, func(t result.Trial) time.Duration { return t.ClientCPU }) - cpuMS(a, func(t result.Trial) time.Duration { return t.ClientCPU })
	out.server = cpuMS(b, func(t result.Trial) time.Duration { return t.ServerCPU }) - cpuMS(a, func(t result.Trial) time.Duration { return t.ServerCPU })
	return out
}

// cpuMS is the CPU per operation over trials, ms; NaN when none was recorded.
func cpuMS(ts []result.Trial, f func(result.Trial) time.Duration) float64 {
	var ops int64
	var cpu time.Duration
	for _, t := range ts {
		ops += t.Ops
		cpu += f(t)
	}
	if ops <= 0 || cpu <= 0 {
		return math.NaN()
	}
	return cpu.Seconds() * 1000 / float64(ops)
}

// sibling is the variant measured like name but for what change changes
// ("" when the run has none).
func (ix *index) sibling(name string, change func(*plan.Variant)) string {
	info, ok := ix.info[name]
	if !ok {
		return ""
	}
	want := info
	change(&want)
	want.ID, want.Baseline = "", false
	for _, n := range ix.variants {
		o, ok := ix.info[n]
		if !ok || n == name {
			continue
		}
		o.ID, o.Baseline = "", false
		if o == want {
			return n
		}
	}
	return ""
}

// plainOf is the direct plain variant measured like a TLS or tunnelled one.
func (ix *index) plainOf(name string) string {
	return ix.sibling(name, func(p *plan.Variant) { p.TLS, p.Cipher, p.Resume, p.Key, p.Via = "off", "", false, "", "" })
}

// direct reports whether a variant is plain and untunnelled: the baseline
// kind, drawn in plain's grey.
func direct(info plan.Variant) bool { return info.Plain() && info.Via == "" }

// lowest is the lowest concurrency of e: one connection at a time where the
// run has it, where a connection waits for no other.
func (ix *index) lowest(e plan.Experiment) (int, bool) {
	cs := ix.conc[e]
	if len(cs) == 0 {
		return 0, false
	}
	return cs[0], true
}

// has reports whether both variants have trials in e at c.
func (ix *index) has(e plan.Experiment, c int, names ...string) bool {
	for _, n := range names {
		if len(ix.trials[cellKey{e, n, c}]) == 0 {
			return false
		}
	}
	return true
}

// concWords names a concurrency in a sentence when e has several.
func (ix *index) concWords(e plan.Experiment, c int) string {
	if len(ix.conc[e]) < 2 {
		return ""
	}
	return "At " + plan.Label(c) + ", "
}

// noun names an experiment's main figure in a sentence; count tells
// "more/fewer" (connections) from "higher/lower" (throughput).
func (ix *index) noun(e plan.Experiment) (noun string, count bool) {
	switch ix.metricName(e) {
	case "connections/s":
		return "connections per second", true
	case "queries/s":
		return "queries per second", true
	case "MB/s":
		return "throughput (MB/s)", false
	}
	return "requests per second", true
}

// change says a measurable change in words: "91% fewer connections per
// second", "2.1× the connections per second"; of names what it is
// compared with, if anything. Short leaves the figure's name out, for the
// items of a list after the first: "91% fewer", "2.1×".
func (ix *index) change(e plan.Experiment, d stats.Delta, of string, short bool) string {
	noun, count := ix.noun(e)
	more, fewer := "more", "fewer"
	if !count {
		more, fewer = "higher", "lower"
	}
	var s string
	switch {
	case d.Pct >= 100:
		s = fmt.Sprintf("%.1f×", 1+d.Pct/100)
		if !short {
			s += " the " + noun
			if of != "" {
				s += " of " + of
			}
		}
		return s
	case d.Pct >= 0:
		s = pctWords(d.Pct) + " " + more
	default:
		s = pctWords(-d.Pct) + " " + fewer
	}
	if !short {
		s += " " + noun
		if of != "" {
			s += " than " + of
		}
	}
	return s
}

// outcome is a change in words whether or not it is measurable.
func (ix *index) outcome(c contrast, of string, short bool) string {
	if c.measurable() {
		return ix.change(c.e, c.d, of, short)
	}
	return ix.none(c, short)
}

// none says that a change is not measurable, and why.
func (ix *index) none(c contrast, short bool) string {
	s := "no measurable difference"
	if !short {
		noun, _ := ix.noun(c.e)
		s += " in " + noun
	}
	switch c.d.N {
	case 0:
		return s + " (no pair of trials to compare)"
	case 1:
		return s + " (one trial each: no interval)"
	}
	return fmt.Sprintf("%s (%s)", s, strings.TrimSpace(delta(c.d)))
}

func pctWords(p float64) string {
	if p >= 10 {
		return fmt.Sprintf("%.0f%%", p)
	}
	return fmt.Sprintf("%.1f%%", p)
}

// msWords renders a duration in ms for a sentence.
func msWords(ms float64) string { return num(ms, millis) + " ms" }

// rtWords says a change of round trips: "1 more round trip", "no extra round trip".
func rtWords(d float64, more, less string) string {
	switch {
	case math.IsNaN(d):
		return ""
	case math.Abs(d) < 0.05:
		return "no extra round trip"
	case d > 0:
		return words(roundRT(d), more, "round trip")
	}
	return words(roundRT(-d), less, "round trip")
}

// words is "1 more round trip", "2 fewer round trips", "1.50 more round trips".
func words(n float64, adj, noun string) string {
	s := pluralFloat(n, noun)
	i := strings.Index(s, " ")
	return s[:i] + " " + adj + s[i:]
}

// roundRT keeps a whole number of round trips whole despite float sums.
func roundRT(x float64) float64 {
	if math.Abs(x-math.Round(x)) < 0.05 {
		return math.Round(x)
	}
	return math.Round(x*100) / 100
}

// cpuWords says the change of CPU per connection on both sides.
func cpuWords(c contrast) string {
	side := func(x float64, who string) string {
		if math.IsNaN(x) {
			return ""
		}
		if x < 0 {
			return msWords(-x) + " less " + who + " CPU"
		}
		return msWords(x) + " more " + who + " CPU"
	}
	parts := slices.DeleteFunc([]string{side(c.client, "client"), side(c.server, "server")}, func(s string) bool { return s == "" })
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " and ") + " per connection"
}

// fullTLS lists the TLS variants of e that make full handshakes, at any RTT.
func (f *finder) fullTLS(e plan.Experiment) []string {
	var out []string
	for _, n := range f.measured(e) {
		if info, ok := f.ix.info[n]; ok && !info.Plain() && !info.Resume {
			out = append(out, n)
		}
	}
	return out
}

// connect states what a new TLS connection costs against a plain one on
// the bare link: the dearest and the cheapest full handshake measured.
func (f *finder) connect() {
	v := f.ix
	c, ok := v.lowest(plan.Connect)
	if !ok {
		return
	}
	var cs []contrast
	for _, n := range f.fullTLS(plan.Connect) {
		p := v.plainOf(n)
		if v.info[n].RTT != 0 || p == "" || !v.has(plan.Connect, c, n, p) {
			continue
		}
		cs = append(cs, v.contrast(plan.Connect, p, n, c))
	}
	if len(cs) == 0 {
		return
	}
	var sig, none []contrast
	for _, x := range cs {
		if x.measurable() {
			sig = append(sig, x)
		} else {
			none = append(none, x)
		}
	}
	switch {
	case len(none) == 1:
		x := none[0]
		f.add(KindFinding, "%sa new connection with %s and one with %s: %s.", capFirst(v.concWords(plan.Connect, c)), x.to, x.from, v.none(x, false))
	case len(none) > 1:
		var names []string
		for _, x := range none {
			names = append(names, x.to)
		}
		noun, _ := v.noun(plan.Connect)
		f.add(KindFinding, "%snew connections with %s: no measurable difference in %s from plain (no 95%% interval excludes 0).", capFirst(v.concWords(plan.Connect, c)), listWords(names), noun)
	}
	if len(sig) == 0 {
		return
	}
	byMS := func(a, b contrast) int { return cmp.Compare(a.ms, b.ms) }
	cheap, dear := slices.MinFunc(sig, byMS), slices.MaxFunc(sig, byMS)
	f.cost, f.dearest = &cheap, &dear
	say := func(x contrast) string {
		parts := slices.DeleteFunc([]string{rtWords(x.rt, "more", "fewer"), cpuWords(x)}, func(s string) bool { return s == "" })
		detail := ""
		if len(parts) > 0 {
			detail = " (" + strings.Join(parts, "; ") + ")"
		}
		return fmt.Sprintf("costs %s more with %s than %s%s: %s", msWords(x.ms), x.to, x.from, detail, v.change(plan.Connect, x.d, "", false))
	}
	f.add(KindFinding, "%s.", capFirst(v.concWords(plan.Connect, c)+"a new connection "+say(dear)))
	if cheap.to != dear.to {
		f.add(KindFinding, "The cheapest TLS variant measured, %s, %s.", cheap.to, strings.Replace(say(cheap), " with "+cheap.to, "", 1))
	}
	// What else a connection spends its time on puts TLS's cost in proportion.
	plain := cheap.from
	ts := withLatency(v.trials[cellKey{plan.Connect, plain, c}])
	var names []string
	for _, t := range ts {
		names = mergeOrder(names, t.Phases)
	}
	total := stats.Summarize(collect(ts, func(t result.Trial) float64 { return t.Latency.Mean })).Mean
	best, bestMS := "", 0.0
	for _, p := range names {
		if strings.HasPrefix(p, "tls") || p == "tunnel" {
			continue
		}
		if ms := phaseMean(ts, p); ms > bestMS {
			best, bestMS = p, ms
		}
	}
	if best != "" && bestMS > cheap.ms {
		f.add(KindFinding, "%s takes %s of a %s connection's %s, more than TLS adds with %s (%s): TLS is not the largest cost of a new connection here.",
			capFirst(phaseWords(best)), msWords(bestMS), plain, msWords(total), cheap.to, msWords(cheap.ms))
	}
}

// phaseMean is a phase's mean latency over trials, ms (NaN if none has it).
func phaseMean(ts []result.Trial, name string) float64 {
	var ms []float64
	for _, t := range ts {
		for _, p := range t.Phases {
			if p.Name == name && p.Latency.Count > 0 {
				ms = append(ms, p.Latency.Mean)
			}
		}
	}
	return stats.Summarize(ms).Mean
}

// phaseWords names a phase in a sentence.
func phaseWords(p string) string {
	switch p {
	case "tcp":
		return "the TCP connect"
	case "tls-negotiation":
		return "the TLS negotiation"
	case "tls-handshake":
		return "the TLS handshake"
	case "auth":
		return "authentication"
	case "query":
		return "the first query"
	case "request":
		return "the request"
	case "response":
		return "the response"
	case "close":
		return "closing"
	case "greeting":
		return "the server greeting"
	case "tunnel":
		return "opening the tunnel's channel"
	}
	return "the " + p + " phase"
}

func capFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// hello reports HelloRetryRequests: a server that wants another key share
// than the client's first costs TLS 1.3 a second round trip.
func (f *finder) hello() {
	v := f.ix
	var names, groups []string
	for _, n := range f.all() {
		for _, t := range v.r.Trials {
			if t.Variant == n && t.Negotiated != nil && t.Negotiated.HelloRetry {
				names = append(names, n)
				if g := groupWords(t.Negotiated.Group); !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
				break
			}
		}
	}
	if len(names) == 0 {
		return
	}
	rt := math.NaN()
	if c, ok := v.lowest(plan.Connect); ok {
		var rts []float64
		for _, n := range names {
			for _, t := range v.trials[cellKey{plan.Connect, n, c}] {
				for _, p := range t.Phases {
					if p.Name == "tls-handshake" && p.Latency.Count > 0 {
						rts = append(rts, p.RoundTrips.Mean)
					}
				}
			}
		}
		rt = stats.Summarize(rts).Mean
	}
	group := strings.Join(groups, " or ")
	took := ""
	if !math.IsNaN(rt) {
		took = fmt.Sprintf(": the TLS handshake took %s", pluralFloat(roundRT(rt), "round trip"))
	}
	who := listWords(names)
	if all := slices.DeleteFunc(f.all(), func(n string) bool { return f.ix.info[n].TLS != "1.3" }); len(all) == len(names) && len(names) > 1 {
		who = "every TLS 1.3 variant"
	}
	f.add(KindFinding, "The server answered the TLS 1.3 hello of %s with a HelloRetryRequest for %s%s, one more than TLS 1.3 needs.", who, group, took)
	f.add(KindRecommendation, "Have clients offer %s as their first key share, or let the server accept theirs: it saves every new TLS 1.3 connection a round trip.", group)
}

func groupWords(g string) string {
	if rest, ok := strings.CutPrefix(g, "CurveP"); ok {
		return "P-" + rest
	}
	return g
}

// listWords joins names as a sentence does: "a", "a and b", "a, b and c".
func listWords(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// contextWords describes a variant by all but one of its fields, for the
// pairs of a comparison along that field: "with rsa2048 at 20ms RTT".
func contextWords(info plan.Variant, omit string) string {
	var parts []string
	if omit != "tls" {
		switch info.TLS {
		case "off":
			parts = append(parts, "without TLS")
		case "auto":
			parts = append(parts, "with TLS")
		default:
			parts = append(parts, "with TLS "+info.TLS)
		}
	}
	with := func(s string) {
		if len(parts) == 0 {
			parts = append(parts, "with "+s)
		} else {
			parts = append(parts, s)
		}
	}
	if omit != "key" && info.Key != "" {
		with(info.Key)
	}
	if omit != "tls" && info.Cipher != "" {
		with(strings.TrimPrefix(info.Cipher, "TLS_"))
	}
	if omit != "resume" && info.Resume {
		with("resumption")
	}
	if omit != "auth" && info.Auth != "" {
		with(info.Auth + " auth")
	}
	s := strings.Join(parts, " ")
	if info.RTT != 0 {
		s = strings.TrimSpace(s + " at " + plan.RTTLabel(info.RTT) + " RTT")
	}
	return s
}

// pair is a contrast along one field and the context it was taken in.
type pair struct {
	contrast
	context string
}

// pairs contrasts, at the lowest connect concurrency, every measured
// variant that from selects with its sibling along change.
func (f *finder) pairs(from func(plan.Variant) bool, change func(*plan.Variant), omit string) []pair {
	v := f.ix
	c, ok := v.lowest(plan.Connect)
	if !ok {
		return nil
	}
	var out []pair
	for _, n := range f.measured(plan.Connect) {
		info, ok := v.info[n]
		if !ok || !from(info) {
			continue
		}
		to := v.sibling(n, change)
		if to == "" || !v.has(plan.Connect, c, n, to) {
			continue
		}
		out = append(out, pair{v.contrast(plan.Connect, n, to, c), contextWords(info, omit)})
	}
	return out
}

// effects lists the outcomes of pairs: "19% fewer connections per second
// with rsa2048, no measurable difference with ecdsa-p256".
func (f *finder) effects(ps []pair) string {
	var parts []string
	for i, p := range ps {
		s := f.ix.outcome(p.contrast, "", i > 0)
		if p.context != "" {
			s += " " + p.context
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// versions compares TLS 1.3 with TLS 1.2: the round trip it saves against
// the local time it costs, and where that comes out even.
func (f *finder) versions() {
	ps := f.pairs(func(p plan.Variant) bool { return p.TLS == "1.2" && !p.Resume },
		func(p *plan.Variant) { p.TLS, p.Cipher = "1.3", "" }, "tls")
	if len(ps) == 0 {
		return
	}
	saved := math.Inf(1)
	worse, better := false, false
	evenAt, localMore := 0.0, 0.0
	for _, p := range ps {
		if math.IsNaN(p.rt) {
			saved = math.NaN()
			break
		}
		saved = min(saved, -p.rt)
		if p.measurable() {
			worse = worse || p.d.Pct < 0
			better = better || p.d.Pct > 0
		}
		if p.rt < -0.5 && p.local > 0 && p.to != "" && f.ix.info[p.to].RTT == 0 {
			evenAt = max(evenAt, p.local/-p.rt)
			localMore = max(localMore, p.local)
		}
	}
	saved = roundRT(saved)
	var b strings.Builder
	if saved >= 1 {
		fmt.Fprintf(&b, "TLS 1.3 instead of 1.2 takes %s fewer per new connection", pluralFloat(saved, "round trip"))
	} else {
		b.WriteString("TLS 1.3 instead of 1.2 saved no round trip here")
	}
	fmt.Fprintf(&b, ": %s", f.effects(ps))
	if saved >= 1 && evenAt > 0 {
		fmt.Fprintf(&b, "; it took up to %s more local time, which the round trip it saves repays wherever the RTT between client and server exceeds %s", msWords(localMore), msWords(evenAt))
	}
	if rtts := PredictRTTs(f.ix.r); saved >= 1 && len(rtts) > 0 {
		rtt := rtts[len(rtts)-1]
		save := saved*float64(rtt)/float64(time.Millisecond) - localMore
		fmt.Fprintf(&b, " (at %s it saves ≈ %s per connection)", plan.RTTLabel(rtt), msWords(save))
	}
	f.add(KindFinding, "%s.", b.String())
	switch {
	case saved >= 1 && !worse:
		f.add(KindRecommendation, "Prefer TLS 1.3 to TLS 1.2: it saves %s per new connection and was not measurably slower here.", pluralFloat(saved, "round trip"))
	case saved >= 1 && evenAt > 0:
		f.add(KindRecommendation, "Prefer TLS 1.3 to TLS 1.2 wherever the round trip between client and server exceeds %s: the round trip it saves outweighs the local time it costs beyond that.", msWords(evenAt))
	case better && !worse:
		f.add(KindRecommendation, "Prefer TLS 1.3 to TLS 1.2: it made more connections per second here.")
	}
}

// weakKeys are keys measured for comparison that no one should deploy.
var weakKeys = map[string]string{"rsa1024": "1024-bit RSA"}

// keys compares server keys within each TLS setting, against rsa2048 (the
// common default) or the first key measured.
func (f *finder) keys() {
	v := f.ix
	c, ok := v.lowest(plan.Connect)
	if !ok {
		return
	}
	// Contexts: full-handshake TLS settings, each with the keys measured.
	type group struct {
		info plan.Variant // Key cleared
		keys map[string]string
	}
	var groups []*group
	var order []string
	for _, n := range f.fullTLS(plan.Connect) {
		info := v.info[n]
		if info.Key == "" || !v.has(plan.Connect, c, n) {
			continue
		}
		if !slices.Contains(order, info.Key) {
			order = append(order, info.Key)
		}
		k := info
		k.ID, k.Baseline, k.Key = "", false, ""
		i := slices.IndexFunc(groups, func(g *group) bool { return g.info == k })
		if i < 0 {
			groups = append(groups, &group{info: k, keys: map[string]string{}})
			i = len(groups) - 1
		}
		groups[i].keys[info.Key] = n
	}
	if len(order) < 2 {
		return
	}
	ref := order[0]
	if slices.Contains(order, "rsa2048") {
		ref = "rsa2048"
	}
	for _, key := range order {
		if key == ref {
			continue
		}
		var ps []pair
		cpu := ""
		for _, g := range groups {
			a, b := g.keys[ref], g.keys[key]
			if a == "" || b == "" {
				continue
			}
			x := v.contrast(plan.Connect, a, b, c)
			ps = append(ps, pair{x, contextWords(g.info, "key")})
			if cpu == "" {
				sa := cpuMS(v.trials[cellKey{plan.Connect, a, c}], func(t result.Trial) time.Duration { return t.ServerCPU })
				sb := cpuMS(v.trials[cellKey{plan.Connect, b, c}], func(t result.Trial) time.Duration { return t.ServerCPU })
				if !math.IsNaN(sa) && !math.IsNaN(sb) {
					cpu = fmt.Sprintf(" (server CPU per connection %s against %s, %s)", msWords(sb), msWords(sa), contextWords(g.info, "key"))
				}
			}
		}
		if len(ps) == 0 {
			continue
		}
		f.add(KindFinding, "Server key %s instead of %s: %s%s.", key, ref, f.effects(ps), cpu)
	}
	// Recommend the fastest key one may deploy over the slowest, where the
	// difference is measurable.
	type keyRec struct {
		best, worst string
		size        float64 // |change| in percent
		why         string
	}
	var keyRecs []keyRec
	for _, g := range groups {
		var keys []string
		for _, k := range order {
			if g.keys[k] != "" {
				keys = append(keys, k)
			}
		}
		rateOf := func(k string) float64 {
			return stats.Summarize(collect(v.trials[cellKey{plan.Connect, g.keys[k], c}], v.metric(plan.Connect))).Mean
		}
		byRate := func(a, b string) int { return cmp.Compare(rateOf(a), rateOf(b)) }
		fastest := slices.MaxFunc(keys, byRate)
		usable := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return weakKeys[k] != "" })
		if len(usable) < 2 {
			continue
		}
		best, worst := slices.MaxFunc(usable, byRate), slices.MinFunc(usable, byRate)
		if weak := weakKeys[fastest]; weak != "" {
			if x := v.contrast(plan.Connect, g.keys[best], g.keys[fastest], c); x.measurable() {
				f.add(KindFinding, "%s made the most connections per second %s, but %s keys are too weak to deploy: that is no reason to use them.", fastest, contextWords(g.info, "key"), weak)
			}
		}
		// Paired ratios are not symmetric: try the slower key against the
		// faster one first (as the findings do), then the other way.
		ctx := strings.TrimPrefix(contextWords(g.info, "key"), "with ")
		if x := v.contrast(plan.Connect, g.keys[best], g.keys[worst], c); x.measurable() {
			keyRecs = append(keyRecs, keyRec{best, worst, math.Abs(x.d.Pct), fmt.Sprintf("%s made %s here (%s)", worst, v.change(plan.Connect, x.d, best, false), ctx)})
		} else if x := v.contrast(plan.Connect, g.keys[worst], g.keys[best], c); x.measurable() {
			keyRecs = append(keyRecs, keyRec{best, worst, math.Abs(x.d.Pct), fmt.Sprintf("%s here (%s)", v.change(plan.Connect, x.d, worst, false), ctx)})
		}
	}
	// One recommendation per pair of keys: where the difference was largest.
	for i, r := range keyRecs {
		if slices.ContainsFunc(keyRecs[:i], func(o keyRec) bool { return o.best == r.best && o.worst == r.worst }) {
			continue
		}
		for _, o := range keyRecs[i+1:] {
			if o.best == r.best && o.worst == r.worst && o.size > r.size {
				r = o
			}
		}
		f.add(KindRecommendation, "Use %s server keys rather than %s: %s.", r.best, r.worst, r.why)
		break
	}
}

// resumption compares resumed sessions with full handshakes, and says when
// the server refused to resume.
func (f *finder) resumption() {
	v := f.ix
	ps := f.pairs(func(p plan.Variant) bool { return !p.Plain() && !p.Resume },
		func(p *plan.Variant) { p.Resume = true }, "resume")
	var ok []pair
	var refused []string
	for _, p := range ps {
		var resumed, conns int64
		for _, t := range v.trials[cellKey{plan.Connect, p.to, p.c}] {
			resumed, conns = resumed+t.Resumed, conns+t.Conns
		}
		switch {
		case conns == 0:
		case resumed*2 < conns:
			refused = append(refused, fmt.Sprintf("%s: %s resumed", p.to, percent(resumed, conns)))
		case resumed*10 >= conns*9:
			ok = append(ok, p)
		}
	}
	if len(refused) > 0 {
		f.add(KindFinding, "The server did not resume TLS sessions (%s): those variants measured full handshakes, and resumption cannot help with this server as configured.", strings.Join(refused, "; "))
	}
	if len(ok) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Resuming TLS sessions instead of full handshakes: %s", f.effects(ok))
	saves := false
	for _, p := range ok {
		saves = saves || p.rt < -0.5
	}
	if saves {
		b.WriteString("; a resumed TLS 1.2 handshake takes a round trip fewer")
	}
	f.add(KindFinding, "%s.", b.String())
	best := slices.MaxFunc(ok, func(a, b pair) int { return cmp.Compare(a.d.Pct, b.d.Pct) })
	if best.measurable() && best.d.Pct > 0 {
		f.add(KindRecommendation, "Let clients resume TLS sessions and keep session tickets or a session cache enabled on the server: resumption made up to %s here.", v.change(plan.Connect, best.d, "a full handshake", false))
	}
}

// auth compares authentication methods, with and without TLS.
func (f *finder) auth() {
	v := f.ix
	c, ok := v.lowest(plan.Connect)
	if !ok || len(v.r.Spec.Auth) < 2 {
		return
	}
	ref := v.r.Spec.Auth[0]
	for _, method := range v.r.Spec.Auth[1:] {
		ps := f.pairs(func(p plan.Variant) bool { return p.Auth == ref && !p.Resume },
			func(p *plan.Variant) { p.Auth = method }, "auth")
		if len(ps) == 0 {
			continue
		}
		var parts []string
		var extra float64
		for _, p := range ps {
			a := phaseMean(v.trials[cellKey{plan.Connect, p.from, c}], "auth")
			b := phaseMean(v.trials[cellKey{plan.Connect, p.to, c}], "auth")
			s := p.context + ", " + v.outcome(p.contrast, "", false)
			if !math.IsNaN(a) && !math.IsNaN(b) {
				s = fmt.Sprintf("%s it takes %s instead of %s: %s", p.context, msWords(b), msWords(a), v.outcome(p.contrast, "", false))
				extra = max(extra, b-a)
			}
			parts = append(parts, s)
		}
		text := fmt.Sprintf("Authentication with %s instead of %s: %s", method, ref, strings.Join(parts, "; "))
		if f.cost != nil && extra > f.cost.ms {
			text += fmt.Sprintf(": it costs a new connection more than TLS does (%s with %s)", msWords(f.cost.ms), f.cost.to)
		}
		f.add(KindFinding, "%s.", capFirst(text))
	}
}

// tunnels states what a new connection costs through each tunnel measured,
// against plain and against the cheapest TLS handshake at the same RTT,
// and recommends a tunnel that beats TLS on new connections.
func (f *finder) tunnels() {
	v := f.ix
	c, ok := v.lowest(plan.Connect)
	if !ok {
		return
	}
	for _, n := range f.measured(plan.Connect) {
		info, ok := v.info[n]
		if !ok || info.Via == "" || !v.has(plan.Connect, c, n) {
			continue
		}
		f.tunnelled = true
		var parts []string
		if p := v.plainOf(n); p != "" && v.has(plan.Connect, c, p) {
			x := v.contrast(plan.Connect, p, n, c)
			if x.measurable() {
				parts = append(parts, fmt.Sprintf("a new connection costs %s more than plain (%s): %s", msWords(x.ms), rtWords(x.rt, "more", "fewer"), v.change(plan.Connect, x.d, "", false)))
			} else {
				parts = append(parts, "against plain, "+v.none(x, false))
			}
		}
		// The TLS handshake to beat: the same key (stunnel's certificate)
		// if measured, else the fastest full handshake, at the same RTT.
		best, bestRate := "", 0.0
		for _, t := range f.fullTLS(plan.Connect) {
			ti := v.info[t]
			if ti.RTT != info.RTT || ti.Auth != info.Auth || ti.Via != "" || !v.has(plan.Connect, c, t) {
				continue
			}
			m := stats.Summarize(collect(v.trials[cellKey{plan.Connect, t, c}], v.metric(plan.Connect))).Mean
			if info.Key != "" && ti.Key == info.Key {
				m = math.Inf(1)
			}
			if m > bestRate {
				best, bestRate = t, m
			}
		}
		if best != "" {
			y := v.contrast(plan.Connect, best, n, c)
			parts = append(parts, "against "+best+", "+v.outcome(y, "", false))
			if y.measurable() && y.d.Pct > 0 {
				f.add(KindRecommendation, "Where connections cannot be pooled, carry them through a long-lived tunnel (%s): it made %s here, since a database connection through it does not pay a full TLS handshake of its own (a channel open, or a resumed handshake between stunnels).", n, v.change(plan.Connect, y.d, best, false))
			}
		}
		if len(parts) == 0 {
			continue
		}
		setup := ""
		for _, t := range v.r.Tunnels {
			if t.Via != info.Via || t.RTT != info.RTT || len(t.Setup) == 0 {
				continue
			}
			var d time.Duration
			for _, p := range t.Setup {
				d += p.Duration
			}
			setup = fmt.Sprintf(" (the tunnel itself was set up once, in %s)", msWords(float64(d)/float64(time.Millisecond)))
		}
		f.add(KindFinding, "%s.", capFirst(fmt.Sprintf("%sthrough %s, %s%s", v.concWords(plan.Connect, c), n, strings.Join(parts, "; "), setup)))
	}
}

// persistent states what TLS costs on connections that stay open (pool,
// stream), at every concurrency: one range when every TLS variant differs
// from plain the same way at every concurrency, else variant by variant.
func (f *finder) persistent() {
	v := f.ix
	for _, e := range v.experiments {
		if e == plan.Connect || e == plan.NewClient {
			continue
		}
		setting := "On persistent connections (" + string(e) + ")"
		if e == plan.Stream {
			setting = "Reading a large result (stream)"
		}
		type row struct {
			name string
			xs   []contrast
		}
		var rows []row
		protection := "TLS"
		for _, n := range f.measured(e) {
			info, ok := v.info[n]
			p := v.plainOf(n)
			if !ok || direct(info) || p == "" {
				continue
			}
			if info.Via != "" {
				protection = "encryption"
			}
			r := row{name: n}
			for _, c := range v.conc[e] {
				if v.has(e, c, n, p) {
					r.xs = append(r.xs, v.contrast(e, p, n, c))
				}
			}
			if len(r.xs) > 0 {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		// The same verdict everywhere reads as one sentence.
		var names []string
		lo, hi := math.Inf(1), math.Inf(-1)
		same := true
		for _, r := range rows {
			names = append(names, r.name)
			for _, x := range r.xs {
				same = same && x.measurable() == rows[0].xs[0].measurable() && (!x.measurable() || (x.d.Pct < 0) == (rows[0].xs[0].d.Pct < 0))
				lo, hi = min(lo, x.d.Pct), max(hi, x.d.Pct)
			}
		}
		noun, _ := v.noun(e)
		where := fmt.Sprintf("%s against plain at %s", listWords(names), listWords(concLabels(v.conc[e])))
		switch {
		case same && !rows[0].xs[0].measurable():
			f.add(KindFinding, "%s, %s made no measurable difference in %s (%s: no 95%% interval excludes 0).", setting, protection, noun, where)
			continue
		case same && len(rows)*len(v.conc[e]) > 1:
			a, b := v.change(e, stats.Delta{Pct: lo}, "", true), v.change(e, stats.Delta{Pct: hi}, "", false)
			if lo < 0 {
				a, b = v.change(e, stats.Delta{Pct: hi}, "", true), v.change(e, stats.Delta{Pct: lo}, "", false)
			}
			a = strings.Fields(a)[0]
			if a == strings.Fields(b)[0] {
				f.add(KindFinding, "%s, %s made %s than plain (%s).", setting, protection, b, where)
			} else {
				f.add(KindFinding, "%s, %s made %s to %s than plain (%s).", setting, protection, a, b, where)
			}
			continue
		}
		for _, r := range rows {
			var parts, none []string
			for _, x := range r.xs {
				if x.measurable() {
					parts = append(parts, v.change(e, x.d, "", len(parts) > 0)+" at "+plan.Label(x.c))
				} else {
					none = append(none, plan.Label(x.c))
				}
			}
			switch {
			case len(parts) == 0:
				f.add(KindFinding, "%s, %s and plain: no measurable difference in %s at %s.", setting, r.name, noun, listWords(none))
			case len(none) > 0:
				f.add(KindFinding, "%s, %s made %s than plain, and no measurable difference at %s.", setting, r.name, listWords(parts), listWords(none))
			default:
				f.add(KindFinding, "%s, %s made %s than plain.", setting, r.name, listWords(parts))
			}
		}
	}
}

func concLabels(cs []int) []string {
	var out []string
	for _, c := range cs {
		out = append(out, plan.Label(c))
	}
	return out
}

// rtt states what TLS adds to connection setup at the emulated or
// predicted round-trip times, and how well the round-trip model held.
func (f *finder) rtt() {
	ps := f.ix.predict()
	if len(ps) == 0 || len(PredictRTTs(f.ix.r)) == 0 {
		return
	}
	for i, rtt := range PredictRTTs(f.ix.r) {
		var measured, predictedOnly []string
		worst := 0.0
		for _, p := range ps {
			pt := p.At[i]
			if e := pt.Error(); !math.IsNaN(e) {
				worst = max(worst, math.Abs(e))
			}
			if p.Plain == "" {
				continue
			}
			rt := words(roundRT(p.RoundTrips-predictionRT(ps, p.Plain)), "more", "round trip")
			if !math.IsNaN(pt.MeasuredOverhead) {
				measured = append(measured, fmt.Sprintf("%s with %s (%s; predicted %s)", msWords(pt.MeasuredOverhead), p.Variant, rt, msWords(pt.Overhead)))
			} else if !math.IsNaN(pt.Overhead) {
				predictedOnly = append(predictedOnly, fmt.Sprintf("%s with %s (%s)", msWords(pt.Overhead), p.Variant, rt))
			}
		}
		switch {
		case len(measured) > 0:
			f.add(KindFinding, "At %s RTT (emulated), TLS added %s to a new connection's setup; the round-trip model (round trips × RTT + loopback time) was within %.0f%% of every setup time measured there.",
				plan.RTTLabel(rtt), listWords(measured), math.Ceil(100*worst))
		case len(predictedOnly) > 0:
			f.add(KindFinding, "At %s RTT, the round-trip model predicts that TLS adds %s to a new connection's setup.", plan.RTTLabel(rtt), listWords(predictedOnly))
		}
	}
}

// predictionRT is the round trips of the named prediction.
func predictionRT(ps []Prediction, name string) float64 {
	for _, p := range ps {
		if p.Variant == name {
			return p.RoundTrips
		}
	}
	return math.NaN()
}

// pooling recommends keeping connections open when a new one costs
// measurably more with TLS, and a tunnel where they cannot be kept.
func (f *finder) pooling() {
	if f.dearest == nil {
		return
	}
	v := f.ix
	x := *f.dearest
	why := fmt.Sprintf("TLS's cost is paid when a connection opens (up to %s", msWords(x.ms))
	if !math.IsNaN(x.rt) && x.rt > 0.5 {
		why += " and " + pluralFloat(roundRT(x.rt), "round trip")
	}
	why += " here)"
	if slices.Contains(v.experiments, plan.Pool) {
		worst := 0.0
		for _, n := range f.measured(plan.Pool) {
			p := v.plainOf(n)
			if info, ok := v.info[n]; !ok || info.Plain() || p == "" {
				continue // TLS only: tunnels have findings of their own
			}
			for _, c := range v.conc[plan.Pool] {
				if y := v.contrast(plan.Pool, p, n, c); v.has(plan.Pool, c, n, p) && y.measurable() && y.d.Pct < 0 {
					worst = max(worst, -y.d.Pct)
				}
			}
		}
		noun, _ := v.noun(plan.Pool)
		if worst > 0 {
			why += fmt.Sprintf(", while on persistent connections it cost at most %s of the %s", pctWords(worst), noun)
		} else {
			why += fmt.Sprintf(", while on persistent connections it made no measurable difference in %s", noun)
		}
	}
	f.add(KindRecommendation, "Pool connections or keep them alive: %s.", why)
	// Over a long round trip, every new TLS connection pays its extra
	// round trips again; a long-lived tunnel might pay them once.
	rtts := PredictRTTs(v.r)
	if len(rtts) == 0 || f.tunnelled {
		return
	}
	// The largest RTT measured with emulated latency speaks for itself;
	// without one, the model's prediction at the largest RTT.
	ps := v.predict()
	pick := func(measured bool) (rtt time.Duration, most float64, via string) {
		for i := len(rtts) - 1; i >= 0; i-- {
			for _, p := range ps {
				add := p.At[i].Overhead
				if measured {
					add = p.At[i].MeasuredOverhead
				}
				if !math.IsNaN(add) && add > most {
					rtt, most, via = rtts[i], add, p.Variant
				}
			}
			if most > 0 {
				return
			}
		}
		return
	}
	verb := "added"
	rtt, most, via := pick(true)
	if most <= 0 {
		verb = "is predicted to add"
		rtt, most, via = pick(false)
	}
	if most > 0 {
		// This run measured no tunnel, so it cannot say one is cheaper (an
		// SSH port forward through OpenSSH costs tens of ms per connection
		// on Linux): it says what to measure.
		f.add(KindRecommendation, "Where connections cannot be pooled and the round trip is long, every new TLS connection pays its handshake again: at %s RTT, TLS %s up to %s to every new connection here (%s). Measure whether paying it once per tunnel is cheaper for you (--via ssh,stunnel): this run measured no tunnel.",
			plan.RTTLabel(rtt), verb, msWords(most), via)
	}
}

// ceilings sets the TLS connection rates measured per key against what the
// server's cores can sign, as the text report's ceiling table does.
func (f *finder) ceilings() {
	for _, cl := range f.ix.ceilingRows() {
		ceiling := cl.ConnPerSec()
		if ceiling <= 0 {
			continue
		}
		lib := ""
		if cl.Library != "" {
			lib = ", " + cl.Library
		}
		if math.IsNaN(cl.Best) {
			f.add(KindFinding, "With %s keys the server's %s can sign for at most %s new TLS connections per second (%s signatures per second per core%s).",
				cl.Key, plural(cl.Cores, "core"), num(ceiling, rate), num(cl.SignPerSec, rate), lib)
			continue
		}
		verdict := "signing alone does not limit new connections here"
		if cl.Share() >= 0.7 {
			verdict = "the server's signing speed is what limits new connections"
		}
		f.add(KindFinding, "With %s keys the server made at most %s new TLS connections per second (%s), %s of the %s its %s can sign for (%s per second per core%s): %s.",
			cl.Key, num(cl.Best, rate), cl.BestAt, pctWords(100*cl.Share()), num(ceiling, rate), plural(cl.Cores, "core"), num(cl.SignPerSec, rate), lib, verdict)
	}
}

// crypto states the measured primitives: how much faster one key signs
// than another, and what one core encrypts.
func (f *finder) crypto() {
	prims := f.ix.r.Crypto
	if len(prims) == 0 {
		return
	}
	libs := libraries(prims)
	recommended := false
	for _, lib := range libs {
		var signs []result.Primitive
		var ciphers []result.Primitive
		for _, p := range prims {
			if p.Library != lib || p.PerCore <= 0 {
				continue
			}
			switch p.Kind {
			case "sign":
				signs = append(signs, p)
			case "cipher":
				ciphers = append(ciphers, p)
			}
		}
		if len(signs) > 1 {
			slices.SortStableFunc(signs, func(a, b result.Primitive) int { return cmp.Compare(b.PerCore, a.PerCore) })
			var parts []string
			for _, s := range signs {
				parts = append(parts, fmt.Sprintf("%s %s", s.Name, num(s.PerCore, rate)))
			}
			fast, slow := signs[0], signs[len(signs)-1]
			f.add(KindFinding, "%s signs per second on one core: %s; a server with %s keys can complete %.0f× the full handshakes of one with %s keys.",
				lib, strings.Join(parts, ", "), fast.Name, fast.PerCore/slow.PerCore, slow.Name)
			// The keys one may deploy: a weak key's speed recommends nothing.
			usable := slices.DeleteFunc(slices.Clone(signs), func(p result.Primitive) bool { return weakKeys[p.Name] != "" })
			if len(usable) > 1 && !recommended {
				// ECDSA where measured: every TLS client accepts it, not
				// every one Ed25519.
				fast, slow := usable[0], usable[len(usable)-1]
				if i := slices.IndexFunc(usable, func(p result.Primitive) bool { return strings.HasPrefix(p.Name, "ecdsa") }); i >= 0 {
					fast = usable[i]
				}
				if fast.PerCore >= 2*slow.PerCore {
					f.add(KindRecommendation, "Where clients accept them, give servers %s keys rather than %s: with %s one core signs %.0f× as many full handshakes per second.",
						fast.Name, slow.Name, lib, fast.PerCore/slow.PerCore)
					recommended = true
				}
			}
		}
		if len(ciphers) > 0 {
			// The largest record size shows bulk speed.
			size := slices.MaxFunc(ciphers, func(a, b result.Primitive) int { return cmp.Compare(a.Size, b.Size) }).Size
			var parts []string
			for _, c := range ciphers {
				if c.Size == size {
					parts = append(parts, fmt.Sprintf("%s %s MB/s", c.Name, num(c.PerCore/1e6, rate)))
				}
			}
			f.add(KindFinding, "%s encrypts on one core, %d-byte records: %s.", lib, size, strings.Join(parts, ", "))
		}
	}
}
