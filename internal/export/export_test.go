package export

import (
	"context"
	"encoding/base64"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/export/exporttest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// within1pct fails t unless got is within 1% of want.
func within1pct(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got/want-1) > 0.01 {
		t.Errorf("%s: exported %.6g, HdrHistogram %.6g (%.2f%% off)", what, got, want, 100*(got/want-1))
	}
}

func TestExpHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		draw func() time.Duration
	}{
		{"handshake 0.75 ms", func() time.Duration { return time.Duration(750e3 * math.Exp(0.3*rng.NormFloat64())) }},
		{"pool 60 µs, long tail", func() time.Duration { return time.Duration(60e3 * math.Exp(1.2*rng.NormFloat64())) }},
		{"wide: 100 µs to 10 s", func() time.Duration { return time.Duration(1e5 * math.Pow(1e5, rng.Float64())) }},
		{"two modes", func() time.Duration {
			if rng.IntN(10) == 0 {
				return time.Duration(40e6 + rng.Float64()*1e6)
			}
			return time.Duration(2e6 + rng.Float64()*1e5)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := stats.NewRecorder()
			for range 20000 {
				r.Record(tt.draw())
			}
			h, e := r.Hist(), toExp(r)
			if e.Count != uint64(h.Count) {
				t.Fatalf("count %d, HdrHistogram's %d", e.Count, h.Count)
			}
			if e.Scale < 6 || len(e.Counts) > MaxBuckets {
				t.Errorf("scale %d with %d buckets: want scale >= 6 within %d", e.Scale, len(e.Counts), MaxBuckets)
			}
			within1pct(t, "p50", e.Quantile(0.5), h.P50/1e3)
			within1pct(t, "p99", e.Quantile(0.99), h.P99/1e3)
		})
	}
}

// trial is a stand-in trial with real HdrHistograms.
func trial(variant string, round int, phase time.Duration) result.Trial {
	lat, tcp, hs := stats.NewRecorder(), stats.NewRecorder(), stats.NewRecorder()
	for i := range 100 {
		d := phase + time.Duration(i)*time.Microsecond
		hs.Record(d)
		tcp.Record(50 * time.Microsecond)
		lat.Record(2 * d)
	}
	return result.Trial{Experiment: plan.Connect, Variant: variant, Concurrency: 2, Round: round, Elapsed: time.Second,
		Ops: 100, Conns: 100, ClientCPU: 50 * time.Millisecond, ServerCPU: 30 * time.Millisecond,
		Errors:  map[string]int64{"timeout": 1},
		Latency: result.Hist(lat.Hist()),
		Phases: []result.Phase{
			{Name: "tcp", RoundTrips: result.RoundTrips{Min: 1, Max: 1, Mean: 1}, Latency: result.Hist(tcp.Hist())},
			{Name: "tls-handshake", RoundTrips: result.RoundTrips{Min: 1, Max: 1, Mean: 1}, Latency: result.Hist(hs.Hist())},
		}}
}

var testRun = Run{ID: "run-1", Shard: "1/2", Version: "0.test", TLSLibrary: "Go crypto/tls go1.x", Engine: "redis", Started: time.Now()}

func TestFeedOTLP(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			rcv := exporttest.OTLPHTTP(t)
			if proto == "grpc" {
				rcv = exporttest.OTLPGRPC(t)
			}
			f, err := Start(context.Background(), Config{OTLP: rcv.URL, Run: testRun})
			if err != nil {
				t.Fatal(err)
			}
			f.Trial(trial("off", 0, 700*time.Microsecond))
			f.Trial(trial("tls1.3", 0, 750*time.Microsecond))
			if lines := f.End(context.Background(), nil, []Verdict{{Gate: "connect[*].roundtrips.tls-handshake <= 1", Pass: true}}); len(lines) > 0 {
				t.Fatalf("End: %q", lines)
			}
			reqs := rcv.Requests()
			if len(reqs) == 0 {
				t.Fatal("no export received")
			}
			last := reqs[len(reqs)-1]
			rm := last.GetResourceMetrics()[0]
			res := map[string]string{}
			for _, kv := range rm.GetResource().GetAttributes() {
				res[kv.GetKey()] = kv.GetValue().GetStringValue()
			}
			for k, want := range map[string]string{"service.name": "tlsbench", "service.version": "0.test", "tlsbench.run.id": "run-1", "tlsbench.shard": "1/2", "tlsbench.tls.library": "Go crypto/tls go1.x"} {
				if res[k] != want {
					t.Errorf("resource %s = %q, want %q", k, res[k], want)
				}
			}
			got := map[string]bool{}
			for _, m := range rm.GetScopeMetrics()[0].GetMetrics() {
				got[m.GetName()] = true
				if m.GetName() != PhaseSeconds {
					continue
				}
				dps := m.GetExponentialHistogram().GetDataPoints()
				if len(dps) != 4 { // 2 variants × 2 phases
					t.Errorf("%s: %d data points, want 4", m.GetName(), len(dps))
				}
				for _, dp := range dps {
					l := map[string]string{}
					for _, kv := range dp.GetAttributes() {
						l[kv.GetKey()] = kv.GetValue().GetStringValue()
					}
					if l["engine"] != "redis" || l["experiment"] != "connect" || l["phase"] == "" || l["variant"] == "" || l["concurrency"] != "2" {
						t.Errorf("%s labels %v", m.GetName(), l)
					}
					if dp.GetCount() != 100 || dp.GetScale() != MaxScale {
						t.Errorf("%s %v: count %d scale %d", m.GetName(), l, dp.GetCount(), dp.GetScale())
					}
				}
			}
			for _, name := range []string{LatencySeconds, PhaseSeconds, PhaseRoundTrips, CPUPerOperation, OTLPName(Rate), Operations, Errors, Trials, GatePassed} {
				if !got[name] {
					t.Errorf("no %s among %v", name, got)
				}
			}
		})
	}
}

func TestFeedPush(t *testing.T) {
	pg := exporttest.PushgatewayServer(t)
	f, err := Start(context.Background(), Config{PushURL: pg.URL, Run: testRun})
	if err != nil {
		t.Fatal(err)
	}
	f.Trial(trial("off", 0, 700*time.Microsecond))
	f.Trial(trial("off", 1, 700*time.Microsecond))
	if lines := f.End(context.Background(), nil, nil); len(lines) > 0 {
		t.Fatalf("End: %q", lines)
	}
	pushes := pg.Pushes()
	if len(pushes) == 0 {
		t.Fatal("nothing pushed")
	}
	p := pushes[len(pushes)-1]
	if p.Method != "PUT" || p.Grouping["job"] != "tlsbench" || p.Grouping["run_id"] != "run-1" || p.Grouping["shard"] != "1/2" {
		t.Errorf("push %s %v: want PUT to job tlsbench, run_id run-1, shard 1/2", p.Method, p.Grouping)
	}
	trials := p.Families[Trials].GetMetric()
	if len(trials) != 1 || trials[0].GetCounter().GetValue() != 2 {
		t.Errorf("%s: %v, want one series at 2", Trials, trials)
	}
	hs := p.Families[PhaseSeconds].GetMetric()
	if len(hs) != 2 {
		t.Fatalf("%s: %d series, want 2 (tcp, tls-handshake)", PhaseSeconds, len(hs))
	}
	for _, m := range hs {
		if s := m.GetSummary(); s.GetSampleCount() != 200 || len(s.GetQuantile()) != 3 {
			t.Errorf("%s: %v, want 200 values over two trials and p50, p95, p99", PhaseSeconds, s)
		}
	}
	if info := p.Families[Info].GetMetric(); len(info) != 1 {
		t.Errorf("%s: %v", Info, info)
	}
}

// A receiver that is down or never answers costs the run nothing but
// its exports: Trial returns at once, End within its bound, with one line.
func TestFeedDownEndpoint(t *testing.T) {
	for _, tt := range []struct{ name, url string }{
		{"refused", "http://127.0.0.1:1"},
		{"silent", exporttest.Blackhole(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Start(context.Background(), Config{OTLP: tt.url, PushURL: tt.url, Run: testRun, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			trials := make([]result.Trial, 50)
			for i := range trials {
				trials[i] = trial("off", i, time.Millisecond)
			}
			began := time.Now()
			for _, t := range trials {
				f.Trial(t)
			}
			if took := time.Since(began); took > time.Second {
				t.Errorf("50 trials handed over in %v: Trial waited for an export", took)
			}
			began = time.Now()
			lines := f.End(context.Background(), nil, nil)
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("End took %v, bound 300 ms for the last export, 300 ms to shut down (+ a loaded machine)", took)
			}
			if len(lines) != 2 || !strings.Contains(lines[0], "--otlp http/protobuf to "+tt.url+": ") || !strings.Contains(lines[1], "--prometheus-push to "+tt.url+": ") {
				t.Fatalf("End said %q, want one line per destination", lines)
			}
			for _, l := range lines {
				if !strings.Contains(l, "exports failed") {
					t.Errorf("%q does not count the failures", l)
				}
			}
		})
	}
}

func TestBadEndpoint(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{OTLP: "localhost:4318"}, "--otlp localhost:4318: give an http:// or https:// URL"},
		{Config{PushURL: "ftp://u:secret@x/"}, "--prometheus-push ftp://x/: give an http:// or https:// URL"},
	}
	for _, tt := range tests {
		_, err := Start(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Start(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := Start(context.Background(), Config{OTLP: FromEnv}); err == nil || !strings.Contains(err.Error(), "use grpc or http/protobuf") {
		t.Errorf("http/json: %v", err)
	}
}

// A user and password in an endpoint's URL go as basic auth, and never
// into what End says, even where a receiver's refusal quotes the URL.
func TestEndpointPassword(t *testing.T) {
	var mu sync.Mutex
	auths := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths[r.Header.Get("Authorization")] = true
		mu.Unlock()
		http.Error(w, "refused", http.StatusInternalServerError)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://tlsbench:s3cret@", 1)
	f, err := Start(context.Background(), Config{OTLP: url, PushURL: url, Run: testRun})
	if err != nil {
		t.Fatal(err)
	}
	f.Trial(trial("off", 0, time.Millisecond))
	lines := f.End(context.Background(), nil, nil)
	if len(lines) != 2 || strings.Contains(strings.Join(lines, "\n"), "s3cret") {
		t.Errorf("End said %q: want two lines without the password", lines)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("tlsbench:s3cret"))
	if len(auths) != 1 || !auths[want] {
		t.Errorf("the receiver saw Authorization %v, want %q", auths, want)
	}
}
