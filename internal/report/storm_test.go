package report

import (
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// stormResult is a storm of 500 clients, plain and TLS 1.3 with two keys,
// in three rounds: plain is back after plainMS, each TLS variant after
// its own time, each round a little off.
func stormResult(plainMS float64, tlsMS map[string]float64) *result.Result {
	spec, err := plan.New(plan.Spec{Experiments: []plan.Experiment{plan.Storm}, TLS: []string{"off", "1.3"},
		Keys: []string{"rsa2048", "ecdsa-p256"}, Clients: []int{500}})
	if err != nil {
		panic(err)
	}
	r := result.New()
	r.Spec, r.Variants = spec, spec.Variants()
	off := []float64{0.02, -0.015, 0.005}
	for round := range 3 {
		for vi, v := range r.Variants {
			ms := plainMS
			if !v.Plain() {
				ms = tlsMS[v.Key]
			}
			ms *= 1 + off[(round+vi)%3]
			d := time.Duration(ms * float64(time.Millisecond))
			r.Trials = append(r.Trials, result.Trial{Experiment: plan.Storm, Variant: v.ID, Concurrency: 500, Round: round, Elapsed: d,
				Ops: 500, Conns: 500, Latency: result.Hist{Count: 500, P50: ms / 2, P99: ms * 0.99, Max: ms},
				Phases: []result.Phase{{Name: "tcp", Latency: result.Hist{Count: 500, Mean: 1, P50: 1, P99: 2, Max: 3}}},
				Storm: &result.Storm{Clients: 500, Connected: 500, AllConnected: d, DialSpread: 12 * time.Millisecond,
					Hold: &result.Hist{Count: 500, P50: ms / 2, P99: ms * 0.98, Max: ms}, Listen: &result.ListenQueue{Somaxconn: 4096}},
				ServerMemory: &result.ServerMemory{Kind: "pss", IdleBytes: 40 << 20, HeldBytes: 40<<20 + 500*1500<<10, Conns: 500}})
		}
	}
	return r
}

// TestStormFindings: a TLS variant whose storms took measurably longer
// than plain's is a finding per key, with both times and the ratio; one
// within the noise says no measurable difference; the tables show the
// storm and the memory per connection.
func TestStormFindings(t *testing.T) {
	r := stormResult(100, map[string]float64{"rsa2048": 400, "ecdsa-p256": 100.5})
	var got []string
	for _, f := range Findings(r) {
		if f.Topic == TopicStorm {
			got = append(got, f.Text)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d storm findings, want one per TLS variant: %q", len(got), got)
	}
	for i, want := range []string{
		"With 500 clients connecting at once, all were connected after 401 ms with tls1.3 rsa2048 against 100 ms with plain (+300%",
		"With 500 clients connecting at once, tls1.3 ecdsa-p256 made no measurable difference to the time until all were connected",
	} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("finding %d: %q\nwant it to begin with %q", i, got[i], want)
		}
	}
	if !strings.Contains(got[0], "; 4.00× as long)") {
		t.Errorf("finding %q: want the ratio, 4.00× as long", got[0])
	}
	var b strings.Builder
	if err := Build(r).Text(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"storm: 500 clients at one instant", "1500/1500", "dial spread ms", "storm: 500 clients, phases of a connection", "(hold)",
		"50.2 / 98.3 / 100", // plain's hold (means over rounds), apart from the phases'

		"server memory per held connection", "1500 (0)     1500  PSS", "somaxconn 4096"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report has no %q:\n%s", want, text)
		}
	}
}
