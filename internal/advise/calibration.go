package advise

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// sel selects a calibration's variants by what they ran and negotiated;
// a field left "" matches any.
type sel struct {
	tls, key, resume, group, negotiation, helloRetry string
	// perConn: 0 one operation per connection; -1 the most the
	// calibration ran per connection (a pool's reuse).
	perConn int
}

// like is the variant like what was observed: its TLS version, server
// key, resumption and PostgreSQL's negotiation.
func (p *profile) like() sel {
	s := sel{tls: "off"}
	if p.TLSConns == 0 {
		return s
	}
	s.tls, s.key, s.resume = strings.TrimPrefix(p.version, "TLS "), p.ServerKey, "off"
	if p.Resumed == p.TLSConns {
		s.resume = "on"
	}
	// The group the server chose, and whether it first asked for another
	// key share: a calibration cell negotiates them as the capture did
	// (Go's default offer would add its hybrid key share and, on a server
	// without it, a HelloRetryRequest of its own).
	s.group, s.helloRetry = p.group, "no"
	if p.HelloRetries*2 > p.TLSConns {
		s.helloRetry = "yes"
	}
	if p.Engine == "postgres" {
		s.negotiation = "postgres"
		if p.SSLRequests == 0 {
			s.negotiation = "direct"
		}
	}
	return s
}

func (s sel) String() string {
	if s.tls == "off" {
		return "plain"
	}
	parts := []string{"tls" + s.tls}
	for _, f := range []struct{ v, label string }{{s.key, ""}, {s.group, "group "}, {s.resume, "resume "}, {s.negotiation, "negotiation "}, {s.helloRetry, "HelloRetryRequest "}} {
		if f.v != "" && (f.label != "HelloRetryRequest " || s.tls == "1.3") {
			parts = append(parts, f.label+f.v)
		}
	}
	switch s.perConn {
	case -1:
		parts = append(parts, "many operations per connection (--per-conn)")
	case 0:
	default:
		parts = append(parts, fmt.Sprintf("per-conn %d", s.perConn))
	}
	return strings.Join(parts, " ")
}

// calibration is a lab connect run whose CPU per connection the advice's
// CPU figures come from.
type calibration struct {
	r      *result.Result
	info   result.Calibration
	engine string
}

// engineOfSpec names the engine a run measured as a driver does.
func engineOfSpec(s plan.Spec) string {
	if s.Lab != "" {
		e, _, _ := strings.Cut(s.Lab, ":")
		if e == "mariadb" {
			return "mysql"
		}
		return e
	}
	t, err := plan.ParseTarget(s.Target)
	if err != nil {
		return ""
	}
	if e := t.Engine(); e != plan.Builtin {
		return e
	}
	return "http"
}

// newCalibration checks that r is a connect run with server CPU.
func newCalibration(r *result.Result, source string) (*calibration, error) {
	name := filepath.Base(source)
	if !slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return t.Experiment == plan.Connect && t.ServerCPU > 0 }) {
		return nil, fmt.Errorf("--calibration %s has no connect trial with server CPU: give the result of tlsbench connect --lab ENGINE (a server tlsbench starts, whose CPU it meters)", name)
	}
	c := &calibration{r: r, engine: engineOfSpec(r.Spec)}
	c.info = result.Calibration{Source: name, Engine: c.engine, Started: r.Started.UTC().Format(time.RFC3339)}
	if len(r.Spec.Rates) > 0 {
		c.info.Rate = r.Spec.Rates[0]
	}
	if s := r.Target.Server; s != nil {
		c.info.Server = strings.TrimSpace(s.Software + " " + s.Version)
	}
	return c, nil
}

// trials are the calibration's trials s selects, of Go's client without
// a tunnel: connect trials of one operation per connection or, for a
// pool (s.perConn -1), its pool's trials, else (an older calibration)
// the connect trials of the most operations per connection it ran. Of
// those, the ones at the emulated RTT nearest rtt (ms): a connection's
// CPU depends on it (load); and of those, the lowest concurrency.
func (c *calibration) trials(s sel, rtt float64) []result.Trial {
	vars := map[string]plan.Variant{}
	for _, v := range c.r.Variants {
		vars[v.ID] = v
	}
	pick := func(keep func(result.Trial) bool) []result.Trial {
		var out []result.Trial
		for _, t := range c.r.Trials {
			v, ok := vars[t.Variant]
			if ok && t.Ops > 0 && v.Client == "" && v.Tunnel == "" && (v.ClientCert == "" || v.ClientCert == "off") && s.matches(v, t) && keep(t) {
				out = append(out, t)
			}
		}
		return out
	}
	var out []result.Trial
	if s.perConn == -1 {
		out = pick(func(t result.Trial) bool { return t.Experiment == plan.Pool })
		if len(out) == 0 {
			most := 1
			for _, t := range c.r.Trials {
				most = max(most, t.PerConn)
			}
			out = pick(func(t result.Trial) bool { return t.Experiment == plan.Connect && most > 1 && t.PerConn == most })
		}
	} else {
		out = pick(func(t result.Trial) bool { return t.Experiment == plan.Connect && t.PerConn <= 1 })
	}
	if len(out) == 0 {
		return nil
	}
	near := c.rttNear(rtt)
	out = slices.DeleteFunc(out, func(t result.Trial) bool { return ms(vars[t.Variant].RTT) != near })
	low := slices.MinFunc(out, func(a, b result.Trial) int { return a.Concurrency - b.Concurrency }).Concurrency
	return slices.DeleteFunc(out, func(t result.Trial) bool { return t.Concurrency != low })
}

// rttNear is the emulated RTT (ms, 0: the bare link) of the
// calibration's variants nearest rtt.
func (c *calibration) rttNear(rtt float64) float64 {
	if len(c.r.Variants) == 0 {
		return 0
	}
	return ms(slices.MinFunc(c.r.Variants, func(a, b plan.Variant) int {
		return cmp.Compare(math.Abs(ms(a.RTT)-rtt), math.Abs(ms(b.RTT)-rtt))
	}).RTT)
}

func (s sel) matches(v plan.Variant, t result.Trial) bool {
	if s.tls == "off" || v.Plain() {
		return s.tls == "off" && v.Plain()
	}
	n := t.Negotiated
	switch {
	case s.tls != "" && (n == nil || n.Version != "TLS "+s.tls):
	case s.key != "" && v.Key != s.key:
	case s.resume != "" && v.Resume != (s.resume == "on"):
	case s.group != "" && (n == nil || n.Group != plan.GroupLabelOf(s.group)):
	case s.negotiation != "" && (v.Negotiation == plan.NegotiationDirect) != (s.negotiation == "direct"):
	case s.helloRetry != "" && (n == nil || n.HelloRetry != (s.helloRetry == "yes")):
	default:
		return true
	}
	return false
}

// perConn summarizes f per operation over trials, ms: its mean and
// interval over trials.
func perOp(ts []result.Trial, f func(result.Trial) float64) (stats.Summary, bool) {
	var xs []float64
	for _, t := range ts {
		if v := f(t); v > 0 {
			xs = append(xs, v/float64(t.Ops))
		}
	}
	return stats.Summarize(xs), len(xs) > 0
}

// predict fills out's CPU figures, and bytes where the protocol does not
// fix them, from the calibration's from and to variants: only the share
// of the profile's connections the change changes moves.
func (c *calibration) predict(out *result.Change, p *profile, from, to sel) {
	a, b := c.trials(from, p.RTT.P50), c.trials(to, p.RTT.P50)
	// A cell lacking, the nearest the calibration has: the observed group
	// and HelloRetryRequest let go where the change keeps them (never
	// where it changes them: both cells would then be one), and said.
	loose := func(s sel) sel {
		if from.group == to.group {
			s.group = ""
		}
		if from.helloRetry == to.helloRetry {
			s.helloRetry = ""
		}
		return s
	}
	for _, m := range []struct {
		ts *[]result.Trial
		s  sel
	}{{&a, from}, {&b, to}} {
		if len(*m.ts) > 0 || loose(m.s) == m.s {
			continue
		}
		if ts := c.trials(loose(m.s), p.RTT.P50); len(ts) > 0 {
			*m.ts = ts
			out.Substituted = append(out.Substituted, substitute(m.s, ts))
		}
	}
	for _, m := range []struct {
		ts []result.Trial
		s  sel
	}{{a, from}, {b, to}} {
		if len(m.ts) == 0 {
			out.Missing = append(out.Missing, m.s.String())
		}
	}
	if len(a) == 0 || len(b) == 0 {
		return
	}
	share := float64(out.Conns) / float64(p.Conns)
	cpu := func(f func(result.Trial) time.Duration) func(result.Trial) float64 {
		return func(t result.Trial) float64 { return float64(f(t)) / float64(time.Millisecond) }
	}
	if out.RoundTripsSaved == 0 && *out.Setup.Predicted == *out.Setup.Now {
		// A change of no round trip (the server's key, the hybrid) moves
		// the time signing and verifying take on the handshake's path,
		// and what waiting for a busier CPU adds: the two cells' setup
		// time, at the capture's load, paired by round.
		if d, ok := pairedBy(a, b, replaySetup); ok {
			out.Setup.Predicted = f64(*out.Setup.Now - share*d.Mean)
			out.Setup.PredictedCI = ci(math.Hypot(orZero(out.Setup.PredictedCI), share*d.CI95))
			out.P95.Predicted = f64(*out.P95.Now - share*d.Mean)
			out.Model += "; the setup time it saves is the calibration's cells' difference in theirs (at the capture's load)"
		}
	}
	if fig, level, ok := moved(a, b, cpu(func(t result.Trial) time.Duration { return t.ServerCPU }), share); ok {
		out.Server = fig
		rate := p.Rate.Mean / 1000
		out.Cores = scaled(out.Server, rate)
		out.Capacity = capacity(level)
	}
	if fig, _, ok := moved(a, b, cpu(func(t result.Trial) time.Duration { return t.ClientCPU }), share); ok {
		out.Client = fig
	}
	if out.Bytes.Predicted == nil {
		if x, y, ok := both(a, b, func(t result.Trial) float64 { return float64(t.BytesSent + t.BytesReceived) }); ok {
			d := y.Mean - x.Mean
			switch {
			case to.perConn == -1:
				// A pooled connection's operations move their own bytes
				// only, the calibration's each: not a difference from a
				// connection's, which another client's handshake would
				// make negative.
				d = y.Mean*max(1, p.Ops.Mean) - *out.Bytes.Now
			case *out.Bytes.Now+d < 0:
				// The calibration's client moves more bytes in now's cell
				// than the capture's did (Go's post-quantum key share
				// where the capture's client offered X25519): the
				// difference would leave fewer than none.
				d = y.Mean - *out.Bytes.Now
				out.Substituted = append(out.Substituted, fmt.Sprintf("bytes: the calibration's client moves %.0f bytes per connection in %s, more than the capture's %.0f in all: the prediction is %s's own %.0f", x.Mean, from, *out.Bytes.Now, to, y.Mean))
			}
			out.Bytes.Predicted = f64(*out.Bytes.Now + share*d)
		}
	}
}

// substitute says which of the calibration's cells stood in for want, and
// what they negotiated.
func substitute(want sel, ts []result.Trial) string {
	var ids, got []string
	for _, t := range ts {
		addOnce(&ids, t.Variant)
		if n := t.Negotiated; n != nil {
			g := "group " + cmp.Or(n.Group, "none")
			if n.HelloRetry {
				g += " after a HelloRetryRequest"
			}
			addOnce(&got, g)
		}
	}
	out := fmt.Sprintf("the calibration has no cell %s; used %s instead", want, strings.Join(ids, ", "))
	if len(got) > 0 {
		out += " (it negotiated " + strings.Join(got, ", ") + ")"
	}
	return out
}

func both(a, b []result.Trial, f func(result.Trial) float64) (x, y stats.Summary, ok bool) {
	x, okA := perOp(a, f)
	y, okB := perOp(b, f)
	return x, y, okA && okB
}

// moved is the figure now (from's cells: the calibration's variant like
// the observed) and predicted (share of the connections moved to to's),
// f per operation. The predicted saving is paired round by round, as the
// calibration interleaved its cells: a round's state of a shared machine
// (its load, which of two scheduler states its processes landed in) moves
// both cells of the round alike, and its difference, not each cell's
// spread, is what the saving's interval is of. PredictedCI is that
// saving's interval (share of it); level is the same figure with the
// predicted level's own interval instead, which capacity inverts. Cells
// without a round in common are differenced unpaired.
func moved(a, b []result.Trial, f func(result.Trial) float64, share float64) (fig, level result.Figure, ok bool) {
	x, okA := perOp(a, f)
	y, okB := perOp(b, f)
	if !okA || !okB {
		return fig, level, false
	}
	d, paired := pairedSaving(a, b, f)
	if !paired {
		d = stats.Summary{Mean: x.Mean - y.Mean, CI95: math.Hypot(x.CI95, y.CI95)}
	}
	fig = result.Figure{Now: f64(x.Mean), NowCI: ci(x.CI95), Predicted: f64(x.Mean - share*d.Mean)}
	level = fig
	if !math.IsNaN(d.CI95) {
		fig.PredictedCI = f64(share * d.CI95)
	}
	if !math.IsNaN(x.CI95) && !math.IsNaN(y.CI95) {
		level.PredictedCI = f64(math.Hypot((1-share)*x.CI95, share*y.CI95))
	}
	return fig, level, true
}

// pairedSaving is a's figure per operation less b's, round by round over
// the rounds both ran (a round's trials of one cell summed): its mean and
// 95% interval over those rounds; false with fewer than two such rounds.
func pairedSaving(a, b []result.Trial, f func(result.Trial) float64) (stats.Summary, bool) {
	type sum struct{ v, ops float64 }
	byRound := func(ts []result.Trial) map[int]sum {
		out := map[int]sum{}
		for _, t := range ts {
			if v := f(t); v > 0 {
				s := out[t.Round]
				out[t.Round] = sum{s.v + v, s.ops + float64(t.Ops)}
			}
		}
		return out
	}
	x, y := byRound(a), byRound(b)
	var diffs []float64
	for _, round := range slices.Sorted(maps.Keys(x)) {
		if sy, ok := y[round]; ok {
			diffs = append(diffs, x[round].v/x[round].ops-sy.v/sy.ops)
		}
	}
	if len(diffs) < 2 {
		return stats.Summary{}, false
	}
	return stats.Summarize(diffs), true
}

// pairedBy is a's figure m less b's, round by round over the rounds both
// ran (a round's first trial of each): its mean and 95% interval; false
// with fewer than two such rounds.
func pairedBy(a, b []result.Trial, m metric) (stats.Summary, bool) {
	first := func(ts []result.Trial) map[int]float64 {
		out := map[int]float64{}
		for _, t := range ts {
			if _, seen := out[t.Round]; !seen {
				if v, ok := m(t); ok {
					out[t.Round] = v
				}
			}
		}
		return out
	}
	x, y := first(a), first(b)
	var diffs []float64
	for _, round := range slices.Sorted(maps.Keys(x)) {
		if v, ok := y[round]; ok {
			diffs = append(diffs, x[round]-v)
		}
	}
	if len(diffs) < 2 {
		return stats.Summary{}, false
	}
	return stats.Summarize(diffs), true
}

// orZero is *p, 0 where p is nil.
func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// scaled is f times k, intervals too.
func scaled(f result.Figure, k float64) result.Figure {
	mul := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		return f64(*p * k)
	}
	return result.Figure{Now: mul(f.Now), NowCI: mul(f.NowCI), Predicted: mul(f.Predicted), PredictedCI: mul(f.PredictedCI)}
}

// capacity is the new connections per second one server core signs and
// serves at the CPU per connection f (ms), its interval by the delta
// method.
func capacity(f result.Figure) result.Figure {
	inv := func(v, c *float64) (*float64, *float64) {
		if v == nil || *v <= 0 {
			return nil, nil
		}
		r := f64(1000 / *v)
		if c == nil {
			return r, nil
		}
		return r, f64(1000 * *c / (*v * *v))
	}
	var out result.Figure
	out.Now, out.NowCI = inv(f.Now, f.NowCI)
	out.Predicted, out.PredictedCI = inv(f.Predicted, f.PredictedCI)
	return out
}

// labOf is the lab engine (or target) a calibration of engine runs on.
var labOf = map[string]string{"postgres": "--lab postgres", "mysql": "--lab mariadb", "redis": "--lab redis", "mongodb": "--lab mongodb", "http": "builtin"}

// calibrateCommand is the tlsbench connect command whose result, given as
// --calibration, has the variants the advice's CPU figures need; "" for
// an engine the lab has not.
func calibrateCommand(p *profile, advice []result.Change, pairs [][2]sel) string {
	target, ok := labOf[p.Engine]
	if !ok {
		return ""
	}
	var sels []sel
	for i, a := range advice {
		if !a.NotApplicable {
			sels = append(sels, p.replayed(pairs[i][0]), p.replayed(pairs[i][1]))
		}
	}
	d := dimsOf(p.Engine, sels)
	cmd := []string{"tlsbench connect", target}
	if slices.Contains(d.negotiation, plan.NegotiationDirect) {
		cmd[1] = "--lab postgres:18" // direct TLS needs PostgreSQL 17+
	}
	cmd = append(cmd, d.flags()...)
	return strings.Join(append(cmd, "--trials 5 -o calibration.json"), " ")
}

// calibratePerConn is the operations per connection of the pooled cells
// of the calibration command advise prints (--per-conn 1,N): a pool's
// reuse. advise --lab runs a pool instead (tlsbench pool), at the
// capture's load.
const calibratePerConn = 100

// dims are the variant dimensions a lab run of sels needs (each as
// replayed: groups as --group names them), as connect's flags take them.
type dims struct {
	tls, keys, groups, negotiation []string
	resume                         []bool
	perConn                        bool
}

func dimsOf(engine string, sels []sel) dims {
	var d dims
	for _, s := range sels {
		addOnce(&d.tls, s.tls)
		d.perConn = d.perConn || s.perConn == -1
		if s.tls == "off" {
			continue
		}
		addOnce(&d.keys, s.key)
		addOnce(&d.resume, s.resume == "on")
		addOnce(&d.groups, cmp.Or(s.group, plan.GroupDefault))
		if engine == "postgres" {
			addOnce(&d.negotiation, cmp.Or(s.negotiation, plan.NegotiationPostgres))
		}
	}
	if len(d.groups) == 1 && d.groups[0] == plan.GroupDefault {
		d.groups = nil // Go's own offer, connect's default
	}
	return d
}

// apply sets the dimensions in a spec.
func (d dims) apply(spec *plan.Spec) {
	spec.TLS, spec.Keys, spec.Resume, spec.Groups, spec.Negotiation = d.tls, d.keys, d.resume, d.groups, d.negotiation
}

// flags are the dimensions as connect's flags, defaults left out.
func (d dims) flags() []string {
	tls := slices.Clone(d.tls)
	slices.SortFunc(tls, func(a, b string) int { return slices.Index(plan.TLSModes, a) - slices.Index(plan.TLSModes, b) })
	out := []string{"--tls " + strings.Join(tls, ",")}
	if len(d.keys) > 0 {
		out = append(out, "--key "+strings.Join(d.keys, ","))
	}
	if len(d.resume) > 1 || len(d.resume) == 1 && d.resume[0] {
		var rs []string
		for _, r := range d.resume {
			rs = append(rs, map[bool]string{false: "off", true: "on"}[r])
		}
		out = append(out, "--resume "+strings.Join(rs, ","))
	}
	if len(d.groups) > 0 {
		out = append(out, "--group "+strings.Join(d.groups, ","))
	}
	if len(d.negotiation) > 1 {
		out = append(out, "--negotiation "+strings.Join(d.negotiation, ","))
	}
	if d.perConn {
		out = append(out, fmt.Sprintf("--per-conn 1,%d", calibratePerConn))
	}
	return out
}
