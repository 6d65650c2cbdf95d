package export

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// promSink pushes snapshots to a Pushgateway, each push replacing the
// run's shard's group (job tlsbench, run_id, shard): the series are
// cumulative, so the latest push is the run so far.
type promSink struct {
	// url has no user: push's errors print it; user and pass go as
	// basic auth.
	url        string
	user, pass string
	run        Run
	timeout    time.Duration
}

func newProm(endpoint string, run Run, timeout time.Duration) (*promSink, error) {
	if err := checkEndpoint("--prometheus-push", endpoint, "--prometheus-push http://127.0.0.1:9091"); err != nil {
		return nil, err
	}
	p := &promSink{run: run, timeout: timeout}
	p.url, p.user, p.pass = splitUser(endpoint)
	return p, nil
}

func (p *promSink) name() string { return "--prometheus-push to " + p.url }

func (p *promSink) shutdown(context.Context) error { return nil }

func (p *promSink) export(ctx context.Context, snap snapshot) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(snapCollector{snap: snap, run: p.run}); err != nil {
		return err
	}
	shard := p.run.Shard
	if shard == "" {
		shard = "0/1"
	}
	pusher := push.New(p.url, "tlsbench").Client(&http.Client{Timeout: p.timeout}).
		Grouping("run_id", p.run.ID).Grouping("shard", shard).Gatherer(reg)
	if p.user != "" || p.pass != "" {
		pusher = pusher.BasicAuth(p.user, p.pass)
	}
	return pusher.PushContext(ctx)
}

// snapCollector is a snapshot as Prometheus metrics: gauges, counters,
// and each duration histogram as a summary of its HdrHistogram's p50,
// p95 and p99 (exact), which any Prometheus reads, native histograms
// turned on or not.
type snapCollector struct {
	snap snapshot
	run  Run
}

// Describe sends nothing: the collector is unchecked, its series those
// of the snapshot.
func (snapCollector) Describe(chan<- *prometheus.Desc) {}

func (c snapCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(m prometheus.Metric, err error) {
		if err != nil {
			m = prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
		ch <- m
	}
	info := prometheus.NewDesc(Info, "tlsbench's version and TLS library", nil, prometheus.Labels{"version": c.run.Version, "tls_library": c.run.TLSLibrary})
	emit(prometheus.NewConstMetric(info, prometheus.GaugeValue, 1))
	for _, p := range c.snap.points {
		names, values := split(p.labels)
		t := prometheus.GaugeValue
		if p.kind == counter {
			t = prometheus.CounterValue
		}
		emit(prometheus.NewConstMetric(prometheus.NewDesc(p.name, help[p.name], names, nil), t, p.value, values...))
	}
	for _, h := range c.snap.hists {
		names, values := split(h.labels)
		emit(prometheus.NewConstSummary(prometheus.NewDesc(h.name, help[h.name], names, nil), h.exp.Count, h.exp.Sum,
			map[float64]float64{0.5: h.p50, 0.95: h.p95, 0.99: h.p99}, values...))
	}
}

func split(labels []label) (names, values []string) {
	for _, l := range labels {
		names, values = append(names, l.name), append(values, l.value)
	}
	return names, values
}

// help is each series' HELP line.
var help = map[string]string{
	LatencySeconds:  "time of a whole operation (connect: dial to close), seconds, over the run's trials so far",
	PhaseSeconds:    "time of one phase of a connection (tcp, tls-handshake, ...), seconds, over the run's trials so far",
	PhaseRoundTrips: "client turns a phase took, mean over the last trial's connections",
	CPUPerOperation: "CPU seconds per operation in the last trial, by side (client: tlsbench or its client stack; server: a server tlsbench started)",
	Rate:            "operations per second of the last trial: achieved, and offered with --rate",
	Operations:      "operations completed",
	Errors:          "failed operations, by kind",
	Trials:          "trials finished",
	OverheadPercent: "change of the metric against the baseline variant, percent, paired by round: the point estimate and its 95% interval's bounds",
	GatePassed:      "a gate's verdict: 1 passed, 0 failed",
}
