package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestPredictRTT runs connect at RTT 0 and with 20 ms emulated, on the
// built-in server and on lab PostgreSQL, and checks that the round-trip
// model's prediction from the loopback run (round trips × RTT + local time)
// is within 10% of the emulated measurement for plain, TLS 1.2 and TLS 1.3.
func TestPredictRTT(t *testing.T) {
	tests := []struct {
		name string
		args []string
		bin  string
	}{
		{"builtin", []string{"builtin", "-n", "20"}, ""},
		// PostgreSQL's connect takes ~8 round trips (TLS 1.3: a
		// HelloRetryRequest): ~200 ms a connection at 20 ms.
		{"postgres", []string{"--lab", "postgres", "--tables", "1", "--rows", "100", "-n", "10"}, labBinaries["postgres"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bin != "" {
				needServer(t, tt.bin)
			}
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"connect"}, tt.args...)
			args = append(args, "--tls", "off,1.2,1.3", "--key", "ecdsa-p256", "--rtt", "0,20ms", "--predict-rtt", "20ms",
				"--trials", "1", "-o", out)
			code, stdout, stderr := runMain(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Spec.PredictRTT) != 1 || r.Spec.PredictRTT[0] != 20*time.Millisecond {
				t.Errorf("spec predict_rtt %v", r.Spec.PredictRTT)
			}
			ps := report.Predict(r)
			if len(ps) != 3 {
				t.Fatalf("%d predictions: %+v", len(ps), ps)
			}
			for _, p := range ps {
				pt := p.At[0]
				t.Logf("%s: %.2f round trips + %.3f ms: predicted %.2f ms at 20ms, measured %.2f ms, error %+.1f%%",
					p.Variant, p.RoundTrips, p.Local, pt.Predicted, pt.Measured, 100*pt.Error())
				if pt.Variant != p.Variant+" rtt20ms" || math.IsNaN(pt.Error()) || math.Abs(pt.Error()) > 0.10 {
					t.Errorf("%s: predicted %.2f ms at 20ms, measured %.2f ms (%q): error %+.1f%% exceeds 10%%",
						p.Variant, pt.Predicted, pt.Measured, pt.Variant, 100*pt.Error())
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
