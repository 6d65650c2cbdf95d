package report

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The rules decide which facts of a result become findings, one rule per
// topic: a difference is a finding only when its 95% interval excludes 0,
// and only such a difference leads to a recommendation. One figure is
// said to be more than another (a phase against what TLS adds) only when
// the 95% interval of their difference, round by round, lies above 0
// (compareRounds); else it is about as much.

// rules collects findings, and what later rules refer to.
type rules struct {
	ix  *index
	out []Finding
	// cost is the headline TLS cost of a new connection (the cheapest
	// full handshake that differs measurably from plain), if any.
	cost *Contrast
	// dearest is the costliest such handshake.
	dearest *Contrast
	// tunnelled is set when the run measured connections through a tunnel.
	tunnelled bool
}

func (r *rules) add(k Kind, t Topic, f Fact) {
	r.out = append(r.out, Finding{Kind: k, Topic: t, Fact: f})
}

// caveats say what the run cannot tell.
func (r *rules) caveats() {
	res := r.ix.r
	switch {
	case len(res.Trials) == 0 && len(res.Crypto) == 0 && len(res.Ceilings) == 0 && len(res.Advise) == 0:
		r.add(KindCaveat, TopicRun, NothingMeasured{})
		return
	case len(res.Trials) == 0:
		return
	}
	st := r.ix.status()
	if st.Interrupted {
		r.add(KindCaveat, TopicRun, Interrupted{Finished: st.Finished, Planned: st.Planned})
	}
	if st.Error != "" {
		r.add(KindCaveat, TopicRun, StoppedOnError{Finished: st.Finished, Error: st.Error})
	}
	if isWire(res) {
		return // a capture is what it is: its variants are what the client did, not a comparison
	}
	if isReplicate(res) {
		return // its baselines are per commit mode (replicate.go)
	}
	r.outlierCaveat()
	names := r.ix.measuredAny()
	if len(names) == 1 {
		r.add(KindCaveat, TopicRun, OneVariant{Variant: names[0], ByDefault: res.Spec.TLSByDefault})
		return
	}
	plain := slices.ContainsFunc(names, func(n string) bool {
		info, ok := r.ix.info[n]
		return ok && direct(info)
	})
	if !plain {
		r.add(KindCaveat, TopicRun, NoPlain{})
	}
}

// connect: what a new TLS connection costs against a plain one on the
// bare link, the dearest and the cheapest full handshake measured, and
// what else a connection spends its time on.
func (r *rules) connect() {
	ix := r.ix
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	var sig, none, single []Contrast
	for _, n := range ix.fullTLS(plan.Connect) {
		p := ix.plainOf(n)
		if ix.info[n].RTT != 0 || p == "" || !ix.has(plan.Connect, c, n, p) {
			continue
		}
		switch x := ix.contrast(plan.Connect, p, n, c); {
		case x.Measurable():
			sig = append(sig, x)
		case x.Single():
			single = append(single, x)
		default:
			none = append(none, x)
		}
	}
	if len(single) > 0 {
		r.add(KindFinding, TopicConnect, SingleTrial{Contrasts: single})
	}
	if len(none) > 0 {
		r.add(KindFinding, TopicConnect, NoDifference{Contrasts: none})
	}
	if len(sig) == 0 {
		return
	}
	byMS := func(a, b Contrast) int { return cmp.Compare(a.MS, b.MS) }
	cheap, dear := slices.MinFunc(sig, byMS), slices.MaxFunc(sig, byMS)
	r.cost, r.dearest = &cheap, &dear
	r.add(KindFinding, TopicConnect, ConnectCost{Contrast: dear})
	if cheap.To != dear.To {
		r.add(KindFinding, TopicConnect, ConnectCost{Contrast: cheap, Cheapest: true})
	}
	// What else a connection spends its time on puts TLS's cost in proportion.
	plain := cheap.From
	ts := withLatency(ix.trials[cellKey{plan.Connect, plain, c}])
	var names []string
	for _, t := range ts {
		names = mergeOrder(names, t.Phases)
	}
	best, bestMS := "", 0.0
	for _, p := range names {
		if strings.HasPrefix(p, "tls") || p == "tunnel" {
			continue
		}
		if ms := phaseMean(ts, p); ms > bestMS {
			best, bestMS = p, ms
		}
	}
	if best == "" {
		return
	}
	// The phase against what TLS adds, round by round as the contrast
	// pairs its trials: "more than" only where the interval says so.
	a, b := ix.pairedTrials(plan.Connect, c, cheap.From, cheap.To)
	m, d := compareRounds(func(ts []result.Trial) (float64, bool) {
		ms, ok := phaseMS(ts[0], best)
		return ms - (ts[1].Latency.Mean - ts[0].Latency.Mean), ok
	}, a, b)
	if d.Mean > 0 {
		total := stats.Summarize(collect(ts, func(t result.Trial) float64 { return t.Latency.Mean })).Mean
		r.add(KindFinding, TopicConnect, LargestPhase{Plain: plain, Phase: best, MS: bestMS, Total: total, TLS: cheap, More: m == more, Diff: d})
	}
}

// hello: a server that wants another key share than the client's first
// costs TLS 1.3 a second round trip.
func (r *rules) hello() {
	ix := r.ix
	var names, groups []string
	for _, n := range ix.measuredAny() {
		for _, t := range ix.r.Trials {
			// A capture's HelloRetryRequests have a finding of their own (rules_wire.go).
			if t.Variant == n && t.Experiment != plan.Wire && t.Negotiated != nil && t.Negotiated.HelloRetry {
				names = append(names, n)
				if g := t.Negotiated.Group; !slices.Contains(groups, g) {
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
	if c, ok := ix.lowest(plan.Connect); ok {
		var rts []float64
		for _, n := range names {
			for _, t := range ix.trials[cellKey{plan.Connect, n, c}] {
				for _, p := range t.Phases {
					if p.Name == "tls-handshake" && p.Latency.Count > 0 {
						rts = append(rts, p.RoundTrips.Mean)
					}
				}
			}
		}
		rt = stats.Summarize(rts).Mean
	}
	tls13 := slices.DeleteFunc(ix.measuredAny(), func(n string) bool { return ix.info[n].TLS != "1.3" })
	f := HelloRetry{Variants: names, Groups: groups, RoundTrips: rt, Every: len(tls13) == len(names) && len(names) > 1}
	r.add(KindFinding, TopicHelloRetry, f)
	r.add(KindRecommendation, TopicHelloRetry, f)
}

// versions: TLS 1.3 against TLS 1.2, the round trip it saves against the
// local time it costs, and where that comes out even.
func (r *rules) versions() {
	ps := r.ix.pairs(func(p plan.Variant) bool { return p.TLS == "1.2" && !p.Resume },
		func(p *plan.Variant) { p.TLS, p.Cipher = "1.3", "" })
	if len(ps) == 0 {
		return
	}
	saved := math.Inf(1)
	worse, better := false, false
	single := !slices.ContainsFunc(ps, func(p Contrast) bool { return !p.Single() })
	f := VersionChange{Pairs: ps}
	for _, p := range ps {
		if math.IsNaN(p.RoundTrips) {
			saved = math.NaN()
			break
		}
		saved = min(saved, -p.RoundTrips)
		if p.Measurable() {
			worse = worse || p.Delta.Pct < 0
			better = better || p.Delta.Pct > 0
		}
		if p.RoundTrips < -0.5 && p.Local > 0 && p.To != "" && r.ix.info[p.To].RTT == 0 {
			f.EvenAt = max(f.EvenAt, p.Local/-p.RoundTrips)
			f.LocalMore = max(f.LocalMore, p.Local)
		}
	}
	f.Saved = roundRT(saved)
	if rtts := PredictRTTs(r.ix.r); f.Saved >= 1 && len(rtts) > 0 {
		f.At = rtts[len(rtts)-1]
		f.SavesAt = f.Saved*float64(f.At)/float64(time.Millisecond) - f.LocalMore
	}
	r.add(KindFinding, TopicVersion, f)
	switch {
	case f.Saved >= 1 && single:
		r.add(KindRecommendation, TopicVersion, PreferTLS13{Because: SavesRoundTripUntimed, RoundTrips: f.Saved})
	case f.Saved >= 1 && !worse:
		r.add(KindRecommendation, TopicVersion, PreferTLS13{Because: SavesRoundTrip, RoundTrips: f.Saved})
	case f.Saved >= 1 && f.EvenAt > 0:
		r.add(KindRecommendation, TopicVersion, PreferTLS13{Because: BeyondRTT, RoundTrips: f.Saved, BeyondMS: f.EvenAt})
	case better && !worse:
		r.add(KindRecommendation, TopicVersion, PreferTLS13{Because: MoreConnections})
	}
}

// weakKeys are keys measured for comparison that no one should deploy.
var weakKeys = map[string]string{"rsa1024": "1024-bit RSA"}

// keys: server keys within each TLS setting, against rsa2048 (the common
// default) or the first key measured; the fastest key one may deploy
// over the slowest, where the difference is measurable.
func (r *rules) keys() {
	ix := r.ix
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	// Settings: full-handshake TLS variants but for the key, each with
	// the variant of every key measured.
	type setting struct {
		info plan.Variant // Key cleared
		keys map[string]string
	}
	var settings []*setting
	var order []string
	for _, n := range ix.fullTLS(plan.Connect) {
		info := ix.info[n]
		if info.Key == "" || !ix.has(plan.Connect, c, n) {
			continue
		}
		if !slices.Contains(order, info.Key) {
			order = append(order, info.Key)
		}
		k := info
		k.ID, k.Baseline, k.Key = "", false, ""
		i := slices.IndexFunc(settings, func(g *setting) bool { return g.info == k })
		if i < 0 {
			settings = append(settings, &setting{info: k, keys: map[string]string{}})
			i = len(settings) - 1
		}
		settings[i].keys[info.Key] = n
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
		f := KeyChange{Key: key, Ref: ref, CPURef: math.NaN(), CPUKey: math.NaN()}
		for _, g := range settings {
			a, b := g.keys[ref], g.keys[key]
			if a == "" || b == "" {
				continue
			}
			f.Pairs = append(f.Pairs, ix.contrast(plan.Connect, a, b, c))
			if f.CPUAt == "" {
				sa := cpuMS(ix.trials[cellKey{plan.Connect, a, c}], serverCPU)
				sb := cpuMS(ix.trials[cellKey{plan.Connect, b, c}], serverCPU)
				if !math.IsNaN(sa) && !math.IsNaN(sb) {
					f.CPURef, f.CPUKey, f.CPUAt = sa, sb, a
				}
			}
		}
		if len(f.Pairs) > 0 {
			r.add(KindFinding, TopicKey, f)
		}
	}
	var recs []UseKey
	for _, g := range settings {
		var keys []string
		for _, k := range order {
			if g.keys[k] != "" {
				keys = append(keys, k)
			}
		}
		byRate := func(a, b string) int {
			return cmp.Compare(ix.meanRate(plan.Connect, g.keys[a], c), ix.meanRate(plan.Connect, g.keys[b], c))
		}
		fastest := slices.MaxFunc(keys, byRate)
		usable := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return weakKeys[k] != "" })
		if len(usable) < 2 {
			continue
		}
		best, worst := slices.MaxFunc(usable, byRate), slices.MinFunc(usable, byRate)
		if weakKeys[fastest] != "" {
			if x := ix.contrast(plan.Connect, g.keys[best], g.keys[fastest], c); x.Measurable() {
				r.add(KindFinding, TopicKey, WeakKeyFastest{Key: fastest, Contrast: x})
			}
		}
		// Paired ratios are not symmetric: the slower key against the
		// faster one first (as the findings do), then the other way.
		if x := ix.contrast(plan.Connect, g.keys[best], g.keys[worst], c); x.Measurable() {
			recs = append(recs, UseKey{Best: best, Worst: worst, Contrast: x})
		} else if x := ix.contrast(plan.Connect, g.keys[worst], g.keys[best], c); x.Measurable() {
			recs = append(recs, UseKey{Best: best, Worst: worst, Contrast: x})
		}
	}
	// One recommendation: the first pair of keys, where its difference
	// was largest.
	if len(recs) > 0 {
		rec := recs[0]
		for _, o := range recs[1:] {
			if o.Best == rec.Best && o.Worst == rec.Worst && math.Abs(o.Delta.Pct) > math.Abs(rec.Delta.Pct) {
				rec = o
			}
		}
		r.add(KindRecommendation, TopicKey, rec)
	}
}

// resumption: resumed sessions against full handshakes, and a server that
// refused to resume.
func (r *rules) resumption() {
	ix := r.ix
	ps := ix.pairs(func(p plan.Variant) bool { return !p.Plain() && !p.Resume },
		func(p *plan.Variant) { p.Resume = true })
	var ok []Contrast
	var refused []Share
	for _, p := range ps {
		resumed, conns := ix.resumed(cellKey{plan.Connect, p.To, p.Concurrency})
		switch {
		case conns == 0:
		case resumed*2 < conns:
			refused = append(refused, Share{Variant: p.To, Resumed: resumed, Conns: conns})
		case resumed*10 >= conns*9:
			ok = append(ok, p)
		}
	}
	if len(refused) > 0 {
		r.add(KindFinding, TopicResumption, ResumeRefused{Variants: refused})
	}
	if len(ok) == 0 {
		return
	}
	saves := slices.ContainsFunc(ok, func(p Contrast) bool { return p.RoundTrips < -0.5 })
	r.add(KindFinding, TopicResumption, Resumption{Pairs: ok, SavesRoundTrip: saves})
	best := slices.MaxFunc(ok, func(a, b Contrast) int { return cmp.Compare(a.Delta.Pct, b.Delta.Pct) })
	if best.Measurable() && best.Delta.Pct > 0 {
		r.add(KindRecommendation, TopicResumption, LetResume{Best: best})
	}
}

// auth: authentication methods against the first, with and without TLS.
func (r *rules) auth() {
	ix := r.ix
	c, ok := ix.lowest(plan.Connect)
	if !ok || len(ix.r.Spec.Auth) < 2 {
		return
	}
	ref := ix.r.Spec.Auth[0]
	for _, method := range ix.r.Spec.Auth[1:] {
		ps := ix.pairs(func(p plan.Variant) bool { return p.Auth == ref && !p.Resume },
			func(p *plan.Variant) { p.Auth = method })
		if len(ps) == 0 {
			continue
		}
		f := AuthChange{Method: method, Ref: ref}
		for _, p := range ps {
			a := phaseMean(ix.trials[cellKey{plan.Connect, p.From, c}], "auth")
			b := phaseMean(ix.trials[cellKey{plan.Connect, p.To, c}], "auth")
			f.Pairs = append(f.Pairs, AuthPair{Contrast: p, FromMS: a, ToMS: b})
			if r.cost == nil {
				continue
			}
			// The extra auth time against what TLS adds, round by round.
			from, to := ix.pairedTrials(plan.Connect, c, p.From, p.To)
			plain, tls := ix.pairedTrials(plan.Connect, c, r.cost.From, r.cost.To)
			m, d := compareRounds(func(ts []result.Trial) (float64, bool) {
				a, okA := phaseMS(ts[0], "auth")
				b, okB := phaseMS(ts[1], "auth")
				return (b - a) - (ts[3].Latency.Mean - ts[2].Latency.Mean), okA && okB
			}, from, to, plain, tls)
			if d.Mean > 0 && (f.TLS == nil || m == more && !f.More) {
				f.TLS, f.More, f.Diff = r.cost, m == more, d
			}
		}
		r.add(KindFinding, TopicAuth, f)
	}
}

// tunnels: what a new connection costs through each tunnel measured,
// against plain and against the cheapest TLS handshake at the same RTT;
// a tunnel that beats TLS on new connections is recommended.
func (r *rules) tunnels() {
	ix := r.ix
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	for _, n := range ix.measured(plan.Connect) {
		info, ok := ix.info[n]
		if !ok || info.Tunnel == "" || !ix.has(plan.Connect, c, n) {
			continue
		}
		r.tunnelled = true
		f := TunnelCost{Variant: n, Concurrency: c, SetupMS: math.NaN()}
		if p := ix.plainOf(n); p != "" && ix.has(plan.Connect, c, p) {
			x := ix.contrast(plan.Connect, p, n, c)
			f.Plain = &x
		}
		// The TLS handshake to beat: the same key (stunnel's certificate)
		// if measured, else the fastest full handshake, at the same RTT.
		best, bestRate := "", 0.0
		for _, t := range ix.fullTLS(plan.Connect) {
			ti := ix.info[t]
			if ti.RTT != info.RTT || ti.Auth != info.Auth || ti.Tunnel != "" || !ix.has(plan.Connect, c, t) {
				continue
			}
			m := ix.meanRate(plan.Connect, t, c)
			if info.Key != "" && ti.Key == info.Key {
				m = math.Inf(1)
			}
			if m > bestRate {
				best, bestRate = t, m
			}
		}
		if best != "" {
			y := ix.contrast(plan.Connect, best, n, c)
			f.Versus = &y
			// Only a path that protects the connections is advice
			// against TLS (not a plaintext pooler or proxy).
			// A legacy cipher is never advice, however fast.
			if y.Measurable() && y.Delta.Pct > 0 && ix.protected(n) && legacy(info) == "" {
				r.add(KindRecommendation, TopicTunnel, UseTunnel{Versus: y})
			}
		}
		if f.Plain == nil && f.Versus == nil {
			continue
		}
		for _, t := range ix.r.Tunnels {
			if t.Label != info.Tunnel || t.RTT != info.RTT || len(t.Setup) == 0 {
				continue
			}
			var d time.Duration
			for _, p := range t.Setup {
				d += p.Duration
			}
			f.SetupMS = float64(d) / float64(time.Millisecond)
		}
		r.add(KindFinding, TopicTunnel, f)
	}
}

// persistent: what TLS costs on connections that stay open (pool,
// stream), at every concurrency: one range when every TLS variant differs
// from plain the same way at every concurrency, else variant by variant.
func (r *rules) persistent() {
	ix := r.ix
	for _, e := range ix.experiments {
		if e == plan.Connect || e == plan.NewClient || e == plan.Storm || e == plan.Wire {
			continue
		}
		var rows []PersistentVariant
		tunnelled := false
		for _, n := range ix.measured(e) {
			info, ok := ix.info[n]
			p := ix.plainOf(n)
			if !ok || direct(info) || p == "" {
				continue
			}
			tunnelled = tunnelled || info.Tunnel != ""
			row := PersistentVariant{Experiment: e, Variant: n}
			for _, c := range ix.conc[e] {
				if ix.has(e, c, n, p) {
					row.Contrasts = append(row.Contrasts, ix.contrast(e, p, n, c))
				}
			}
			if len(row.Contrasts) > 0 {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		// The same verdict everywhere reads as one sentence.
		first := rows[0].Contrasts[0]
		f := PersistentSame{Experiment: e, Concurrencies: ix.conc[e], Measurable: first.Measurable(), Single: first.Single(),
			Lo: math.Inf(1), Hi: math.Inf(-1), Tunnelled: tunnelled}
		same := true
		for _, row := range rows {
			f.Variants = append(f.Variants, row.Variant)
			for _, x := range row.Contrasts {
				same = same && verdict(x) == verdict(first)
				f.Lo, f.Hi = min(f.Lo, x.Delta.Pct), max(f.Hi, x.Delta.Pct)
			}
		}
		if same && (!f.Measurable || len(rows)*len(ix.conc[e]) > 1) {
			r.add(KindFinding, TopicPersistent, f)
			continue
		}
		for _, row := range rows {
			r.add(KindFinding, TopicPersistent, row)
		}
	}
}

// verdict is what a contrast shows: more, less, no measurable change, or
// one trial each (no interval).
func verdict(x Contrast) string {
	switch {
	case x.Single():
		return "single"
	case !x.Measurable():
		return "none"
	case x.Delta.Pct < 0:
		return "less"
	}
	return "more"
}

// rtt: what TLS adds to connection setup at the emulated or predicted
// round-trip times, and how well the round-trip model held.
func (r *rules) rtt() {
	ps := r.ix.predict()
	rtts := PredictRTTs(r.ix.r)
	if len(ps) == 0 || len(rtts) == 0 {
		return
	}
	for i, rtt := range rtts {
		var measured, predicted []RTTItem
		worst := 0.0
		for _, p := range ps {
			pt := p.At[i]
			if e := pt.Error(); !math.IsNaN(e) {
				worst = max(worst, math.Abs(e))
			}
			if p.Plain == "" {
				continue
			}
			item := RTTItem{Variant: p.Variant, RoundTrips: roundRT(p.RoundTrips - predictionRT(ps, p.Plain)),
				Measured: pt.MeasuredOverhead, Predicted: pt.Overhead}
			if !math.IsNaN(pt.MeasuredOverhead) {
				measured = append(measured, item)
			} else if !math.IsNaN(pt.Overhead) {
				predicted = append(predicted, item)
			}
		}
		switch {
		case len(measured) > 0:
			r.add(KindFinding, TopicRTT, RTTSetup{RTT: rtt, Items: measured, Within: worst})
		case len(predicted) > 0:
			r.add(KindFinding, TopicRTT, RTTSetup{RTT: rtt, Items: predicted, Within: worst})
		}
	}
}

// pooling recommends keeping connections open when a new one costs
// measurably more with TLS, and measuring a tunnel where they cannot be
// kept and the round trip is long.
func (r *rules) pooling() {
	if r.dearest == nil {
		return
	}
	ix := r.ix
	f := Pool{Dearest: *r.dearest, Persistent: math.NaN()}
	if slices.Contains(ix.experiments, plan.Pool) {
		f.Persistent = 0
		paired := false
		for _, n := range ix.measured(plan.Pool) {
			p := ix.plainOf(n)
			if info, ok := ix.info[n]; !ok || info.Plain() || p == "" {
				continue // TLS only: tunnels have findings of their own
			}
			for _, c := range ix.conc[plan.Pool] {
				y := ix.contrast(plan.Pool, p, n, c)
				if !ix.has(plan.Pool, c, n, p) || y.Delta.N < 2 {
					continue // one trial shows no absence of a cost either
				}
				paired = true
				if y.Measurable() && y.Delta.Pct < 0 {
					f.Persistent = max(f.Persistent, -y.Delta.Pct)
				}
			}
		}
		if !paired {
			f.Persistent = math.NaN()
		}
	}
	r.add(KindRecommendation, TopicPooling, f)
	// Over a long round trip, every new TLS connection pays its extra
	// round trips again; a long-lived tunnel might pay them once.
	rtts := PredictRTTs(ix.r)
	if len(rtts) == 0 || r.tunnelled {
		return
	}
	// The largest RTT measured with emulated latency speaks for itself;
	// without one, the model's prediction at the largest RTT.
	ps := ix.predict()
	pick := func(measured bool) (m MeasureTunnel) {
		m.Measured = measured
		for i := len(rtts) - 1; i >= 0; i-- {
			for _, p := range ps {
				add := p.At[i].Overhead
				if measured {
					add = p.At[i].MeasuredOverhead
				}
				if !math.IsNaN(add) && add > m.MS {
					m.RTT, m.MS, m.Variant = rtts[i], add, p.Variant
				}
			}
			if m.MS > 0 {
				return m
			}
		}
		return m
	}
	m := pick(true)
	if m.MS <= 0 {
		m = pick(false)
	}
	if m.MS > 0 {
		// This run measured no tunnel, so it cannot say one is cheaper (an
		// SSH port forward through OpenSSH costs tens of ms per connection
		// on Linux): it says what to measure.
		r.add(KindRecommendation, TopicPooling, m)
	}
}

// ceilings: the TLS connection rates measured per key against what the
// server's cores can sign, as the ceiling table has them.
func (r *rules) ceilings() {
	for _, cl := range r.ix.ceilingRows() {
		if cl.ConnPerSec() > 0 {
			r.add(KindFinding, TopicCeiling, Ceiling{cl})
		}
	}
}

// crypto: how much faster one key signs than another, and what one core
// encrypts, per library.
func (r *rules) crypto() {
	prims := r.ix.r.Crypto
	if len(prims) == 0 {
		return
	}
	recommended := false
	for _, lib := range libraries(prims) {
		var signs, ciphers []result.Primitive
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
			r.add(KindFinding, TopicCrypto, SignRates{Library: lib, Signs: signs})
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
					r.add(KindRecommendation, TopicCrypto, FastKey{Library: lib, Fast: fast, Slow: slow})
					recommended = true
				}
			}
		}
		if len(ciphers) > 0 {
			// The largest record size shows bulk speed.
			size := slices.MaxFunc(ciphers, func(a, b result.Primitive) int { return cmp.Compare(a.Size, b.Size) }).Size
			f := CipherRates{Library: lib, Size: size}
			for _, c := range ciphers {
				if c.Size == size {
					f.Ciphers = append(f.Ciphers, c)
				}
			}
			r.add(KindFinding, TopicCrypto, f)
		}
	}
}
