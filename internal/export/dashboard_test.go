package export

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"

	"github.com/tlsbench/tlsbench/internal/export/exporttest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// dashboardExprs are the PromQL queries of a Grafana dashboard in
// docs/grafana: its panels' and its variables'.
func dashboardExprs(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/grafana/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana/%s: %v", name, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("%d queries in docs/grafana/%s", len(exprs), name)
	}
	return exprs
}

var seriesName = regexp.MustCompile(`\b(?:tlsbench_[a-z_]+|target_info)\b`)

// The Pushgateway's dashboard queries only series the exporters emit,
// and every one of them.
func TestDashboardNames(t *testing.T) {
	used := map[string]bool{}
	for _, e := range dashboardExprs(t, "tlsbench.json") {
		for _, n := range seriesName.FindAllString(e, -1) {
			// A summary's (histogram's) series add _count and _sum.
			if base, ok := strings.CutSuffix(n, "_count"); ok && slices.Contains([]string{LatencySeconds, PhaseSeconds}, base) {
				n = base
			} else if base, ok := strings.CutSuffix(n, "_sum"); ok && slices.Contains([]string{LatencySeconds, PhaseSeconds}, base) {
				n = base
			}
			if !slices.Contains(Names, n) {
				t.Errorf("the dashboard queries %s, which tlsbench does not export: %s", n, e)
			}
			used[n] = true
		}
	}
	for _, n := range Names {
		if !used[n] {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
}

// received is what a real OTLP receiver got of a run: each metric's type,
// unit and attribute keys, and the resource's attribute keys.
type received struct {
	metrics  map[string]otlptranslator.Metric
	labels   map[string][]string // by metric: its data points' attribute keys
	resource []string
}

// receiveRun sends two variants' trials of two rounds and the end of the
// run (the report model's overheads, a gate's verdict) to a real
// OTLP/HTTP receiver, and reads what arrived.
func receiveRun(t *testing.T) received {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	rcv := exporttest.OTLPHTTP(t)
	f, err := Start(context.Background(), Config{OTLP: rcv.URL, Run: testRun})
	if err != nil {
		t.Fatal(err)
	}
	res := result.New()
	res.Spec.Experiments = []plan.Experiment{plan.Connect}
	res.Variants = []plan.Variant{{ID: "off", Baseline: true}, {ID: "tls1.3"}}
	for round := range 2 {
		for _, v := range []struct {
			id    string
			phase time.Duration
		}{{"off", 700 * time.Microsecond}, {"tls1.3", 750*time.Microsecond + time.Duration(round)*10*time.Microsecond}} {
			tr := trial(v.id, round, v.phase)
			res.Trials = append(res.Trials, tr)
			f.Trial(tr)
		}
	}
	if lines := f.End(context.Background(), report.Build(res), []Verdict{{Gate: "connect[*].roundtrips.tls-handshake <= 1", Pass: true}}); len(lines) > 0 {
		t.Fatalf("End: %q", lines)
	}
	reqs := rcv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no export received")
	}
	rm := reqs[len(reqs)-1].GetResourceMetrics()[0]
	got := received{metrics: map[string]otlptranslator.Metric{}, labels: map[string][]string{}}
	for _, kv := range rm.GetResource().GetAttributes() {
		got.resource = append(got.resource, kv.GetKey())
	}
	for _, m := range rm.GetScopeMetrics()[0].GetMetrics() {
		om := otlptranslator.Metric{Name: m.GetName(), Unit: m.GetUnit()}
		var keys []string
		add := func(kvs []string) {
			for _, k := range kvs {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		switch {
		case m.GetGauge() != nil:
			om.Type = otlptranslator.MetricTypeGauge
			for _, dp := range m.GetGauge().GetDataPoints() {
				add(attrKeys(dp.GetAttributes()))
			}
		case m.GetSum() != nil && m.GetSum().GetIsMonotonic():
			om.Type = otlptranslator.MetricTypeMonotonicCounter
			for _, dp := range m.GetSum().GetDataPoints() {
				add(attrKeys(dp.GetAttributes()))
			}
		case m.GetExponentialHistogram() != nil:
			om.Type = otlptranslator.MetricTypeExponentialHistogram
			for _, dp := range m.GetExponentialHistogram().GetDataPoints() {
				add(attrKeys(dp.GetAttributes()))
			}
		default:
			t.Fatalf("%s: a metric of a kind tlsbench does not send: %v", m.GetName(), m)
		}
		got.metrics[m.GetName()], got.labels[m.GetName()] = om, keys
	}
	return got
}

func attrKeys[KV interface{ GetKey() string }](kvs []KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.GetKey()
	}
	return out
}

// TestOTLPNamesInPrometheus: through Prometheus' OTLP receiver (or a
// collector's Prometheus exporters), which translate names with
// otlptranslator's default strategy, every series tlsbench sends reaches
// Prometheus with the name the Pushgateway gives it: its unit is in its
// name already, or is an annotation ({round_trip}) that adds no suffix (a
// gauge of unit 1 would get _ratio), and the rate goes as tlsbench_rate
// of unit 1/s (tlsbench_rate_per_second would get a second _per_second).
// Each shard is an instance of its own.
func TestOTLPNamesInPrometheus(t *testing.T) {
	got := receiveRun(t)
	namer := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	for _, name := range Names {
		m, ok := got.metrics[OTLPName(name)]
		if name == Info {
			if ok {
				t.Errorf("%s went over OTLP, which carries it in the resource", name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s was not received", OTLPName(name))
			continue
		}
		prom, err := namer.Build(m)
		if err != nil || prom != name {
			t.Errorf("%s (unit %q) reaches Prometheus as %q (%v), not as the Pushgateway's %s", m.Name, m.Unit, prom, err, name)
		}
	}
	if !slices.Contains(got.resource, "service.instance.id") {
		t.Errorf("resource %v: no service.instance.id, so every shard's series would be one instance's", got.resource)
	}
}

// TestDashboardOTLPNames: the OTLP dashboard queries only the names and
// labels Prometheus stores of what tlsbench sends, translated as its OTLP
// receiver does: the metrics' names, their attributes, the resource's
// promoted attributes (tlsbench_run_id, tlsbench_shard) and target_info;
// histograms are native (no _bucket, _count or _sum). It shows every
// series sent.
func TestDashboardOTLPNames(t *testing.T) {
	got := receiveRun(t)
	namer := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	labeler := otlptranslator.LabelNamer{}
	stored := map[string]bool{"target_info": true}
	labels := map[string]bool{"job": true, "instance": true}
	for _, m := range got.metrics {
		prom, err := namer.Build(m)
		if err != nil {
			t.Fatal(err)
		}
		stored[prom] = true
		for _, k := range got.labels[m.Name] {
			labels[k] = true
		}
	}
	for _, k := range got.resource {
		l, err := labeler.Build(k)
		if err != nil {
			t.Fatal(err)
		}
		labels[l] = true // promoted, or target_info's
	}
	used := map[string]bool{}
	matcher := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	values := regexp.MustCompile(`label_values\([a-zA-Z_:]*(?:\{[^}]*\})?,\s*([a-zA-Z_][a-zA-Z0-9_]*)\)`)
	for _, e := range dashboardExprs(t, "tlsbench-otlp.json") {
		for _, n := range seriesName.FindAllString(e, -1) {
			if labels[n] && !stored[n] {
				continue // tlsbench_run_id: a label, promoted from the resource
			}
			if !stored[n] {
				t.Errorf("the OTLP dashboard queries %s, which Prometheus does not store of tlsbench's OTLP: %s", n, e)
			}
			used[n] = true
		}
		var ls []string
		for _, m := range matcher.FindAllStringSubmatch(e, -1) {
			ls = append(ls, m[1])
		}
		for _, m := range grouping.FindAllStringSubmatch(e, -1) {
			for l := range strings.SplitSeq(m[1], ",") {
				ls = append(ls, strings.TrimSpace(l))
			}
		}
		for _, m := range values.FindAllStringSubmatch(e, -1) {
			ls = append(ls, m[1])
		}
		for _, l := range ls {
			if !labels[l] {
				t.Errorf("the OTLP dashboard uses the label %s, which no series has: %s", l, e)
			}
		}
	}
	for n := range stored {
		if !used[n] {
			t.Errorf("the OTLP dashboard shows nothing of %s", n)
		}
	}
	for _, l := range []string{"tlsbench_run_id", "tlsbench_shard"} {
		if !labels[l] {
			t.Errorf("the resource has no attribute that becomes %s", l)
		}
	}
}
