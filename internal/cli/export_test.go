package cli

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	otlpcommon "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/tlsbench/tlsbench/internal/export"
	"github.com/tlsbench/tlsbench/internal/export/exporttest"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

func TestExportBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"connect", "--lab", "redis", "--otlp", "http://127.0.0.1:4318"}, "--otlp takes its endpoint after '=': --otlp=http://127.0.0.1:4318"},
		{[]string{"connect", "builtin", "--otlp=127.0.0.1:4318"}, "--otlp 127.0.0.1:4318: give an http:// or https:// URL"},
		{[]string{"pool", "builtin", "--prometheus-push", "pushgateway:9091"}, "--prometheus-push pushgateway:9091: give an http:// or https:// URL"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "starting") {
			t.Errorf("%q: exit %d, %q; want exit 2 before anything starts, %q", tt.args, code, stderr, tt.want)
		}
	}
}

// attrs are a data point's attributes as strings.
func attrs(kvs []*otlpcommon.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return m
}

// TestExportLive sends a real lab run's series to real receivers: an
// OTLP/HTTP receiver and a Pushgateway's push API. The series arrive
// with their labels and the run's attributes, and each exported
// histogram's p50 and p99 are within 1% of the HdrHistograms' of the
// same trials (the result file's).
func TestExportLive(t *testing.T) {
	needServer(t, labBinaries["redis"])
	rcv := exporttest.OTLPHTTP(t)
	pg := exporttest.PushgatewayServer(t)
	out := filepath.Join(t.TempDir(), "r.json")
	push := strings.Replace(pg.URL, "http://", "http://tlsbench:s3cret@", 1)
	code, _, stderr := runMain(t, "connect", "--lab", "redis", "--tls", "off,1.3", "--key", "ecdsa-p256", "-d", "1s", "--trials", "2",
		"-q", "-o", out, "--otlp="+rcv.URL, "--prometheus-push", push)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "exports failed") || strings.Contains(stderr, "s3cret") {
		t.Errorf("stderr: %s", stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(r.Command, " "), "s3cret") {
		t.Errorf("the result's command line holds the Pushgateway's password: %q", r.Command)
	}
	if len(r.Trials) != 4 {
		t.Fatalf("%d trials, want 4", len(r.Trials))
	}
	// The HdrHistograms of each series, merged over its trials.
	hdr := map[string][]stats.Hist{}
	for _, tr := range r.Trials {
		hdr[tr.Variant+"/"] = append(hdr[tr.Variant+"/"], stats.Hist(tr.Latency))
		for _, p := range tr.Phases {
			hdr[tr.Variant+"/"+p.Name] = append(hdr[tr.Variant+"/"+p.Name], stats.Hist(p.Latency))
		}
	}

	reqs := rcv.Requests()
	if len(reqs) < 2 { // at least one trial's and the end's
		t.Fatalf("%d OTLP exports, want one per trial (coalesced under load) and the end's", len(reqs))
	}
	rm := reqs[len(reqs)-1].GetResourceMetrics()[0]
	res := attrs(rm.GetResource().GetAttributes())
	if res["service.name"] != "tlsbench" || res["service.version"] != Version || !strings.HasPrefix(res["tlsbench.run.id"], "tlsbench-") ||
		!strings.HasPrefix(res["tlsbench.tls.library"], "Go crypto/tls") {
		t.Errorf("resource %v", res)
	}
	seen := map[string]int{}
	worst := 0.0
	defer func() { t.Logf("largest p50/p99 difference, exported vs HdrHistogram: %.2f%%", 100*worst) }()
	for _, m := range rm.GetScopeMetrics()[0].GetMetrics() {
		for _, dp := range m.GetExponentialHistogram().GetDataPoints() {
			l := attrs(dp.GetAttributes())
			if l["engine"] != "redis" || l["experiment"] != "connect" {
				t.Errorf("%s %v", m.GetName(), l)
			}
			key := l["variant"] + "/" + l["phase"]
			seen[m.GetName()+" "+key]++
			want, err := stats.MergeHists(hdr[key]...)
			if err != nil {
				t.Fatal(key, err)
			}
			if dp.GetCount() != uint64(want.Count) {
				t.Errorf("%s %s: count %d, the trials' %d", m.GetName(), key, dp.GetCount(), want.Count)
			}
			got := export.ExpHist{Scale: dp.GetScale(), Offset: dp.GetPositive().GetOffset(), Counts: dp.GetPositive().GetBucketCounts(), Count: dp.GetCount()}
			for _, q := range []struct {
				q    float64
				want float64
			}{{0.5, want.P50}, {0.99, want.P99}} {
				g := got.Quantile(q.q) * 1e3
				worst = max(worst, math.Abs(g/q.want-1))
				if math.Abs(g/q.want-1) > 0.01 {
					t.Errorf("%s %s p%g: exported %.4f ms, HdrHistogram %.4f ms", m.GetName(), key, 100*q.q, g, q.want)
				}
			}
		}
		if m.GetName() == export.OverheadPercent {
			bounds := map[string]bool{}
			for _, dp := range m.GetGauge().GetDataPoints() {
				bounds[attrs(dp.GetAttributes())["bound"]] = true
			}
			if !bounds["point"] || !bounds["low"] || !bounds["high"] {
				t.Errorf("%s bounds %v", m.GetName(), bounds)
			}
		}
		seen[m.GetName()]++
	}
	tlsVariant := r.Trials[1].Variant
	for _, want := range []string{"tlsbench_latency_seconds plain/", "tlsbench_phase_seconds plain/tcp", "tlsbench_phase_seconds " + tlsVariant + "/tls-handshake",
		export.PhaseRoundTrips, export.CPUPerOperation, export.OTLPName(export.Rate), export.Operations, export.Trials, export.OverheadPercent} {
		if seen[want] == 0 {
			t.Errorf("no %s among %v", want, seen)
		}
	}

	pushes := pg.Pushes()
	if len(pushes) < 2 {
		t.Fatalf("%d pushes", len(pushes))
	}
	p := pushes[len(pushes)-1]
	if p.Grouping["run_id"] != res["tlsbench.run.id"] || p.Grouping["shard"] != "0/1" {
		t.Errorf("pushed to %v, want run_id %s and shard 0/1", p.Grouping, res["tlsbench.run.id"])
	}
	for _, name := range []string{export.PhaseSeconds, export.Trials, export.OverheadPercent, export.Info} {
		if p.Families[name] == nil {
			t.Errorf("no %s pushed", name)
		}
	}
}

// TestExportDown: with both endpoints down the run goes on and ends as
// it would, and says so once per destination.
func TestExportDown(t *testing.T) {
	needServer(t, labBinaries["redis"])
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, "connect", "--lab", "redis", "--tls", "off,1.3", "--key", "ecdsa-p256", "-d", "1s", "--trials", "1",
		"-q", "-o", out, "--otlp=http://127.0.0.1:1", "--prometheus-push", "http://127.0.0.1:1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "exports failed"); n != 2 || !strings.Contains(stderr, "warning: --otlp http/protobuf to http://127.0.0.1:1: ") ||
		!strings.Contains(stderr, "warning: --prometheus-push to http://127.0.0.1:1: ") {
		t.Errorf("said %d times, want once per destination:\n%s", n, stderr)
	}
	r, err := result.Read(out)
	if err != nil || len(r.Trials) != 2 {
		t.Fatalf("%v, want 2 trials", err)
	}
}

// TestExportShards: two shard processes of one run, each with bare
// --otlp configured by the standard variables (gRPC), export under one
// run id, each with its shard, to OTLP and to the Pushgateway.
func TestExportShards(t *testing.T) {
	_, target := sharedLab(t, "redis")
	rcv := exporttest.OTLPGRPC(t)
	pg := exporttest.PushgatewayServer(t)
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	cmds := make([]*exec.Cmd, 2)
	errs := make([]strings.Builder, 2)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "connect", target, "-c", "2", "-d", "500ms", "--trials", "1", "-q",
			"--shard", fmt.Sprintf("%d/2", i), "--start-at", startAt, "-o", filepath.Join(t.TempDir(), "r.json"),
			"--otlp", "--prometheus-push", pg.URL)
		cmds[i].Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
		cmds[i].Stderr = &errs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil || strings.Contains(errs[i].String(), "warning") {
			t.Fatalf("shard %d/2: %v: %s", i, err, errs[i].String())
		}
	}
	runs, shards := map[string]bool{}, map[string]bool{}
	for _, req := range rcv.Requests() {
		for _, rm := range req.GetResourceMetrics() {
			res := attrs(rm.GetResource().GetAttributes())
			runs[res["tlsbench.run.id"]], shards[res["tlsbench.shard"]] = true, true
		}
	}
	if len(runs) != 1 || !shards["0/2"] || !shards["1/2"] || len(shards) != 2 {
		t.Errorf("OTLP: run ids %v, shards %v; want one run id, shards 0/2 and 1/2", runs, shards)
	}
	pushed := map[string]bool{}
	for _, p := range pg.Pushes() {
		if !runs[p.Grouping["run_id"]] {
			t.Errorf("pushed to run_id %q, OTLP's %v", p.Grouping["run_id"], runs)
		}
		pushed[p.Grouping["shard"]] = true
	}
	if !pushed["0/2"] || !pushed["1/2"] {
		t.Errorf("pushed shards %v", pushed)
	}
}
