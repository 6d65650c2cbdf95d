package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// predictCases are connect runs at RTT 0 and 20 ms emulated, on the
// built-in server and on lab PostgreSQL, with the round trips each
// variant's setup takes: HTTP tcp + request; TLS 1.2 two more, TLS 1.3 one;
// PostgreSQL tcp, SSLRequest, the handshake (TLS 1.3: a HelloRetryRequest,
// PostgreSQL 15 offers only P-256), SCRAM's three and the query.
var predictCases = []struct {
	name       string
	args       []string
	bin        string
	roundTrips map[string]float64
}{
	{"builtin", []string{"builtin", "-n", "20"}, "",
		map[string]float64{"plain": 2, "tls1.2 ecdsa-p256": 4, "tls1.3 ecdsa-p256": 3}},
	{"postgres", []string{"--lab", "postgres", "--tables", "1", "--rows", "100", "-n", "10"}, labBinaries["postgres"],
		map[string]float64{"plain": 6, "tls1.2 ecdsa-p256": 9, "tls1.3 ecdsa-p256": 9}},
}

// predictRTT runs one case (a process of its own: most of its time is
// the emulated RTT's waits, which a test beside it fills) and returns its
// predictions at 20 ms and the report's text.
func predictRTT(tb testing.TB, args []string) ([]report.Prediction, string) {
	out := filepath.Join(tb.TempDir(), "r.json")
	args = append(append([]string{"connect"}, args...), "--tls", "off,1.2,1.3", "--key", "ecdsa-p256", "--rtt", "0,20ms", "--predict-rtt", "20ms",
		"--trials", "1", "-o", out)
	code, stdout, stderr := runProcess(tb, args...)
	if code != 0 {
		tb.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		tb.Fatal(err)
	}
	if len(r.Spec.PredictRTT) != 1 || r.Spec.PredictRTT[0] != 20*time.Millisecond {
		tb.Errorf("spec predict_rtt %v", r.Spec.PredictRTT)
	}
	return report.Predict(r), stdout
}

// TestPredictRTT checks the round-trip model's invariants: each variant's
// setup takes its exact round trips and a positive local time; the
// prediction at 20 ms is that local time plus 20 ms per round trip (no RTT
// term lost, none counted twice); the emulated measurement is never below
// round trips × RTT (the emulation only delays); a TLS variant is compared
// with plain, predicted and measured. How close prediction and measurement
// are is a figure, not an invariant a loaded machine keeps:
// BenchmarkPredictRTT (make bench).
func TestPredictRTT(t *testing.T) {
	labtest.Slow(t)
	besideOthers(t)
	for _, tt := range predictCases {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bin != "" {
				needServer(t, tt.bin)
			}
			ps, stdout := predictRTT(t, tt.args)
			if len(ps) != len(tt.roundTrips) {
				t.Fatalf("%d predictions: %+v", len(ps), ps)
			}
			for _, p := range ps {
				pt := p.At[0]
				t.Logf("%s: %.2f round trips + %.3f ms: predicted %.2f ms at 20ms, measured %.2f ms, error %+.1f%%",
					p.Variant, p.RoundTrips, p.Local, pt.Predicted, pt.Measured, 100*pt.Error())
				if p.RoundTrips != tt.roundTrips[p.Variant] {
					t.Errorf("%s: %.2f round trips, want %v", p.Variant, p.RoundTrips, tt.roundTrips[p.Variant])
				}
				if pt.Variant != p.Variant+" rtt20ms" || pt.Measured < 20*p.RoundTrips {
					t.Errorf("%s: measured %.2f ms (%q) at 20 ms for %.0f round trips", p.Variant, pt.Measured, pt.Variant, p.RoundTrips)
				}
				if pt.RTT != 20*time.Millisecond || !(p.Local > 0) || math.Abs(pt.Predicted-(p.Local+20*p.RoundTrips)) > 1e-9 {
					t.Errorf("%s: predicted %.3f ms at %v from %.3f ms local and %.2f round trips, want local + 20 ms × round trips at 20ms",
						p.Variant, pt.Predicted, pt.RTT, p.Local, p.RoundTrips)
				}
				if p.Variant != "plain" && (p.Plain != "plain" || math.IsNaN(pt.Overhead) || math.IsNaN(pt.MeasuredOverhead)) {
					t.Errorf("%s: against %q: overhead predicted %.2f ms, measured %.2f ms", p.Variant, p.Plain, pt.Overhead, pt.MeasuredOverhead)
				}
			}
			for _, want := range []string{"predicted@20ms", "plain: setup = ", "tls1.3 ecdsa-p256: setup = "} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the report lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// BenchmarkPredictRTT prints how far the round-trip model's prediction at
// 20 ms is from the emulated measurement, in percent per variant: the
// accuracy the README quotes. Run it on an idle machine: make bench.
func BenchmarkPredictRTT(b *testing.B) {
	for _, tt := range predictCases {
		b.Run(tt.name, func(b *testing.B) {
			if tt.bin != "" {
				needServer(b, tt.bin)
			}
			var ps []report.Prediction
			for range b.N {
				ps, _ = predictRTT(b, tt.args)
			}
			for _, p := range ps {
				b.ReportMetric(100*p.At[0].Error(), "%err-"+strings.ReplaceAll(p.Variant, " ", "-"))
			}
		})
	}
}
