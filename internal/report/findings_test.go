package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// connectOf builds a connect run at c=1 of the named variants of spec,
// from figures per variant, with the cases' drift and noise.
func connectOf(spec plan.Spec, figs map[string]figure) *result.Result {
	spec.Experiments = []plan.Experiment{plan.Connect}
	s, err := plan.New(spec)
	if err != nil {
		panic(err)
	}
	var ids []string
	for _, v := range s.Variants() {
		if _, ok := figs[v.ID]; ok {
			ids = append(ids, v.ID)
		}
	}
	return run(spec, ids, map[plan.Experiment]map[int]map[string]figure{plan.Connect: {1: figs}}, -1)
}

// like is connect figure f with other phases: its latency their sum, its
// rate what one connection at a time makes of it.
func like(f figure, phases ...phase) figure {
	f.phases = phases
	f.lat.Mean = 0
	for _, p := range phases {
		f.lat.Mean += p.ms
	}
	f.rate = 900 / f.lat.Mean
	return f
}

// pgPhases are PostgreSQL's connection phases with the given TLS and auth
// times: with TLS, auth has the StartupMessage's round trip too.
func pgPhases(tls, auth float64) []phase {
	ps := []phase{{"tcp", 0.08, 1}, {"startup", 0.2, 1}}
	if tls > 0 {
		ps = append(ps, phase{"tls-handshake", tls, 1})
		return append(ps, phase{"auth", auth + 0.2, 3}, phase{"query", 0.3, 1}, phase{"close", 0.02, 0})
	}
	return append(ps, phase{"auth", auth, 2}, phase{"query", 0.3, 1}, phase{"close", 0.02, 0})
}

// factsOf lists the facts of type T among the findings of kind k.
func factsOf[T Fact](fs []Finding, k Kind) []T {
	var out []T
	for _, f := range fs {
		if x, ok := f.Fact.(T); ok && f.Kind == k {
			out = append(out, x)
		}
	}
	return out
}

// only is the one fact of type T among the findings of kind k.
func only[T Fact](t *testing.T, fs []Finding, k Kind) T {
	t.Helper()
	xs := factsOf[T](fs, k)
	if len(xs) != 1 {
		var zero T
		t.Fatalf("%d %s facts %T, want 1", len(xs), k, zero)
	}
	return xs[0]
}

// absent checks that no finding of any kind has a fact of type T.
func absent[T Fact](t *testing.T, fs []Finding) {
	t.Helper()
	for _, k := range []Kind{KindCaveat, KindFinding, KindRecommendation} {
		if xs := factsOf[T](fs, k); len(xs) > 0 {
			t.Errorf("%s %T: %+v", k, xs[0], xs[0])
		}
	}
}

// near checks a figure to within tol (NaN only for NaN).
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(want) != math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s: %v, want %v ±%v", what, got, want, tol)
	}
}

// pair checks a contrast's variants, its change in percent (±0.01) and
// whether that change is measurable.
func pair(t *testing.T, c Contrast, from, to string, pct float64, measurable bool) {
	t.Helper()
	if c.From != from || c.To != to {
		t.Errorf("contrast %s -> %s, want %s -> %s", c.From, c.To, from, to)
	}
	near(t, c.To+" vs "+c.From+" %", c.Delta.Pct, pct, 0.01)
	if c.Measurable() != measurable {
		t.Errorf("%s vs %s: measurable %v (%+v)", c.To, c.From, c.Measurable(), c.Delta)
	}
}

// TestFindings checks the facts behind the findings of stored and built
// results: the variants compared, their change with its interval, round
// trips, ms and CPU, and which facts became findings or recommendations
// and which did not. testdata/findings.golden holds their wording.
func TestFindings(t *testing.T) {
	plain := connectFigures["plain"]
	nan := math.NaN()
	tests := []struct {
		name  string
		r     func(t *testing.T) *result.Result
		check func(t *testing.T, fs []Finding)
		// recs is how many recommendations there must be.
		recs int
	}{
		{
			name: "measured connect: keys, versions, resumption",
			r:    file("measured-connect.json"),
			check: func(t *testing.T, fs []Finding) {
				costs := factsOf[ConnectCost](fs, KindFinding)
				if len(costs) != 2 || costs[0].Cheapest || !costs[1].Cheapest {
					t.Fatalf("costs %+v", costs)
				}
				dear, cheap := costs[0], costs[1]
				pair(t, dear.Contrast, "plain", "tls1.3 rsa2048", -90.72, true)
				near(t, "dearest ms", dear.MS, 2.4517, 0.0001)
				near(t, "dearest round trips", dear.RoundTrips, 1, 0)
				near(t, "dearest client CPU", dear.ClientCPU, 0.7499, 0.0001)
				near(t, "dearest server CPU", dear.ServerCPU, 1.6167, 0.0001)
				pair(t, cheap.Contrast, "plain", "tls1.2 ecdsa-p256", -72.86, true)
				near(t, "cheapest ms", cheap.MS, 0.6696, 0.0001)
				near(t, "cheapest round trips", cheap.RoundTrips, 2, 0)

				v := only[VersionChange](t, fs, KindFinding)
				if len(v.Pairs) != 2 {
					t.Fatalf("version pairs %+v", v.Pairs)
				}
				pair(t, v.Pairs[0], "tls1.2 rsa2048", "tls1.3 rsa2048", -17.55, false)
				near(t, "rsa2048 1.2 -> 1.3 CI", v.Pairs[0].Delta.CI95, 28.91, 0.01)
				pair(t, v.Pairs[1], "tls1.2 ecdsa-p256", "tls1.3 ecdsa-p256", -29.75, false)
				near(t, "saved", v.Saved, 1, 0)
				near(t, "local time more", v.LocalMore, 0.4683, 0.0001)
				near(t, "even at", v.EvenAt, 0.4683, 0.0001)

				k := only[KeyChange](t, fs, KindFinding)
				if k.Key != "ecdsa-p256" || k.Ref != "rsa2048" || len(k.Pairs) != 2 {
					t.Fatalf("keys %+v", k)
				}
				pair(t, k.Pairs[0], "tls1.2 rsa2048", "tls1.2 ecdsa-p256", 142.14, true)
				pair(t, k.Pairs[1], "tls1.3 rsa2048", "tls1.3 ecdsa-p256", 105.70, true)
				near(t, "server CPU rsa2048", k.CPURef, 1.5833, 0.0001)
				near(t, "server CPU ecdsa-p256", k.CPUKey, 0.4, 0.0001)

				res := only[Resumption](t, fs, KindFinding)
				if len(res.Pairs) != 4 || !res.SavesRoundTrip {
					t.Fatalf("resumption %+v", res)
				}
				pair(t, res.Pairs[0], "tls1.2 rsa2048", "tls1.2 rsa2048 resume", 383.70, true)
				near(t, "resumed TLS 1.2 round trips", res.Pairs[0].RoundTrips, -1, 0)
				pair(t, res.Pairs[3], "tls1.3 ecdsa-p256", "tls1.3 ecdsa-p256 resume", 17.86, false)

				if p := only[PreferTLS13](t, fs, KindRecommendation); p.Because != SavesRoundTrip || p.RoundTrips != 1 {
					t.Errorf("prefer TLS 1.3: %+v", p)
				}
				u := only[UseKey](t, fs, KindRecommendation)
				if u.Best != "ecdsa-p256" || u.Worst != "rsa2048" {
					t.Errorf("use key %+v", u)
				}
				pair(t, u.Contrast, "tls1.2 ecdsa-p256", "tls1.2 rsa2048", -58.21, true)
				pair(t, only[LetResume](t, fs, KindRecommendation).Best, "tls1.2 rsa2048", "tls1.2 rsa2048 resume", 383.70, true)
				p := only[Pool](t, fs, KindRecommendation)
				pair(t, p.Dearest, "plain", "tls1.3 rsa2048", -90.72, true)
				near(t, "pool: persistent cost", p.Persistent, nan, 0)
				absent[TunnelCost](t, fs)
				absent[HelloRetry](t, fs)
			},
			recs: 4,
		},
		{
			name: "measured postgres: HelloRetryRequest, RSA sizes, auth outweighs TLS",
			r:    file("measured-postgres-connect.json"),
			check: func(t *testing.T, fs []Finding) {
				costs := factsOf[ConnectCost](fs, KindFinding)
				if len(costs) != 2 {
					t.Fatalf("costs %+v", costs)
				}
				pair(t, costs[0].Contrast, "plain", "tls1.3 rsa4096", -57.22, true)
				near(t, "rsa4096 ms", costs[0].MS, 8.6898, 0.0001)
				near(t, "rsa4096 round trips", costs[0].RoundTrips, 3, 0)
				pair(t, costs[1].Contrast, "plain", "tls1.3 rsa1024", -30.58, true)
				near(t, "rsa1024 ms", costs[1].MS, 2.8457, 0.0001)

				l := only[LargestPhase](t, fs, KindFinding)
				if l.Phase != "auth" || l.Plain != "plain" || l.TLS.To != "tls1.3 rsa1024" {
					t.Errorf("largest phase %+v", l)
				}
				near(t, "auth ms", l.MS, 4.4943, 0.0001)
				near(t, "plain connection ms", l.Total, 6.4229, 0.0001)
				if !l.More || l.Diff.N != 10 {
					t.Errorf("auth 4.49 ms against TLS's 2.85 ms, 10 rounds: measurably more, got %+v", l.Diff)
				}

				h := only[HelloRetry](t, fs, KindFinding)
				if !h.Every || len(h.Variants) != 3 || len(h.Groups) != 1 || h.Groups[0] != "P-256" {
					t.Errorf("hello retry %+v", h)
				}
				near(t, "handshake round trips after HRR", h.RoundTrips, 2, 0)
				only[HelloRetry](t, fs, KindRecommendation)

				keys := factsOf[KeyChange](fs, KindFinding)
				if len(keys) != 2 || keys[0].Key != "rsa1024" || keys[1].Key != "rsa4096" {
					t.Fatalf("keys %+v", keys)
				}
				pair(t, keys[0].Pairs[0], "tls1.3 rsa2048", "tls1.3 rsa1024", 5.13, false)
				pair(t, keys[1].Pairs[0], "tls1.3 rsa2048", "tls1.3 rsa4096", -35.41, true)
				near(t, "server CPU rsa4096", keys[1].CPUKey, 15.5196, 0.0001)
				near(t, "server CPU rsa2048", keys[1].CPURef, 10.3637, 0.0001)

				// 1024-bit RSA is never recommended, however fast.
				u := only[UseKey](t, fs, KindRecommendation)
				if u.Best != "rsa2048" || u.Worst != "rsa4096" {
					t.Errorf("use key %+v", u)
				}
				only[Pool](t, fs, KindRecommendation)
				absent[Resumption](t, fs)
				absent[ResumeRefused](t, fs)
			},
			recs: 3,
		},
		{
			name: "measured mtls: what a client certificate adds, against its off twin",
			r:    file("measured-mtls.json"),
			check: func(t *testing.T, fs []Finding) {
				cc := factsOf[ClientCertCost](fs, KindFinding)
				if len(cc) != 2 || cc[0].Key != "rsa2048" || cc[1].Key != "ecdsa-p256" {
					t.Fatalf("client certificate facts %+v", cc)
				}
				pair(t, cc[0].Pairs[0], "tls1.2 rsa2048", "tls1.2 rsa2048 mtls-rsa2048", -34.41, true)
				pair(t, cc[1].Pairs[1], "tls1.3 rsa2048", "tls1.3 rsa2048 mtls-ecdsa-p256", -2.10, false)
				for _, f := range cc {
					near(t, f.Key+" added round trips", f.RoundTrips, 0, 0)
					want := map[string]float64{"1.2": 2, "1.3": 1}
					if len(f.Handshakes) != 2 {
						t.Errorf("%s: handshakes %+v", f.Key, f.Handshakes)
					}
					for _, h := range f.Handshakes {
						near(t, f.Key+" TLS "+h.TLS+" handshake round trips", h.RoundTrips, want[h.TLS], 0)
					}
				}
				// An RSA-2048 CertificateVerify costs the client far more
				// than an ECDSA P-256 one.
				near(t, "rsa2048 client CPU ms", cc[0].ClientCPU, 1.3950, 0.001)
				near(t, "ecdsa-p256 client CPU ms", cc[1].ClientCPU, 0.0824, 0.001)
			},
			recs: 1,
		},
		{
			name: "measured rtt: the model at 20ms and 60ms, measure a tunnel where pooling cannot help",
			r:    file("measured-rtt.json"),
			check: func(t *testing.T, fs []Finding) {
				rtts := factsOf[RTTSetup](fs, KindFinding)
				if len(rtts) != 2 || rtts[0].RTT != 20*time.Millisecond || rtts[1].RTT != 60*time.Millisecond {
					t.Fatalf("rtt facts %+v", rtts)
				}
				at20, at60 := rtts[0], rtts[1]
				if len(at20.Items) != 2 || at20.Items[0].Variant != "tls1.2 ecdsa-p256" || at20.Items[1].Variant != "tls1.3 ecdsa-p256" {
					t.Fatalf("at 20ms %+v", at20.Items)
				}
				near(t, "TLS 1.2 at 20ms, measured", at20.Items[0].Measured, 42.5181, 0.0001)
				near(t, "TLS 1.2 at 20ms, predicted", at20.Items[0].Predicted, 40.7937, 0.0001)
				near(t, "TLS 1.2 round trips", at20.Items[0].RoundTrips, 2, 0)
				near(t, "TLS 1.3 at 20ms, measured", at20.Items[1].Measured, 22.4536, 0.0001)
				near(t, "TLS 1.3 round trips", at20.Items[1].RoundTrips, 1, 0)
				near(t, "model error at 20ms", at20.Within, 0.0374, 0.0001)
				near(t, "TLS 1.2 at 60ms, measured", at60.Items[0].Measured, nan, 0)
				near(t, "TLS 1.2 at 60ms, predicted", at60.Items[0].Predicted, 120.7937, 0.0001)

				v := only[VersionChange](t, fs, KindFinding)
				pair(t, v.Pairs[0], "tls1.2 ecdsa-p256", "tls1.3 ecdsa-p256", -10.39, true)
				pair(t, v.Pairs[1], "tls1.2 ecdsa-p256 rtt20ms", "tls1.3 ecdsa-p256 rtt20ms", 31.40, true)
				near(t, "even at", v.EvenAt, 0.1893, 0.0001)
				if v.At != 60*time.Millisecond {
					t.Errorf("version change modelled at %v", v.At)
				}
				near(t, "saves at 60ms", v.SavesAt, 59.8107, 0.0001)

				p := only[PreferTLS13](t, fs, KindRecommendation)
				if p.Because != BeyondRTT {
					t.Errorf("prefer TLS 1.3: %+v", p)
				}
				near(t, "beyond RTT", p.BeyondMS, 0.1893, 0.0001)
				m := only[MeasureTunnel](t, fs, KindRecommendation)
				if !m.Measured || m.RTT != 20*time.Millisecond || m.Variant != "tls1.2 ecdsa-p256" {
					t.Errorf("measure a tunnel: %+v", m)
				}
				near(t, "measure a tunnel: ms", m.MS, 42.5181, 0.0001)
			},
			recs: 3,
		},
		{
			name: "measured pool: nothing measurable, nothing to recommend",
			r:    file("measured-pool.json"),
			check: func(t *testing.T, fs []Finding) {
				p := only[PersistentSame](t, fs, KindFinding)
				if p.Measurable || p.Tunnelled || len(p.Variants) != 1 || p.Variants[0] != "tls1.3 rsa2048" || len(p.Concurrencies) != 3 {
					t.Errorf("persistent %+v", p)
				}
				absent[PersistentVariant](t, fs)
			},
			recs: 0,
		},
		{
			name: "modelled pool: the same cost everywhere, one range",
			r:    func(*testing.T) *result.Result { return poolRun() },
			check: func(t *testing.T, fs []Finding) {
				p := only[PersistentSame](t, fs, KindFinding)
				if !p.Measurable || len(p.Variants) != 3 {
					t.Errorf("persistent %+v", p)
				}
				near(t, "lowest change", p.Lo, -14.88, 0.01)
				near(t, "highest change", p.Hi, -12.66, 0.01)
			},
			recs: 0,
		},
		{
			name: "connect and pool: pooling weighed against TLS on persistent connections",
			r: func(*testing.T) *result.Result {
				s := fourSpec
				s.Experiments = []plan.Experiment{plan.Connect, plan.Pool}
				return run(s, fourVariants, map[plan.Experiment]map[int]map[string]figure{
					plan.Connect: {1: connectFigures}, plan.Pool: {1: poolFigures(1)}}, -1)
			},
			check: func(t *testing.T, fs []Finding) {
				p := only[Pool](t, fs, KindRecommendation)
				pair(t, p.Dearest, "plain", "tls1.2 rsa2048", -91.44, true)
				near(t, "largest cost on persistent connections, %", p.Persistent, 14.88, 0.01)
				if n := len(factsOf[PersistentSame](fs, KindFinding)); n != 1 {
					t.Errorf("%d persistent findings", n)
				}
			},
			recs: 3,
		},
		{
			name: "measured groups: the post-quantum hybrid against x25519 on the built-in server",
			r:    file("measured-groups.json"),
			check: func(t *testing.T, fs []Finding) {
				g := only[GroupChange](t, fs, KindFinding)
				if g.Group != "x25519mlkem768" || g.Ref != "x25519" || g.HelloRef != 238 || g.HelloGroup != 1422 || g.RetryRef || g.RetryGroup {
					t.Errorf("group change %+v", g)
				}
				pair(t, g.Contrast, "tls1.3 ecdsa-p256 x25519", "tls1.3 ecdsa-p256 x25519mlkem768", -19.52, true)
				near(t, "hybrid: handshake ms more", g.Handshake.Mean, 0.3148, 0.0001)
				near(t, "hybrid: handshake interval", g.Handshake.CI95, 0.1048, 0.0001)
				near(t, "hybrid: round trips", g.Contrast.RoundTrips, 0, 0)
				near(t, "hybrid: client CPU", g.Contrast.ClientCPU, 0.2664, 0.0001)
				near(t, "hybrid: server CPU", g.Contrast.ServerCPU, 0.1371, 0.0001)
				// Plain is found for variants with a group.
				if len(factsOf[ConnectCost](fs, KindFinding)) != 2 {
					t.Errorf("connect costs %+v", factsOf[ConnectCost](fs, KindFinding))
				}
				absent[HelloRetry](t, fs)
			},
			recs: 1,
		},
		{
			name: "measured postgres groups: p256 saves the HelloRetryRequest of the default offer",
			r:    file("measured-postgres-groups.json"),
			check: func(t *testing.T, fs []Finding) {
				g := only[GroupChange](t, fs, KindFinding)
				if g.Group != "p256" || g.Ref != "" || g.HelloRef != 1455 || g.HelloGroup != 256 || !g.RetryRef || g.RetryGroup {
					t.Errorf("group change %+v", g)
				}
				pair(t, g.Contrast, "tls1.3 ecdsa-p256", "tls1.3 ecdsa-p256 p256", 2.31, false) // rounds 1 and 10 left out: a stall each
				near(t, "p256: round trips", roundRT(g.Contrast.RoundTrips), -1, 0)
				near(t, "p256: handshake ms", g.Handshake.Mean, -0.6410, 0.0001)
				near(t, "p256: handshake interval", g.Handshake.CI95, 0.6286, 0.0001)
				h := only[HelloRetry](t, fs, KindFinding)
				if len(h.Variants) != 1 || h.Variants[0] != "tls1.3 ecdsa-p256" {
					t.Errorf("hello retry %+v", h)
				}
				// Twice the mean, but TLS's cost swings from -5.8 to +11 ms
				// round by round: not measurably more.
				l := only[LargestPhase](t, fs, KindFinding)
				if l.Phase != "auth" || l.More {
					t.Errorf("largest phase %+v", l)
				}
				near(t, "auth against TLS, by round", l.Diff.Mean, 4.9324, 0.0001)
			},
			recs: 2,
		},
		{
			name: "README's PostgreSQL run: authentication about as much as TLS, not more",
			r:    file("readme-postgres.json"),
			check: func(t *testing.T, fs []Finding) {
				c := only[ConnectCost](t, fs, KindFinding)
				pair(t, c.Contrast, "plain", "tls-auto", -34.12, true)
				l := only[LargestPhase](t, fs, KindFinding)
				if l.Phase != "auth" || l.More || l.Diff.N != 3 {
					t.Errorf("largest phase %+v", l)
				}
				near(t, "auth ms", l.MS, 1.9025, 0.0001)
				near(t, "auth against TLS, by round", l.Diff.Mean, 0.0303, 0.0001)
				only[HelloRetry](t, fs, KindFinding)
			},
			recs: 2,
		},
		{
			name: "modelled groups: the hybrid is never the reference; no ClientHello size, one trial",
			r: func(*testing.T) *result.Result {
				f := connectFigures["tls1.3 ecdsa-p256"]
				slow := f
				slow.rate *= 0.8
				spec := plan.Spec{Target: plan.Builtin, TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"},
					Groups: []string{"x25519mlkem768", "x25519"}, Trials: 1}
				return connectOf(spec, map[string]figure{
					"plain": plain, "tls1.3 ecdsa-p256 x25519mlkem768": slow, "tls1.3 ecdsa-p256 x25519": f})
			},
			check: func(t *testing.T, fs []Finding) {
				g := only[GroupChange](t, fs, KindFinding)
				if g.Group != "x25519mlkem768" || g.Ref != "x25519" || g.HelloRef != 0 || g.Handshake.N != 1 {
					t.Errorf("group change %+v", g)
				}
				pair(t, g.Contrast, "tls1.3 ecdsa-p256 x25519", "tls1.3 ecdsa-p256 x25519mlkem768", -20.16, false)
			},
			recs: 0,
		},
		{
			name: "measured crypto: the hybrid's key exchange against x25519's",
			r:    file("measured-crypto-pq.json"),
			check: func(t *testing.T, fs []Finding) {
				h := only[HybridKex](t, fs, KindFinding)
				if h.Library != "go1.26.8" || h.ClientShare != [2]int{1216, 32} || h.ServerShare != [2]int{1120, 32} {
					t.Errorf("hybrid key exchange %+v", h)
				}
				near(t, "hybrid client µs", h.ClientUS[0], 224.455, 0.001)
				near(t, "x25519 client µs", h.ClientUS[1], 99.655, 0.001)
				near(t, "hybrid server µs", h.ServerUS[0], 172.799, 0.001)
			},
			recs: 0,
		},
		{
			name: "ceilings",
			r:    file("measured-ceilings.json"),
			check: func(t *testing.T, fs []Finding) {
				cs := factsOf[Ceiling](fs, KindFinding)
				if len(cs) != 2 || cs[0].Key != "rsa2048" || cs[1].Key != "ecdsa-p256" {
					t.Fatalf("ceilings %+v", cs)
				}
				near(t, "rsa2048 best", cs[0].Best, 714.59, 0.01)
				near(t, "rsa2048 ceiling", cs[0].ConnPerSec(), 1765.67, 0.01)
				near(t, "rsa2048 share", cs[0].Share(), 0.4047, 0.0001)
				if cs[0].BestAt != "tls1.2 rsa2048 c=2" || cs[1].BestAt != "tls1.2 ecdsa-p256 c=2" {
					t.Errorf("best at %q, %q", cs[0].BestAt, cs[1].BestAt)
				}
				near(t, "ecdsa-p256 share", cs[1].Share(), 0.0248, 0.0001)
			},
			recs: 3,
		},
		{
			name: "one variant",
			r:    file("failed.json"),
			check: func(t *testing.T, fs []Finding) {
				e := only[StoppedOnError](t, fs, KindCaveat)
				if e.Finished != 1 || !strings.Contains(e.Error, "built-in server exited") {
					t.Errorf("stopped on error %+v", e)
				}
				if o := only[OneVariant](t, fs, KindCaveat); o.Variant != "plain" {
					t.Errorf("one variant %+v", o)
				}
				if n := len(factsOf[Fact](fs, KindFinding)); n != 0 {
					t.Errorf("%d findings of one variant", n)
				}
			},
			recs: 0,
		},
		{
			name: "interrupted",
			r:    file("interrupted.json"),
			check: func(t *testing.T, fs []Finding) {
				if i := only[Interrupted](t, fs, KindCaveat); i.Finished != 7 || i.Planned != 12 {
					t.Errorf("interrupted %+v", i)
				}
				pair(t, only[ConnectCost](t, fs, KindFinding).Contrast, "plain", "tls1.3 rsa2048", -90.92, true)
			},
			recs: 1,
		},
		{
			name:  "empty",
			r:     func(*testing.T) *result.Result { return result.New() },
			check: func(t *testing.T, fs []Finding) { only[NothingMeasured](t, fs, KindCaveat) },
			recs:  0,
		},
		{
			name: "within the noise: no finding, no recommendation",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}}, map[string]figure{
					"plain":             like(plain, phase{"tcp", 0.041, 1}, phase{"request", 0.048, 1}, phase{"response", 0.004, 0}),
					"tls1.3 ecdsa-p256": like(plain, phase{"tcp", 0.041, 1}, phase{"tls-handshake", 0.0005, 1}, phase{"request", 0.048, 1}, phase{"response", 0.004, 0}),
				})
			},
			check: func(t *testing.T, fs []Finding) {
				n := only[NoDifference](t, fs, KindFinding)
				if len(n.Contrasts) != 1 {
					t.Fatalf("no difference %+v", n)
				}
				pair(t, n.Contrasts[0], "plain", "tls1.3 ecdsa-p256", -1.09, false)
				near(t, "CI", n.Contrasts[0].Delta.CI95, 3.43, 0.01)
				absent[ConnectCost](t, fs)
			},
			recs: 0,
		},
		{
			name: "refused resumption",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Resume: []bool{false, true}}, map[string]figure{
					"plain":                 plain,
					"tls1.3 rsa2048":        connectFigures["tls1.3 rsa2048"],
					"tls1.3 rsa2048 resume": connectFigures["tls1.3 rsa2048"],
				}) // no trial resumed anything
			},
			check: func(t *testing.T, fs []Finding) {
				r := only[ResumeRefused](t, fs, KindFinding)
				if len(r.Variants) != 1 || r.Variants[0].Variant != "tls1.3 rsa2048 resume" || r.Variants[0].Resumed != 0 || r.Variants[0].Conns == 0 {
					t.Errorf("refused %+v", r)
				}
				absent[Resumption](t, fs)
				absent[LetResume](t, fs)
			},
			recs: 1, // pooling only
		},
		{
			name: "no plain variant",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{TLS: []string{"1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"}}, map[string]figure{
					"tls1.3 rsa2048":    connectFigures["tls1.3 rsa2048"],
					"tls1.3 ecdsa-p256": connectFigures["tls1.3 ecdsa-p256"],
				})
			},
			check: func(t *testing.T, fs []Finding) {
				only[NoPlain](t, fs, KindCaveat)
				k := only[KeyChange](t, fs, KindFinding)
				pair(t, k.Pairs[0], "tls1.3 rsa2048", "tls1.3 ecdsa-p256", 197.70, true)
				u := only[UseKey](t, fs, KindRecommendation)
				pair(t, u.Contrast, "tls1.3 ecdsa-p256", "tls1.3 rsa2048", -66.40, true)
				absent[ConnectCost](t, fs)
				absent[Pool](t, fs)
			},
			recs: 1,
		},
		{
			name: "authentication outweighs TLS",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Auth: []string{"md5", "scram-sha-256"}}, map[string]figure{
					"plain md5":                    like(plain, pgPhases(0, 0.4)...),
					"plain scram-sha-256":          like(plain, pgPhases(0, 4.2)...),
					"tls1.3 rsa2048 md5":           like(plain, pgPhases(1.9, 0.4)...),
					"tls1.3 rsa2048 scram-sha-256": like(plain, pgPhases(1.9, 4.2)...),
				})
			},
			check: func(t *testing.T, fs []Finding) {
				a := only[AuthChange](t, fs, KindFinding)
				if a.Method != "scram-sha-256" || a.Ref != "md5" || len(a.Pairs) != 2 {
					t.Fatalf("auth %+v", a)
				}
				pair(t, a.Pairs[0].Contrast, "plain md5", "plain scram-sha-256", -79.28, true)
				near(t, "md5 auth ms", a.Pairs[0].FromMS, 0.3995, 0.0001)
				near(t, "scram auth ms", a.Pairs[0].ToMS, 4.2182, 0.0001)
				if a.TLS == nil || a.TLS.To != "tls1.3 rsa2048 scram-sha-256" {
					t.Fatalf("auth against TLS: %+v", a.TLS)
				}
				near(t, "TLS cost", a.TLS.MS, 2.0999, 0.0001)
				if !a.More {
					t.Errorf("scram's extra 3.8 ms against TLS's 2.1 ms: measurably more, got %+v", a.Diff)
				}
				pair(t, factsOf[ConnectCost](fs, KindFinding)[0].Contrast, "plain md5", "tls1.3 rsa2048 md5", -67.89, true)
			},
			recs: 1,
		},
		{
			name: "an SSH tunnel against TLS",
			r: func(*testing.T) *result.Result {
				r := connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Via: []string{"direct", "ssh:aes128-ctr"}}, map[string]figure{
					"plain":          plain,
					"tls1.3 rsa2048": connectFigures["tls1.3 rsa2048"],
					"ssh aes128-ctr": like(plain, phase{"tcp", 0.09, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0}),
				})
				r.Tunnels = []result.Tunnel{{Label: "ssh aes128-ctr", Setup: []result.SetupPhase{{Name: "tcp", Duration: 100 * time.Microsecond}, {Name: "ssh-kex", Duration: 2 * time.Millisecond}}}}
				return r
			},
			check: func(t *testing.T, fs []Finding) {
				tc := only[TunnelCost](t, fs, KindFinding)
				if tc.Variant != "ssh aes128-ctr" || tc.Plain == nil || tc.Versus == nil {
					t.Fatalf("tunnel %+v", tc)
				}
				pair(t, *tc.Versus, "tls1.3 rsa2048", "ssh aes128-ctr", 364.38, true)
				near(t, "tunnel set-up", tc.SetupMS, 2.1, 1e-9)
				pair(t, only[UseTunnel](t, fs, KindRecommendation).Versus, "tls1.3 rsa2048", "ssh aes128-ctr", 364.38, true)
				absent[MeasureTunnel](t, fs)
				pr := only[PathRanking](t, fs, KindRecommendation)
				if len(pr.Tiers) != 2 || pr.Tiers[0][0].Variant != "ssh aes128-ctr" || pr.Tiers[1][0].Variant != "tls1.3 rsa2048" || math.IsNaN(pr.PlainMS) {
					t.Errorf("paths ranked %+v", pr)
				}
			},
			recs: 3,
		},
		{
			name: "tunnels within the noise: no ranking, a legacy cipher never first",
			r: func(*testing.T) *result.Result {
				// OpenSSH with aes256-cbc a hair faster than the others, on
				// average; nothing differs beyond the noise.
				via := func(ms float64) figure {
					return like(plain, phase{"tcp", 0.09, 1}, phase{"tunnel", ms, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0})
				}
				r := connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"},
					Via: []string{"direct", "openssh:aes256-cbc", "openssh:aes128-gcm@openssh.com"}}, map[string]figure{
					"plain":                          plain,
					"tls1.3 ecdsa-p256":              like(plain, phase{"tcp", 0.09, 1}, phase{"tls-handshake", 0.301, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0}),
					"openssh aes256-cbc":             via(0.298),
					"openssh aes128-gcm@openssh.com": via(0.300),
				})
				return r
			},
			check: func(t *testing.T, fs []Finding) {
				pr := only[PathRanking](t, fs, KindFinding)
				if pr.Ranked() || len(pr.Tiers[0]) != 2 || len(pr.Legacy) != 1 || pr.Legacy[0].Variant != "openssh aes256-cbc" {
					t.Errorf("paths %+v", pr)
				}
				absent[UseTunnel](t, fs)
				if a := only[PreferAEAD](t, fs, KindRecommendation); len(a.Legacy) != 1 || a.Legacy[0] != "openssh aes256-cbc" {
					t.Errorf("prefer AEAD %+v", a)
				}
				for _, f := range fs {
					if f.Kind == KindRecommendation && strings.Contains(f.Text, "aes256-cbc") && !strings.HasPrefix(f.Text, "Prefer TLS 1.3 or an AEAD cipher") {
						t.Errorf("a legacy cipher in a recommendation: %q", f.Text)
					}
				}
			},
			recs: 2, // pooling, and AEAD over CBC
		},
		{
			name: "a path whose every trial stalled keeps its place in the list",
			r: func(*testing.T) *result.Result {
				via := like(plain, phase{"tcp", 0.09, 1}, phase{"tunnel", 0.3, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0})
				r := connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}, Via: []string{"direct", "openssh:aes128-gcm@openssh.com"}}, map[string]figure{
					"plain":                          plain,
					"tls1.3 ecdsa-p256":              like(plain, phase{"tcp", 0.09, 1}, phase{"tls-handshake", 0.301, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0}),
					"openssh aes128-gcm@openssh.com": via,
				})
				for i, t := range r.Trials {
					if t.Variant == "openssh aes128-gcm@openssh.com" {
						// one connection of 20 stalled, in every trial
						h := &r.Trials[i].Latency
						h.Count, h.P50, h.Max = 20, t.Latency.Mean, 40*t.Latency.Mean
					}
				}
				return r
			},
			check: func(t *testing.T, fs []Finding) {
				if o := only[Outliers](t, fs, KindCaveat); len(o.List) == 0 {
					t.Errorf("no outlier named")
				}
				pr := only[PathRanking](t, fs, KindFinding)
				if pr.Ranked() || len(pr.Tiers[0]) != 2 {
					t.Errorf("paths %+v: want both, unranked", pr)
				}
			},
			recs: 1, // pooling
		},
		{
			name: "an outlier: a fork stall in one trial is named, not blamed on the client certificate",
			r: func(*testing.T) *result.Result {
				off := connectFigures["tls1.3 rsa2048"]
				cert := off
				cert.rate *= 0.99
				r := connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, ClientCerts: []string{"off", "rsa2048"}},
					map[string]figure{"plain": plain, "tls1.3 rsa2048": off, "tls1.3 rsa2048 mtls-rsa2048": cert})
				// Round 2 of the certificate's trials: 20 connections, one
				// of which waited 1.2 s for the server to fork its backend.
				t := find(r, plan.Connect, "tls1.3 rsa2048 mtls-rsa2048", 1, 1)
				t.Ops, t.Conns, t.Elapsed = 20, 20, 1225*time.Millisecond
				t.Latency = result.Hist{Count: 20, Mean: (19*1.25 + 1200) / 20, P50: 1.25, P95: 1.5, P99: 1200, Max: 1200}
				return r
			},
			check: func(t *testing.T, fs []Finding) {
				o := only[Outliers](t, fs, KindCaveat)
				if len(o.List) != 1 || !o.List[0].Conn || o.List[0].Round != 1 || o.List[0].Variant != "tls1.3 rsa2048 mtls-rsa2048" {
					t.Fatalf("outliers %+v", o.List)
				}
				cc := only[ClientCertCost](t, fs, KindFinding)
				pair(t, cc.Pairs[0], "tls1.3 rsa2048", "tls1.3 rsa2048 mtls-rsa2048", -1.54, false)
				near(t, "client certificate ms, without the stall", cc.MS, 0, 0.05)
				for _, f := range fs {
					if f.Topic == TopicClientCert && strings.Contains(f.Text, "ms per connection on average") {
						t.Errorf("a time blamed on the certificate: %q", f.Text)
					}
				}
			},
			recs: 0,
		},
		{
			name: "a plaintext pooler is no protection",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Via: []string{"direct", "pgbouncer"}}, map[string]figure{
					"plain":          plain,
					"tls1.3 rsa2048": connectFigures["tls1.3 rsa2048"],
					"pgbouncer":      like(plain, phase{"tcp", 0.09, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0}),
				})
			},
			check: func(t *testing.T, fs []Finding) {
				// Faster than TLS, but plaintext all the way: neither
				// advice against TLS nor a protected path.
				absent[UseTunnel](t, fs)
				absent[PathRanking](t, fs)
			},
			recs: 1,
		},
		{
			name: "crypto primitives",
			r:    func(*testing.T) *result.Result { return cryptoRun() },
			check: func(t *testing.T, fs []Finding) {
				s := only[SignRates](t, fs, KindFinding)
				if s.Library != "go1.26.8" || len(s.Signs) != 3 || s.Signs[0].Name != "ecdsa-p256" || s.Signs[2].Name != "rsa4096" {
					t.Errorf("sign rates %+v", s)
				}
				c := only[CipherRates](t, fs, KindFinding)
				if c.Size != 16384 || len(c.Ciphers) != 2 || c.Ciphers[0].PerCore != 4.35e9 {
					t.Errorf("cipher rates %+v", c)
				}
				k := only[FastKey](t, fs, KindRecommendation)
				if k.Fast.Name != "ecdsa-p256" || k.Slow.Name != "rsa4096" {
					t.Errorf("fast key %+v", k)
				}
				near(t, "ecdsa-p256 over rsa4096", k.Fast.PerCore/k.Slow.PerCore, 227.02, 0.01)
			},
			recs: 1,
		},
	}
	// The wording of every case is golden.
	var words bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Findings(tt.r(t))
			fmt.Fprintf(&words, "== %s\n", tt.name)
			for _, f := range fs {
				fmt.Fprintf(&words, "%s: %s\n", f.Kind, f.Text)
			}
			words.WriteString("\n")
			for _, f := range fs {
				if f.Fact == nil || f.Topic == "" || f.Text == "" {
					t.Errorf("finding without fact, topic or text: %+v", f)
				}
			}
			tt.check(t, fs)
			if n := len(factsOf[Fact](fs, KindRecommendation)); n != tt.recs {
				t.Errorf("%d recommendations, want %d", n, tt.recs)
			}
			// Caveats come first and recommendations last.
			rank := map[Kind]int{KindCaveat: 0, KindFinding: 1, KindRecommendation: 2}
			for i := 1; i < len(fs); i++ {
				if rank[fs[i].Kind] < rank[fs[i-1].Kind] {
					t.Errorf("%s after %s", fs[i].Kind, fs[i-1].Kind)
				}
			}
		})
	}
	golden(t, filepath.Join("testdata", "findings.golden"), words.Bytes())
}

// file reads a stored result of testdata.
func file(name string) func(t *testing.T) *result.Result {
	return func(t *testing.T) *result.Result {
		t.Helper()
		r, err := result.Read("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// cryptoRun is a `tlsbench crypto` result: primitives, no trials.
func cryptoRun() *result.Result {
	r := result.New()
	r.Tool = result.Tool{Name: "tlsbench", Version: "0.1.0", Go: "go1.26.8", TLSLibrary: "crypto/tls (Go 1.26.8)"}
	r.Env = result.Env{OS: "linux", Arch: "amd64", Kernel: "6.1.0-40-cloud-amd64", CPUModel: "AMD EPYC 7B13", Cores: 2, AESNI: true}
	r.Command = []string{"tlsbench", "crypto"}
	r.Started = started
	r.Spec = plan.Spec{Duration: time.Second}
	lib := "go1.26.8"
	for _, p := range []result.Primitive{
		{Kind: result.KindSign, Name: "rsa2048", PerCore: 1184.3, AllCores: 2301},
		{Kind: result.KindVerify, Name: "rsa2048", PerCore: 38120, AllCores: 74100},
		{Kind: result.KindSign, Name: "rsa4096", PerCore: 181.7, AllCores: 352},
		{Kind: result.KindVerify, Name: "rsa4096", PerCore: 10230, AllCores: 19900},
		{Kind: result.KindSign, Name: "ecdsa-p256", PerCore: 41250, AllCores: 80110},
		{Kind: result.KindVerify, Name: "ecdsa-p256", PerCore: 14020, AllCores: 27300},
		{Kind: result.KindKeyAgreement, Name: "x25519", PerCore: 21800, AllCores: 42500},
		{Kind: result.KindCipher, Name: "aes-128-gcm", Size: 1024, PerCore: 2.41e9, AllCores: 4.7e9},
		{Kind: result.KindCipher, Name: "aes-128-gcm", Size: 16384, PerCore: 4.35e9, AllCores: 8.5e9},
		{Kind: result.KindCipher, Name: "chacha20-poly1305", Size: 1024, PerCore: 0.91e9, AllCores: 1.8e9},
		{Kind: result.KindCipher, Name: "chacha20-poly1305", Size: 16384, PerCore: 1.32e9, AllCores: 2.6e9},
	} {
		p.Library = lib
		r.Crypto = append(r.Crypto, p)
	}
	r.Ended = started.Add(12 * time.Second)
	return r
}
