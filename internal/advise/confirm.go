package advise

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// A lab replay (advise --confirm) runs the observed profile against a
// lab server of the observed engine: the connect experiment at the
// observed connection rate (open loop, Poisson arrivals), the observed
// operations per connection (--per-conn) and median RTT (--rtt), once as
// "now" (the observed TLS version, key, group and negotiation) and once
// per change, one variant each, interleaved in rounds by bench's trial
// engine. Each measured saving is the paired difference of now and the
// change's variant round by round, with its 95% interval over rounds.

// Bounds of a replay on this machine.
const (
	// MaxReplayRate is the most arrivals per second a replay offers: a
	// higher observed rate is scaled down to it, and said (two shared
	// cores serve client and server both).
	MaxReplayRate = 100
	// MinReplayRate is the least: below it a trial holds too few
	// connections, and the replay runs closed loop, one at a time.
	MinReplayRate = 5
	// minRTT is the least median RTT the replay emulates: below it (a
	// loopback capture) the bare link is the nearer.
	minRTT = 100 * time.Microsecond
	// DefaultReplayDuration and DefaultReplayTrials size a replay.
	DefaultReplayDuration = 2 * time.Second
	DefaultReplayTrials   = 3
)

// labEngine is the lab server (--lab) of an engine as a driver names it;
// http runs on the built-in server.
var labEngine = map[string]string{"postgres": "postgres", "mysql": "mariadb", "redis": "redis", "mongodb": "mongodb", "http": plan.Builtin}

// ReplayOptions size a replay; zero values are the defaults.
type ReplayOptions struct {
	Trials   int
	Duration time.Duration
	// Client is the client stack (--client: a plan.ClientStack name or
	// alias) the replay's connections are made by; "" or "go" for Go's.
	Client string
}

// NoLabError is an engine the lab cannot start a server of: the advice
// stands as predictions.
type NoLabError struct{ Engine string }

func (e *NoLabError) Error() string {
	what := "a server of an unknown engine"
	if e.Engine != "" {
		what = "a " + e.Engine + " server"
	}
	return fmt.Sprintf("the lab cannot start %s to replay the profile on (it starts postgres, mariadb, redis, mongodb and the built-in HTTPS server): the advice stays predictions, unchecked", what)
}

// Replay is the plan of one endpoint's lab replay: the run's spec (for
// plan.New), the variants it measures, and what each change is measured
// on.
type Replay struct {
	// Spec is the replay's connect run, before plan.New.
	Spec plan.Spec
	now  sel
	to   map[string]sel // by change name
	// skipped says why a change is not replayed, by its name.
	skipped map[string]string
	info    result.Replay
	// stack is the client stack other than Go's that makes the replay's
	// connections, "" for Go's.
	stack string
}

// NewReplays plans the replays of a's profile: one on the engine's lab
// server, and for PostgreSQL's direct TLS, which needs PostgreSQL 17+ and
// another server's TLS library, one of its own on the lab's PostgreSQL 18;
// a *NoLabError for an engine the lab has no server of.
func NewReplays(a result.Advised, o ReplayOptions) ([]*Replay, error) {
	p := profileOf(a.Profile)
	lab, ok := labEngine[p.Engine]
	if !ok {
		return nil, &NoLabError{Engine: p.Engine}
	}
	stack := ""
	if o.Client != "" && o.Client != plan.GoClient {
		st, err := plan.LookupClient(p.Engine, o.Client)
		if err != nil {
			return nil, fmt.Errorf("--client: %w", err)
		}
		stack = st.Name
	}
	like := p.like()
	now := p.replayed(like)
	main := &Replay{now: now, to: map[string]sel{}, skipped: map[string]string{}, stack: stack}
	direct := &Replay{now: now, to: map[string]sel{}}
	if stack != "" {
		// The stack offers its own key shares, as it did in the capture.
		main.now.group = ""
	}
	for _, c := range a.Advice {
		if c.NotApplicable {
			continue
		}
		i := slices.IndexFunc(changes, func(ch change) bool { return ch.name == c.Change })
		if i < 0 {
			continue
		}
		_, to := changes[i].pair(p, p.like())
		switch {
		case isHybrid(to.group) != isHybrid(p.group) && lab != plan.Builtin:
			// OpenSSL 3.0 (Redis, MariaDB, PostgreSQL 15) and 1.1
			// (PostgreSQL 18) have no ML-KEM, and take P-256 where
			// PostgreSQL 15 takes nothing else.
			main.skipped[c.Change] = "the lab's " + lab + " server has no X25519MLKEM768 (OpenSSL before 3.5): only the built-in HTTPS server (Go) replays the post-quantum hybrid"
			continue
		case stack != "" && to.tls != "off" && (to.group != like.group || to.helloRetry != like.helloRetry):
			main.skipped[c.Change] = "client " + stack + " offers its own key shares (tlsbench chooses them for Go's client only): replay without --client to measure it with Go's"
			continue
		case stack != "" && to.perConn == -1:
			main.skipped[c.Change] = "client " + stack + " reports each connection's time, not its phases, whose setup pooling saves: replay without --client to measure it with Go's"
			continue
		case to.perConn == -1:
			to = now // pooling: the setup phases of now's own connections
			to.perConn = -1
		case to.negotiation == plan.NegotiationDirect:
			direct.to[c.Change] = p.replayed(to)
			continue
		}
		to = p.replayed(to)
		if stack != "" {
			to.group = ""
		}
		main.to[c.Change] = to
	}
	main.plan(p, lab, o)
	out := []*Replay{main}
	if len(direct.to) > 0 {
		direct.plan(p, "postgres:18", o)
		direct.info.Notes = append(direct.info.Notes, "direct TLS needs PostgreSQL 17+: it is replayed apart, now and direct on the lab's PostgreSQL 18")
		if stack != "" {
			direct.info.Notes = append(direct.info.Notes, "direct TLS: replayed with Go's client, not "+stack+" (a stack other than Go's sends an SSLRequest first only)")
		}
		out = append(out, direct)
	}
	return out, nil
}

// plan makes r's spec: p's profile replayed on lab, now and r's changes.
func (r *Replay) plan(p *profile, lab string, o ReplayOptions) {
	r.info = result.Replay{Lab: lab, Client: replayClient(p, r.stack), Trials: cmp.Or(o.Trials, DefaultReplayTrials)}
	spec := labSpec(lab, o)
	if r.stack != "" {
		spec.ClientStacks = []string{r.stack}
		r.info.Notes = append(r.info.Notes, "client "+r.stack+" reports each connection's time, not its phases: the replay through it measures no round trips (without --client, Go's replay does)")
	}
	d := dimsOf(p.Engine, append([]sel{r.now}, r.sels()...))
	d.apply(&spec)
	r.info.PerConn = max(1, int(math.Round(p.Ops.P50)))
	if p.TLSConns > 0 && len(p.Login) == 0 {
		// TLS hides the operations: its flights after the handshake hold
		// the login's too, which the replay's connections make anyway
		// (PostgreSQL's and MySQL's logins are told apart: loginOf).
		r.info.PerConn = 1
		r.info.Notes = append(r.info.Notes, "TLS hides the operations (the capture counts encrypted flights, the login's included): the replay runs 1 operation per connection")
	}
	if r.info.PerConn > 1 && r.stack != "" {
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("client %s runs 1 operation per connection (a stack reports each connection's time): the observed %d are replayed as 1", r.stack, r.info.PerConn))
		r.info.PerConn = 1
	}
	if r.info.PerConn > 1 {
		spec.PerConn = []int{r.info.PerConn}
	}
	if r.pooled() && p.Engine == "redis" && slices.ContainsFunc(p.Login, func(l result.Share) bool { return strings.Contains(l.Name, "ready check") }) {
		r.info.Notes = append(r.info.Notes, "pooling: the capture's client logs in with 2 round trips (AUTH or HELLO, then a ready check), the replay's (Go's) with 1 (AUTH): its new connections, and what a pool saves of them, are a round trip and the INFO's answer (bytes) short of yours")
	}
	if r.pooled() {
		// The pool runs now's operations on connections it keeps, at the
		// same arrival rate: what a connection's operations cost the
		// server and client there, against a new connection's.
		spec.Experiments = append(spec.Experiments, plan.Pool)
		r.info.Notes = append(r.info.Notes, "pooling: now's variant also runs as a pool (tlsbench pool), its operations at the replay's rate on connections it keeps: CPU and bytes per connection pooled are a pooled operation's times the replay's operations per connection")
	}
	l := p.load(&spec, "the replay", r.stack)
	r.info.RTT, r.info.Rate = l.RTT, l.Rate
	r.info.Notes = append(r.info.Notes, l.Notes...)
	r.Spec = spec
}

// load is a lab run's load: its arrival rate (0: closed loop, one
// connection at a time), its emulated RTT, ms (0: the bare link), and
// where it departs from the capture's.
type load struct {
	Rate, RTT float64
	Notes     []string
}

// load sets spec's load to the capture's: its median RTT emulated, and
// its mean connection rate as Poisson arrivals (at most MaxReplayRate; a
// pool beside at that rate, on connections enough for it). What a
// connection costs the server depends on both (measured here on MariaDB:
// 0.21 ms of CPU a plain connection one at a time on loopback, 0.46 at
// 44/s, 0.88 at 44/s over 44 ms), most likely a server idle between
// flights paying for waking (not profiled). stack, a client stack other than Go's, runs closed loops
// only; who says whose run the notes are of.
func (p *profile) load(spec *plan.Spec, who, stack string) load {
	var l load
	if rtt := time.Duration(p.RTT.P50 * float64(time.Millisecond)); rtt >= minRTT {
		rtt = rtt.Round(10 * time.Microsecond)
		spec.RTT = []time.Duration{rtt}
		l.RTT = ms(rtt)
	} else {
		l.Notes = append(l.Notes, fmt.Sprintf("the observed median RTT (%s ms) is below %s: %s runs on the bare loopback link", num3(p.RTT.P50), minRTT, who))
	}
	rate := p.Rate.Mean
	switch {
	case stack != "":
		l.Notes = append(l.Notes, fmt.Sprintf("client %s replays closed loops only: one connection at a time, not the observed %s connections/s", stack, num3(rate)))
	case p.Conns < 2 || p.Span <= 0:
		l.Notes = append(l.Notes, fmt.Sprintf("the capture is too short for a rate (%d connections over %s s): %s runs closed loop, one connection at a time", p.Conns, num3(p.Span), who))
	case rate < MinReplayRate:
		l.Notes = append(l.Notes, fmt.Sprintf("the observed rate (%s connections/s) would give a trial too few connections: %s runs closed loop, one connection at a time", num3(rate), who))
	default:
		l.Rate = math.Round(min(rate, MaxReplayRate))
		spec.Rates = []float64{l.Rate}
		spec.Arrivals = plan.ArrivalsPoisson
		spec.Concurrency = nil
		if slices.Contains(spec.Experiments, plan.Pool) {
			var rtt time.Duration
			if len(spec.RTT) > 0 {
				rtt = spec.RTT[0]
			}
			spec.Concurrency = []int{poolSize(l.Rate, rtt)}
		}
		if rate > MaxReplayRate {
			l.Notes = append(l.Notes, fmt.Sprintf("the observed %s connections/s is more than this machine replays beside its server: %s offers %d/s (Poisson arrivals); CPU per connection is what transfers", num3(rate), who, MaxReplayRate))
		}
	}
	return l
}

// labSpec is a connect run against lab (a --lab server, or the built-in
// one), closed loop, one connection at a time, sized by o.
func labSpec(lab string, o ReplayOptions) plan.Spec {
	spec := plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Workload: plan.WorkloadPing,
		Duration: cmp.Or(o.Duration, DefaultReplayDuration), Trials: cmp.Or(o.Trials, DefaultReplayTrials), Concurrency: []int{1},
		Tables: 1, Rows: 100} // ping reads no table: the least a lab server is filled with
	if lab == plan.Builtin {
		spec.Target, spec.Workload = plan.Builtin, ""
	} else {
		spec.Lab = lab
	}
	return spec
}

// nativeStack is the C client stack (--client) of each engine over
// OpenSSL, what a capture's OpenSSL ClientHellos most likely came from.
var nativeStack = map[string]string{"postgres": "libpq", "redis": "hiredis", "http": "curl", "mysql": "libmariadb"}

// replayClient says which client stack the replay uses, and why: Go's by
// default, since a stack other than Go's replays closed loops of one
// operation per connection only, without direct TLS or a chosen key
// share (plan's notYet), and reports no phases; chosen (--client), the
// stack and what it cannot replay.
func replayClient(p *profile, chosen string) string {
	const goStack = "go (tlsbench's own drivers)"
	stack, ok := nativeStack[p.Engine]
	if chosen != "" {
		out := chosen + " (--client): client CPU is " + chosen + "'s"
		switch {
		case p.ClientTLS == "OpenSSL" && chosen == stack:
			out += "; the capture's ClientHellos are OpenSSL's (they offer X448), as " + stack + "'s are"
		case p.ClientTLS != "":
			out += "; the capture's ClientHellos look like " + p.ClientTLS + "'s"
		}
		return out
	}
	switch {
	case p.ClientTLS == "OpenSSL" && ok:
		return goStack + ": the capture's ClientHellos are OpenSSL's (they offer X448), as " + stack + "'s would be (--client " + stack + " replays through it, closed loop, without direct TLS, a chosen key share or round trips); client CPU is Go's, not your client's"
	case p.ClientTLS == "Go crypto/tls":
		return goStack + ": the capture's ClientHellos are Go's, as the replay's"
	}
	return goStack + ": the capture does not show which client stack made its connections; client CPU is Go's, not your client's"
}

// sels are the changes' variants, in the advice's order.
func (r *Replay) sels() []sel {
	var out []sel
	for _, s := range r.to {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b sel) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Pick keeps the cells of the replay's matrix it measures: now and each
// change's connections, and where pooling is replayed, a pool of now's.
func (r *Replay) Pick(e plan.Experiment, v plan.Variant) bool {
	if e == plan.Pool {
		return r.pooled() && r.now.is(v)
	}
	if r.now.is(v) {
		return true
	}
	for _, s := range r.to {
		if s.is(v) {
			return true
		}
	}
	return false
}

// pooled reports whether the replay measures pooling.
func (r *Replay) pooled() bool {
	return slices.ContainsFunc(r.sels(), func(s sel) bool { return s.perConn == -1 })
}

// poolSize is the connections of the replay's pool at rate operations a
// second over rtt: twice those its operations keep busy at once, at
// least 2 and at most 16, so that an operation seldom waits for one.
func poolSize(rate float64, rtt time.Duration) int {
	return min(16, max(2, int(math.Ceil(2*rate*max(rtt, time.Millisecond).Seconds()))))
}

// replayed is s as a lab run (a replay, a calibration) runs it, with the
// group as --group names it: a HelloRetryRequest comes from the client's
// default offer (Go's, which PostgreSQL 15 answers with one), none from
// offering the group the server chose; a group Go does not offer is left
// to its default offer too.
func (p *profile) replayed(s sel) sel {
	if s.tls == "off" {
		return sel{tls: "off", perConn: s.perConn}
	}
	g, ok := plan.GroupName(s.group)
	curve, ecdsa := keyCurve[s.key]
	switch {
	case s.helloRetry == "yes" || !ok:
		s.group = ""
	case s.tls == "1.2" && g == plan.GroupX25519MLKEM768:
		s.group = "" // a TLS 1.3 group
	case s.tls == "1.2" && ecdsa && g != curve:
		// TLS 1.2's supported groups bound the ECDSA certificate's curve
		// too (RFC 8422): offering X25519 alone, a client refuses a P-256
		// key, and OpenSSL's servers fail the handshake. Go's default
		// offer has both, and negotiates the group the capture did.
		s.group = ""
	default:
		s.group = g
	}
	s.helloRetry = ""
	return s
}

// keyCurve is the curve of an ECDSA key type, as --group names it.
var keyCurve = map[string]string{"ecdsa-p256": plan.GroupP256, "ecdsa-p384": plan.GroupP384}

// is reports whether v is the variant s names.
func (s sel) is(v plan.Variant) bool {
	if s.tls == "off" || v.Plain() {
		return s.tls == "off" && v.Plain()
	}
	return v.TLS == s.tls && v.Key == s.key && v.Resume == (s.resume == "on") && v.Group == s.group &&
		(v.Negotiation == plan.NegotiationDirect) == (s.negotiation == plan.NegotiationDirect)
}

// profileOf is a recorded profile as the changes read it.
func profileOf(rp result.Profile) *profile {
	p := &profile{Profile: rp}
	if len(rp.Versions) > 0 {
		p.version = rp.Versions[0].Name
	}
	if len(rp.Groups) > 0 {
		p.group = rp.Groups[0].Name
	}
	return p
}

// Info is what the replay ran, for the result.
func (r *Replay) Info() result.Replay { return r.info }

// ErrNoReplayTrial is a replay that kept no trial of now's variant.
var ErrNoReplayTrial = errors.New("the replay kept no trial of the variant like the capture")

// Confirm fills each change of a the replay measures with what res (its
// run) measured: the
// paired saving of now against the change's variant, scaled to the share
// of the profile's connections the change changes, as measured figures
// beside the predicted ones, with the error of the predicted saving.
func (r *Replay) Confirm(a *result.Advised, res *result.Result) error {
	info := r.info
	info.Variants = nil
	for _, v := range res.Variants {
		info.Variants = append(info.Variants, v.ID)
	}
	if s := res.Target.Server; s != nil {
		info.Server = strings.TrimSpace(s.Software + " " + s.Version)
	}
	info.Notes = append(info.Notes, res.Warnings...)
	a.Replays = append(a.Replays, info)
	ids := map[string]plan.Variant{}
	for _, v := range res.Variants {
		ids[v.ID] = v
	}
	byRound := func(s sel) map[int]result.Trial {
		out := map[int]result.Trial{}
		for _, t := range res.Trials {
			if v, ok := ids[t.Variant]; ok && t.Experiment == plan.Connect && t.Conns > 0 && s.is(v) {
				out[t.Round] = t
			}
		}
		return out
	}
	now := byRound(r.now)
	if len(now) == 0 {
		return ErrNoReplayTrial
	}
	pool := map[int]result.Trial{}
	for _, t := range res.Trials {
		if v, ok := ids[t.Variant]; ok && t.Experiment == plan.Pool && t.Ops > 0 && r.now.is(v) {
			pool[t.Round] = t
		}
	}
	for i := range a.Advice {
		c := &a.Advice[i]
		if why, ok := r.skipped[c.Change]; ok {
			c.Unmeasured = why
			continue
		}
		to, ok := r.to[c.Change]
		if !ok {
			continue
		}
		share := float64(c.Conns) / float64(a.Profile.Conns)
		if to.perConn == -1 {
			confirmPool(c, now, pool, r.info.PerConn, share, a.Profile.Rate.Mean)
			continue
		}
		after := byRound(to)
		if len(after) == 0 {
			c.Unmeasured = "the replay kept no trial of " + to.String()
			continue
		}
		var nowTs, toTs []result.Trial
		for round, t := range now {
			if u, ok := after[round]; ok {
				nowTs, toTs = append(nowTs, t), append(toTs, u)
			}
		}
		confirmFigures(c, nowTs, toTs, share, a.Profile.Rate.Mean)
	}
	return nil
}

// metric is one figure per connection of a replay trial, false where the
// trial has none.
type metric func(result.Trial) (float64, bool)

func perConn(f func(result.Trial) float64) metric {
	return func(t result.Trial) (float64, bool) {
		v := f(t)
		return v / float64(t.Conns), v > 0
	}
}

var (
	replaySetup = orConn(phaseSum(func(string) bool { return true }, func(p result.Phase) float64 { return p.Latency.Mean }))
	replayTrips = phaseSum(func(string) bool { return true }, func(p result.Phase) float64 { return p.RoundTrips.Mean })
	p95Of       = func(t result.Trial) (float64, bool) {
		if t.Open != nil {
			return t.Open.Service.P95, t.Open.Service.Count > 0
		}
		return t.Latency.P95, t.PerConn <= 1 && t.Latency.Count > 0
	}
	serverOf = perConn(serverMS)
	clientOf = perConn(clientMS)
	bytesOf  = perConn(bytesMoved)
)

// A trial's totals: server and client CPU, ms, and bytes both ways.
var (
	serverMS   = func(t result.Trial) float64 { return ms(t.ServerCPU) }
	clientMS   = func(t result.Trial) float64 { return ms(t.ClientCPU) }
	bytesMoved = func(t result.Trial) float64 { return float64(t.BytesSent + t.BytesReceived) }
)

// orConn is m, or for a trial without phases (a client stack's, which
// reports each connection's time only) a connection's mean time.
func orConn(m metric) metric {
	return func(t result.Trial) (float64, bool) {
		if len(t.Phases) > 0 {
			return m(t)
		}
		return t.Latency.Mean, t.PerConn <= 1 && t.Latency.Count > 0
	}
}

// phaseSum sums f over a trial's phases but close that keep selects: a
// connection's time (or round trips) up to its close, as the profile's
// setup counts it.
func phaseSum(keep func(string) bool, f func(result.Phase) float64) metric {
	return func(t result.Trial) (float64, bool) {
		var sum float64
		n := 0
		for _, p := range t.Phases {
			if p.Name != "close" && keep(p.Name) {
				sum += f(p)
				n++
			}
		}
		return sum, n > 0
	}
}

// saving is now's figure minus the change's, paired by round: its mean
// and 95% interval over rounds, and now's mean.
func saving(now, to []result.Trial, m metric) (saved, nowMean stats.Summary, ok bool) {
	var diffs, base []float64
	for i := range now {
		x, okX := m(now[i])
		y, okY := m(to[i])
		if okX && okY {
			diffs, base = append(diffs, x-y), append(base, x)
		}
	}
	return stats.Summarize(diffs), stats.Summarize(base), len(diffs) > 0
}

func confirmFigures(c *result.Change, now, to []result.Trial, share, rate float64) {
	if s, _, ok := saving(now, to, replayTrips); ok {
		c.RoundTripsMeasured = f64(round3(share * s.Mean))
	}
	for _, f := range []struct {
		fig *result.Figure
		m   metric
	}{{&c.Setup, replaySetup}, {&c.P95, p95Of}, {&c.Server, serverOf}, {&c.Client, clientOf}, {&c.Bytes, bytesOf}} {
		if s, base, ok := saving(now, to, f.m); ok {
			measured(f.fig, base, share*s.Mean, share*s.CI95)
		}
	}
	derived(c, rate)
}

// confirmPool measures pooling on now's own trials: a pool keeps its
// connections, so the time and round trips it saves are those of their
// setup phases (setupPhases). CPU and bytes, which are not split by
// phase, come from the pool's trials of now's variant (by round): a
// pooled connection costs perConn pooled operations.
func confirmPool(c *result.Change, now, pool map[int]result.Trial, perConn int, share, rate float64) {
	var ts []result.Trial
	for _, t := range now {
		ts = append(ts, t)
	}
	setup := func(name string) bool { return slices.Contains(setupPhases, name) }
	savedTime := phaseSum(setup, func(p result.Phase) float64 { return p.Latency.Mean })
	savedTrips := phaseSum(setup, func(p result.Phase) float64 { return p.RoundTrips.Mean })
	var times, trips, base []float64
	for _, t := range ts {
		x, ok1 := savedTime(t)
		n, ok2 := savedTrips(t)
		b, ok3 := replaySetup(t)
		if ok1 && ok2 && ok3 {
			times, trips, base = append(times, x), append(trips, n), append(base, b)
		}
	}
	if len(times) == 0 {
		c.Unmeasured = "the replay's trials have no phases"
		return
	}
	s, n := stats.Summarize(times), stats.Summarize(trips)
	c.RoundTripsMeasured = f64(round3(share * n.Mean))
	measured(&c.Setup, stats.Summarize(base), share*s.Mean, share*s.CI95)
	for _, f := range []struct {
		fig *result.Figure
		m   func(result.Trial) float64
	}{{&c.Server, serverMS}, {&c.Client, clientMS}, {&c.Bytes, bytesMoved}} {
		var diffs, base []float64
		for round, t := range now {
			p, ok := pool[round]
			if !ok || f.m(t) <= 0 || f.m(p) <= 0 {
				continue
			}
			x := f.m(t) / float64(t.Conns)
			diffs, base = append(diffs, x-f.m(p)/float64(p.Ops)*float64(perConn)), append(base, x)
		}
		if len(diffs) > 0 {
			d := stats.Summarize(diffs)
			measured(f.fig, stats.Summarize(base), share*d.Mean, share*d.CI95)
		}
	}
	derived(c, rate)
}

// measured fills f's measured figure from the saving the replay measured
// (its interval ci): now less the saving, now being the prediction's
// (observed, or the calibration's) or, where the prediction has none,
// the replay's own; error_pct is the predicted saving's error against
// the measured one.
func measured(f *result.Figure, replayNow stats.Summary, saved, savedCI float64) {
	if f.Now == nil {
		f.Now, f.NowCI = f64(replayNow.Mean), ci(replayNow.CI95)
	}
	f.Measured, f.MeasuredCI = f64(*f.Now-saved), ci(savedCI)
	f.ErrorPct = errorPct(*f)
}

// errorPct is the measured saving's difference from the predicted one,
// in percent of the predicted (the "measured: 1.7 ms (−6%)" of a
// predicted 1.8): nil without both, or where next to nothing was
// predicted saved (under 1% of now: a loopback round trip), of which a
// percentage says nothing.
func errorPct(f result.Figure) *float64 {
	if f.Now == nil || f.Predicted == nil || f.Measured == nil {
		return nil
	}
	pred, meas := *f.Now-*f.Predicted, *f.Now-*f.Measured
	if math.Abs(pred) <= 0.01*math.Abs(*f.Now) || pred == 0 {
		return nil
	}
	return f64(math.Round((meas-pred)/math.Abs(pred)*1000) / 10)
}

// derived fills the figures that follow from the measured server CPU:
// cores at the observed rate and new connections per second per core.
func derived(c *result.Change, rate float64) {
	s := c.Server
	if s.Measured == nil {
		return
	}
	k := rate / 1000
	if c.Cores.Now == nil {
		c.Cores.Now = f64(*s.Now * k)
	}
	c.Cores.Measured = f64(*s.Measured * k)
	if s.MeasuredCI != nil {
		c.Cores.MeasuredCI = f64(*s.MeasuredCI * k)
	}
	c.Cores.ErrorPct = errorPct(c.Cores)
	if *s.Measured > 0 {
		if c.Capacity.Now == nil && *s.Now > 0 {
			c.Capacity.Now = f64(1000 / *s.Now)
		}
		c.Capacity.Measured = f64(1000 / *s.Measured)
		if s.MeasuredCI != nil {
			c.Capacity.MeasuredCI = f64(1000 * *s.MeasuredCI / (*s.Measured * *s.Measured))
		}
		c.Capacity.ErrorPct = errorPct(c.Capacity)
	}
}

func addOnce[T comparable](list *[]T, v T) {
	if !slices.Contains(*list, v) {
		*list = append(*list, v)
	}
}

// num3 writes x with at most 3 decimals.
func num3(x float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}
