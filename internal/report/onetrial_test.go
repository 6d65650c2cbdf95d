package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// firstRound keeps the first round of r's trials: the run as --trials 1
// would have made it.
func firstRound(r *result.Result) *result.Result {
	r.Trials = slices.DeleteFunc(r.Trials, func(t result.Trial) bool { return t.Round > 0 })
	r.Spec.Trials = 1
	return r
}

// TestOneTrialFindings: with one trial each, a finding states both
// figures and their ratio and says that one trial gives no interval; it
// never says "no measurable difference", and nothing is recommended on
// it. testdata/onetrial.golden holds the wording.
func TestOneTrialFindings(t *testing.T) {
	plain := connectFigures["plain"]
	slow := connectFigures["tls1.3 rsa2048"]
	// The issue's --per-conn run: 1,920 against 90.8 connections per second.
	plain.rate, slow.rate = 1920, 90.8
	at170 := func(f figure, rate float64) figure {
		f.rate, f.lat.Max = rate, f.lat.P99 // four connections: no stall among them
		return f
	}
	tests := []struct {
		name string
		r    *result.Result
		// says is what the findings must say, in order.
		says []string
	}{
		{"connect: a 20× gap in one trial",
			connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Trials: 1},
				map[string]figure{"plain": plain, "tls1.3 rsa2048": slow}),
			[]string{"New connections, one trial each: tls1.3 rsa2048 91.0 against plain 1970 connections/s (95.4% fewer). One trial gives no interval"}},
		{"per-conn: one trial per N",
			firstRound(perConnResult(map[int]float64{1: 400, 3: 150, 10: 5, 100: 1})),
			[]string{"With tls1.3 rsa2048, one trial each, TLS changed the time per operation against plain by +399% at 1, +149% at 3, +4.2% at 10, +0.2% at 100 operations per connection: one trial gives no interval"}},
		{"storm: +77% in one trial",
			firstRound(stormResult(100, map[string]float64{"rsa2048": 177, "ecdsa-p256": 100.5})),
			[]string{"With 500 clients connecting at once, all were connected after 174 ms with tls1.3 rsa2048 against 102 ms with plain (+70.9%; 1.71× as long) in one trial each: one trial gives no interval",
				"With 500 clients connecting at once, all were connected after 101 ms with tls1.3 ecdsa-p256 against 102 ms with plain (-1.0%; 0.990× as long) in one trial each"}},
		{"pool: one trial each",
			func() *result.Result {
				s := fourSpec
				s.Experiments, s.Trials = []plan.Experiment{plan.Pool}, 1
				return run(s, fourVariants, map[plan.Experiment]map[int]map[string]figure{plan.Pool: {1: poolFigures(1)}}, -1)
			}(),
			[]string{"On persistent connections (pool), one trial each, TLS changed requests per second by -16.2% to -12.5% (tls1.2 rsa2048, tls1.3 rsa2048 and tls1.3 ecdsa-p256 against plain at c=1): one trial gives no interval"}},
		{"versions: a round trip saved, untimed",
			connectOf(plan.Spec{TLS: []string{"off", "1.2", "1.3"}, Keys: []string{"rsa2048"}, Trials: 1},
				map[string]figure{"plain": connectFigures["plain"], "tls1.2 rsa2048": connectFigures["tls1.2 rsa2048"], "tls1.3 rsa2048": connectFigures["tls1.3 rsa2048"]}),
			[]string{"Prefer TLS 1.3 to TLS 1.2: it saves 1 round trip per new connection; with one trial each, this run cannot tell whether it costs more local time."}},
		{"at 170ms RTT: 1.2 against 0.8 connections per second",
			connectOf(plan.Spec{TLS: []string{"1.2", "1.3"}, Keys: []string{"ecdsa-p256"}, RTT: []time.Duration{170 * time.Millisecond}, Trials: 1},
				map[string]figure{"tls1.2 ecdsa-p256 rtt170ms": at170(connectFigures["tls1.3 ecdsa-p256"], 0.8), "tls1.3 ecdsa-p256 rtt170ms": at170(connectFigures["tls1.3 ecdsa-p256"], 1.2)}),
			[]string{"TLS 1.3 instead of 1.2 saved no round trip here: 1.20 against 0.800 connections/s (50.0% more; one trial each, no interval) with ecdsa-p256 at 170ms RTT."}},
	}
	var words bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Findings(tt.r)
			fmt.Fprintf(&words, "== %s\n", tt.name)
			var text strings.Builder
			for _, f := range fs {
				fmt.Fprintf(&words, "%s: %s\n", f.Kind, f.Text)
				text.WriteString(f.Text + "\n")
				if strings.Contains(f.Text, "no measurable") {
					t.Errorf("one trial said %q", f.Text)
				}
				if f.Kind == KindRecommendation && f.Topic != TopicHelloRetry && !strings.Contains(f.Text, "with one trial each, this run cannot tell") {
					t.Errorf("recommended on one trial: %q", f.Text)
				}
			}
			words.WriteString("\n")
			rest := text.String()
			for _, want := range tt.says {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Errorf("the findings lack %q (or it comes too early):\n%s", want, text.String())
					continue
				}
				rest = rest[i+len(want):]
			}
		})
	}
	golden(t, filepath.Join("testdata", "onetrial.golden"), words.Bytes())
}
