package result

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// full is a valid result with every part validate looks at.
func full() *Result {
	r := sample()
	r.Spec.RTT = []time.Duration{0, 20 * time.Millisecond}
	r.Spec.PredictRTT = []time.Duration{50 * time.Millisecond}
	r.Env.Cores = 2
	r.PlannedTrials = 4
	r.Variants = append(r.Variants, plan.Variant{ID: "tls1.3", TLS: "1.3", RTT: 20 * time.Millisecond})
	h := Hist{Count: 10, Mean: 1, StdDev: 0.1, P50: 1, P95: 1.2, P99: 1.5, Max: 3}
	r.Trials = []Trial{
		{Experiment: "connect", Variant: "plain", Concurrency: 1, Elapsed: time.Second, Ops: 10, Conns: 10, Latency: h},
		{Experiment: "connect", Variant: "tls1.3", Concurrency: 2, Round: 1, Elapsed: time.Second, Ops: 10, Queries: 10,
			Errors: map[string]int64{"reset": 1, "timeout": 2}, Conns: 10, Resumed: 3, BytesSent: 100, BytesReceived: 200,
			ClientCPU: time.Millisecond, ServerCPU: time.Millisecond, Latency: h,
			Phases: []Phase{{Name: "tcp", RoundTrips: RoundTrips{1, 1, 1}, Latency: h}, {Name: "tls-handshake", RoundTrips: RoundTrips{1, 2, 1.5}, Latency: h}}},
	}
	r.Tunnels = []Tunnel{{Label: "ssh", RTT: time.Millisecond, Setup: []SetupPhase{{Name: "tcp", Duration: time.Millisecond, RoundTrips: 1}}, BytesSent: 1, BytesReceived: 1}}
	r.Ceilings = []Ceiling{{Key: "rsa2048", SignPerSec: 1000, Cores: 2}}
	r.Crypto = []Primitive{{Kind: KindCipher, Name: "aes-128-gcm", Size: 16384, PerCore: 1e9, AllCores: 2e9}}
	return r
}

// TestValidate breaks one field at a time: each rule, and the field it names.
func TestValidate(t *testing.T) {
	if err := full().validate(); err != nil {
		t.Fatalf("a valid result: %v", err)
	}
	if err := New().validate(); err != nil {
		t.Fatalf("an empty result: %v", err)
	}
	tr := func(r *Result) *Trial { return &r.Trials[1] }
	tests := []struct {
		name   string
		mutate func(r *Result)
		want   string
	}{
		{"spec rtt negative", func(r *Result) { r.Spec.RTT[1] = -1 }, "spec.rtt_ns[1] is -1"},
		{"spec predict rtt negative", func(r *Result) { r.Spec.PredictRTT[0] = -5 }, "spec.predict_rtt_ns[0] is -5"},
		{"cores negative", func(r *Result) { r.Env.Cores = -2 }, "environment.cores is -2"},
		{"planned trials negative", func(r *Result) { r.PlannedTrials = -1 }, "planned_trials is -1"},
		{"variant rtt negative", func(r *Result) { r.Variants[1].RTT = -1 }, "variants[1].rtt_ns is -1"},
		{"unknown variant", func(r *Result) { tr(r).Variant = "mystery" }, `trials[1].variant is "mystery", not the id of any entry of variants`},
		{"no variants", func(r *Result) { r.Variants = nil }, `trials[0].variant is "plain", not the id of any entry of variants`},
		{"concurrency 0", func(r *Result) { tr(r).Concurrency = 0 }, "trials[1].concurrency is 0, less than 1"},
		{"concurrency negative", func(r *Result) { tr(r).Concurrency = -4 }, "trials[1].concurrency is -4, less than 1"},
		{"round negative", func(r *Result) { tr(r).Round = -1 }, "trials[1].round is -1"},
		{"elapsed negative", func(r *Result) { tr(r).Elapsed = -1 }, "trials[1].elapsed_ns is -1"},
		{"ops negative", func(r *Result) { tr(r).Ops = -1 }, "trials[1].ops is -1"},
		{"queries negative", func(r *Result) { tr(r).Queries = -1 }, "trials[1].queries is -1"},
		{"errors negative", func(r *Result) { tr(r).Errors["timeout"] = -3 }, `trials[1].errors["timeout"] is -3`},
		{"conns negative", func(r *Result) { tr(r).Conns = -1 }, "trials[1].conns is -1"},
		{"resumed negative", func(r *Result) { tr(r).Resumed = -1 }, "trials[1].resumed is -1"},
		{"bytes sent negative", func(r *Result) { tr(r).BytesSent = -1 }, "trials[1].bytes_sent is -1"},
		{"bytes received negative", func(r *Result) { tr(r).BytesReceived = -1 }, "trials[1].bytes_received is -1"},
		{"client cpu negative", func(r *Result) { tr(r).ClientCPU = -1 }, "trials[1].client_cpu_ns is -1"},
		{"server cpu negative", func(r *Result) { tr(r).ServerCPU = -1 }, "trials[1].server_cpu_ns is -1"},
		{"latency count negative", func(r *Result) { tr(r).Latency.Count = -1 }, "trials[1].latency.count is -1"},
		{"p95 negative", func(r *Result) { tr(r).Latency.P95 = -1 }, "trials[1].latency.p95_ms is -1"},
		{"mean NaN", func(r *Result) { tr(r).Latency.Mean = math.NaN() }, "trials[1].latency.mean_ms is NaN"},
		{"stddev infinite", func(r *Result) { tr(r).Latency.StdDev = math.Inf(1) }, "trials[1].latency.stddev_ms is +Inf"},
		{"p50 -Inf", func(r *Result) { tr(r).Latency.P50 = math.Inf(-1) }, "trials[1].latency.p50_ms is -Inf"},
		{"p99 negative", func(r *Result) { tr(r).Latency.P99 = -0.5 }, "trials[1].latency.p99_ms is -0.5"},
		{"max infinite", func(r *Result) { tr(r).Latency.Max = math.Inf(1) }, "trials[1].latency.max_ms is +Inf"},
		{"round trips min negative", func(r *Result) { tr(r).Phases[0].RoundTrips = RoundTrips{-1, 1, 1} }, "trials[1].phases[0].round_trips.min is -1"},
		{"round trips max negative", func(r *Result) { tr(r).Phases[1].RoundTrips = RoundTrips{0, -1, 0} }, "trials[1].phases[1].round_trips.max is -1"},
		{"round trips min over max", func(r *Result) { tr(r).Phases[1].RoundTrips = RoundTrips{3, 2, 2} }, "trials[1].phases[1].round_trips.min is 3, more than round_trips.max (2)"},
		{"round trips mean NaN", func(r *Result) { tr(r).Phases[1].RoundTrips.Mean = math.NaN() }, "trials[1].phases[1].round_trips.mean is NaN"},
		{"phase latency negative", func(r *Result) { tr(r).Phases[1].Latency.Mean = -2 }, "trials[1].phases[1].latency.mean_ms is -2"},
		{"phase count negative", func(r *Result) { tr(r).Phases[0].Latency.Count = -2 }, "trials[1].phases[0].latency.count is -2"},
		{"tunnel rtt negative", func(r *Result) { r.Tunnels[0].RTT = -1 }, "tunnels[0].rtt_ns is -1"},
		{"tunnel setup negative", func(r *Result) { r.Tunnels[0].Setup[0].Duration = -1 }, "tunnels[0].setup[0].duration_ns is -1"},
		{"tunnel setup round trips negative", func(r *Result) { r.Tunnels[0].Setup[0].RoundTrips = -1 }, "tunnels[0].setup[0].round_trips is -1"},
		{"tunnel bytes negative", func(r *Result) { r.Tunnels[0].BytesReceived = -1 }, "tunnels[0].bytes_received is -1"},
		{"ceiling negative", func(r *Result) { r.Ceilings[0].SignPerSec = -1 }, "ceilings[0].sign_per_sec is -1"},
		{"ceiling infinite", func(r *Result) { r.Ceilings[0].SignPerSec = math.Inf(1) }, "ceilings[0].sign_per_sec is +Inf"},
		{"ceiling cores negative", func(r *Result) { r.Ceilings[0].Cores = -1 }, "ceilings[0].cores is -1"},
		{"primitive negative", func(r *Result) { r.Crypto[0].PerCore = -1 }, "crypto[0].per_core is -1"},
		{"primitive NaN", func(r *Result) { r.Crypto[0].AllCores = math.NaN() }, "crypto[0].all_cores is NaN"},
		{"primitive size negative", func(r *Result) { r.Crypto[0].Size = -1 }, "crypto[0].size is -1"},
		{"the first of two", func(r *Result) { r.Trials[0].Ops = -1; tr(r).Ops = -2 }, "trials[0].ops is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := full()
			tt.mutate(r)
			err := r.validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestReadDamaged checks the whole message of Read for a damaged file.
func TestReadDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := full()
	r.Trials = append(r.Trials, r.Trials[0], r.Trials[0])
	r.Trials[3].Latency.P95 = -1
	if err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if want := path + ": trials[3].latency.p95_ms is -1: the file is damaged (re-run, or fix that field)"; err == nil || err.Error() != want {
		t.Errorf("Read = %v\nwant %s", err, want)
	}

	// A number JSON can write but float64 cannot hold.
	write(`{"schema":"tlsbench.result","version":1,"trials":[{"latency":{"p95_ms":1e309}}]}`)
	_, err = Read(path)
	if want := path + ": trials.latency.p95_ms is number 1e309, not a valid float64: the file is damaged (re-run, or fix that field)"; err == nil || err.Error() != want {
		t.Errorf("Read = %v\nwant %s", err, want)
	}
	write(`{"schema":"other","version":"x"}`)
	if _, err = Read(path); err == nil || !strings.Contains(err.Error(), "is not a tlsbench result file") {
		t.Errorf("Read of another file = %v", err)
	}
	write(`{"schema":"tlsbench.result","version":2}`)
	if _, err = Read(path); err == nil || !strings.Contains(err.Error(), "has result version 2") {
		t.Errorf("Read of another version = %v", err)
	}
}

// TestGroupSpelling: negotiated groups read one way whoever wrote them
// (results before 2026-11-27 carried crypto/tls's CurveP256).
func TestGroupSpelling(t *testing.T) {
	for in, want := range map[string]string{"CurveP256": "P-256", "CurveP384": "P-384", "CurveP521": "P-521",
		"X25519": "X25519", "X25519MLKEM768": "X25519MLKEM768", "P-256": "P-256", "": ""} {
		if got := plan.GroupSpelling(in); got != want {
			t.Errorf("GroupSpelling(%q) = %q, want %q", in, got, want)
		}
	}
	path := filepath.Join(t.TempDir(), "old.json")
	r := full()
	r.Trials[0].Negotiated = &Negotiated{Version: "TLS 1.3", Group: "CurveP256"}
	r.Checks = []Check{{Variant: r.Trials[0].Variant, Client: &Negotiated{Version: "TLS 1.3", Group: "CurveP384"}}}
	if err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if g, c := got.Trials[0].Negotiated.Group, got.Checks[0].Client.Group; g != "P-256" || c != "P-384" {
		t.Errorf("read an old result's groups as %q and %q, want P-256 and P-384", g, c)
	}
}
