package report

import (
	"math"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The cases model the built-in HTTPS server on a 2-core loopback VM, 1 KiB
// responses: a plain connection costs ~0.1 ms, a TLS 1.3 RSA-2048 one ~1.2 ms
// (the server's RSA signature), ECDSA P-256 ~0.4 ms; on a persistent
// connection TLS costs ~10-15%. Trials vary by a few percent.

// figure is a variant at one concurrency, before the noise of a trial.
type figure struct {
	rate           float64     // operations/s
	lat            result.Hist // ms
	phases         []phase
	client, server float64 // cores in use
	sent, recv     int64   // bytes per operation
	conns          int64   // per trial for pool; connect opens one per op
	neg            *result.Negotiated
}

type phase struct {
	name string
	ms   float64
	rt   int
}

// A trial deviates from its figure by the drift of the machine during its
// round, which all variants share, and by noise of its own. Both are fixed so
// that the files do not change when regenerated.
var (
	drift = []float64{0.018, -0.024, 0.006, -0.011, 0.027, -0.005, 0.014, -0.019, 0.009}
	noise = []float64{0.006, -0.011, 0.013, -0.004, 0.008, -0.015, 0.002, 0.011, -0.007, 0.005, -0.013, 0.009, -0.002}
)

func jitter(variant, conc, round int) float64 {
	return drift[(conc*3+round)%len(drift)] + noise[(variant*5+conc*7+round*3)%len(noise)]
}

var (
	tls12RSA = &result.Negotiated{Version: "TLS 1.2", Suite: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", Group: "X25519", PeerKey: "RSA-2048", ALPN: "http/1.1"}
	tls13RSA = &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_128_GCM_SHA256", Group: "X25519MLKEM768", PeerKey: "RSA-2048", ALPN: "http/1.1"}
	tls13EC  = &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_128_GCM_SHA256", Group: "X25519MLKEM768", PeerKey: "ECDSA-P256", ALPN: "http/1.1"}
)

var started = time.Date(2025, 11, 21, 15, 2, 11, 0, time.FixedZone("CET", 3600))

// run builds a result whose trials are interleaved as tlsbench runs them:
// round by round, concurrency by concurrency, variant by variant.
func run(raw plan.Spec, variants []string, figs map[plan.Experiment]map[int]map[string]figure, limit int) *result.Result {
	spec, err := plan.New(raw)
	if err != nil {
		panic(err)
	}
	r := result.New()
	r.Tool = result.Tool{Name: "tlsbench", Version: "0.1.0", Go: "go1.26.8", TLSLibrary: "crypto/tls (Go 1.26.8)"}
	r.Env = result.Env{OS: "linux", Arch: "amd64", Kernel: "6.1.0-40-cloud-amd64", CPUModel: "AMD EPYC 7B13", Cores: 2, AESNI: true, Hostname: "bench-1"}
	r.Command = []string{"tlsbench", "--tls", "off,1.2,1.3", "--key", "rsa2048,ecdsa-p256"}
	r.Started = started
	r.Spec = spec
	for _, v := range spec.Variants() {
		for _, id := range variants {
			if v.ID == id {
				r.Variants = append(r.Variants, v)
			}
		}
	}
	r.Target = result.Target{URL: "builtin", Kind: "builtin", Server: &result.Server{
		Software:  "tlsbench built-in (net/http)",
		Version:   "go1.26.8",
		Endpoints: map[string]string{"": "127.0.0.1:40001", "rsa2048": "127.0.0.1:40002", "ecdsa-p256": "127.0.0.1:40003"},
	}}
	return interleave(r, func(e plan.Experiment, v string, c int) figure { return figs[e][c][v] }, limit)
}

// interleave adds the trials of r's spec and variants, interleaved as
// tlsbench runs them (round by round, concurrency by concurrency, variant
// by variant) from each cell's figure, the first limit of them (-1: all).
func interleave(r *result.Result, fig func(e plan.Experiment, variant string, c int) figure, limit int) *result.Result {
	spec := r.Spec
	now := started.Add(2 * time.Second)
	for round := range spec.Trials {
		for _, e := range spec.Experiments {
			for ci, c := range spec.Concurrency {
				for vi, v := range r.Variants {
					if limit >= 0 && len(r.Trials) == limit {
						r.Ended = now
						return r
					}
					t := trial(e, v.ID, c, round, fig(e, v.ID, c), jitter(vi, ci, round))
					t.Start = now
					now = now.Add(t.Elapsed + spec.WarmupTime() + 150*time.Millisecond)
					r.Trials = append(r.Trials, t)
				}
			}
		}
	}
	r.Ended = now
	return r
}

func trial(e plan.Experiment, variant string, c, round int, f figure, j float64) result.Trial {
	elapsed := 5*time.Second + time.Duration(210+round*37+c*11)*time.Microsecond
	ops := int64(math.Round(f.rate * (1 + j) * elapsed.Seconds()))
	slower := func(ms float64) float64 { return round3(ms * (1 - j)) }
	t := result.Trial{
		Experiment:    e,
		Variant:       variant,
		Concurrency:   c,
		Round:         round,
		Elapsed:       elapsed,
		Ops:           ops,
		Conns:         f.conns,
		BytesSent:     ops * f.sent,
		BytesReceived: ops * f.recv,
		ClientCPU:     time.Duration(f.client * (1 + j/2) * float64(elapsed)).Round(time.Millisecond),
		ServerCPU:     time.Duration(f.server * (1 + j/2) * float64(elapsed)).Round(time.Millisecond),
		Latency: result.Hist{
			Count:  ops,
			Mean:   slower(f.lat.Mean),
			StdDev: slower(f.lat.StdDev),
			P50:    slower(f.lat.P50),
			P95:    slower(f.lat.P95),
			P99:    slower(f.lat.P99),
			Max:    round3(f.lat.Max * (1 + 9*j)), // the tail is the noisiest
		},
		Negotiated: f.neg,
	}
	if e == plan.Connect {
		t.Conns = ops
	}
	for _, p := range f.phases {
		t.Phases = append(t.Phases, result.Phase{
			Name:       p.name,
			RoundTrips: result.RoundTrips{Min: p.rt, Max: p.rt, Mean: float64(p.rt)},
			Latency:    result.Hist{Count: ops, Mean: slower(p.ms), P50: slower(p.ms * 0.95), P95: slower(p.ms * 1.4), P99: slower(p.ms * 2), Max: slower(p.ms * 30)},
		})
	}
	return t
}

func round3(ms float64) float64 { return math.Round(ms*1e6) / 1e6 }

// find returns the trial of a cell and round, to give it a figure of its own.
func find(r *result.Result, e plan.Experiment, variant string, c, round int) *result.Trial {
	for i, t := range r.Trials {
		if t.Experiment == e && t.Variant == variant && t.Concurrency == c && t.Round == round {
			return &r.Trials[i]
		}
	}
	panic("no such trial")
}

var fourVariants = []string{"plain", "tls1.2 rsa2048", "tls1.3 rsa2048", "tls1.3 ecdsa-p256"}

var fourSpec = plan.Spec{TLS: []string{"off", "1.2", "1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"}}

// connectFigures are connections per second at c=1 and where their time goes.
var connectFigures = map[string]figure{
	"plain": {
		rate:   8650,
		lat:    result.Hist{Mean: 0.108, StdDev: 0.041, P50: 0.101, P95: 0.152, P99: 0.231, Max: 3.12},
		phases: []phase{{"tcp", 0.041, 1}, {"request", 0.048, 1}, {"response", 0.004, 0}},
		client: 0.80, server: 0.61, sent: 96, recv: 1178,
	},
	"tls1.2 rsa2048": {
		rate:   745,
		lat:    result.Hist{Mean: 1.30, StdDev: 0.11, P50: 1.27, P95: 1.49, P99: 1.83, Max: 6.9},
		phases: []phase{{"tcp", 0.043, 1}, {"tls-handshake", 1.18, 2}, {"request", 0.061, 1}, {"response", 0.006, 0}},
		client: 0.16, server: 0.93, sent: 451, recv: 2415, neg: tls12RSA,
	},
	"tls1.3 rsa2048": {
		rate:   795,
		lat:    result.Hist{Mean: 1.22, StdDev: 0.10, P50: 1.19, P95: 1.40, P99: 1.71, Max: 6.4},
		phases: []phase{{"tcp", 0.042, 1}, {"tls-handshake", 1.11, 1}, {"request", 0.058, 1}, {"response", 0.005, 0}},
		client: 0.17, server: 0.94, sent: 1662, recv: 3721, neg: tls13RSA,
	},
	"tls1.3 ecdsa-p256": {
		rate:   2380,
		lat:    result.Hist{Mean: 0.402, StdDev: 0.052, P50: 0.391, P95: 0.478, P99: 0.611, Max: 4.2},
		phases: []phase{{"tcp", 0.042, 1}, {"tls-handshake", 0.293, 1}, {"request", 0.055, 1}, {"response", 0.005, 0}},
		client: 0.45, server: 0.41, sent: 1662, recv: 2391, neg: tls13EC,
	},
}

func connectRun() *result.Result {
	s := fourSpec
	s.Experiments = []plan.Experiment{plan.Connect}
	r := run(s, fourVariants, map[plan.Experiment]map[int]map[string]figure{plan.Connect: {1: connectFigures}}, -1)
	r.Notes = []string{"connect: client source addresses spread over 127.0.0.0/8, so that TIME_WAIT does not exhaust ephemeral ports"}
	// The plain loop keeps the client busy on loopback: one trial passes 85% of its one worker.
	find(r, plan.Connect, "plain", 1, 1).ClientCPU = 4402 * time.Millisecond
	return r
}

// poolFigures are requests per second on persistent connections.
func poolFigures(c int) map[string]figure {
	scale := map[int]struct{ rate, lat, client, server float64 }{
		1: {1, 1, 1, 1},
		2: {1.81, 1.1, 1.78, 1.42},
		4: {2.08, 1.95, 2.05, 1.45},
	}[c]
	f := func(rate, p95, client, server float64, neg *result.Negotiated) figure {
		lat := p95 * scale.lat
		return figure{
			rate:   rate * scale.rate,
			lat:    result.Hist{Mean: lat * 0.7, StdDev: lat * 0.2, P50: lat * 0.65, P95: lat, P99: lat * 1.45, Max: lat * 30},
			client: client * scale.client, server: server * scale.server,
			sent: 82, recv: 1160, conns: int64(c), neg: neg,
		}
	}
	return map[string]figure{
		"plain":             f(11800, 0.121, 0.55, 0.60, nil),
		"tls1.2 rsa2048":    f(10100, 0.139, 0.58, 0.68, tls12RSA),
		"tls1.3 rsa2048":    f(10300, 0.137, 0.58, 0.67, tls13RSA),
		"tls1.3 ecdsa-p256": f(10250, 0.137, 0.58, 0.67, tls13EC),
	}
}

func poolRun() *result.Result {
	s := fourSpec
	s.Experiments = []plan.Experiment{plan.Pool}
	s.Concurrency = []int{1, 2, 4}
	figs := map[int]map[string]figure{}
	for _, c := range s.Concurrency {
		figs[c] = poolFigures(c)
	}
	r := run(s, fourVariants, map[plan.Experiment]map[int]map[string]figure{plan.Pool: figs}, -1)
	find(r, plan.Pool, "tls1.2 rsa2048", 4, 2).Errors = map[string]int64{"timeout": 2}
	find(r, plan.Pool, "tls1.3 rsa2048", 4, 0).Errors = map[string]int64{"reset": 1, "timeout": 1}
	return r
}

// interruptedRun was stopped during the second round, before the TLS trial at c=2.
func interruptedRun() *result.Result {
	s := plan.Spec{Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"}, Concurrency: []int{1, 2}}
	c2 := map[string]figure{}
	for id, f := range connectFigures {
		f.rate *= 1.72
		f.lat.Mean *= 1.15
		f.lat.P50 *= 1.15
		f.lat.P95 *= 1.3
		f.lat.P99 *= 1.4
		f.client *= 1.6
		f.server *= 1.55
		c2[id] = f
	}
	r := run(s, []string{"plain", "tls1.3 rsa2048"}, map[plan.Experiment]map[int]map[string]figure{plan.Connect: {1: connectFigures, 2: c2}}, 7)
	r.Interrupted = true
	return r
}

// failedRun ended on an error after its only plain trial.
func failedRun() *result.Result {
	s := plan.Spec{Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}, Trials: 1, Count: 20000}
	r := run(s, []string{"plain", "tls1.3 ecdsa-p256"}, map[plan.Experiment]map[int]map[string]figure{plan.Connect: {1: connectFigures}}, 1)
	r.Error = "tls1.3 ecdsa-p256 c=1: built-in server exited: signal: killed"
	return r
}
