package export

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// FromEnv is --otlp given without an endpoint: the OTEL_EXPORTER_OTLP_*
// variables say where, and how.
const FromEnv = "env"

// otlpSink sends snapshots through one of the SDK's OTLP metric
// exporters, whichever protocol OTEL_EXPORTER_OTLP_METRICS_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL names (http/protobuf unless grpc).
type otlpSink struct {
	exp   sdkmetric.Exporter
	res   *resource.Resource
	start time.Time
	where string
}

// otlpProtocol is the protocol the standard variables ask for.
func otlpProtocol() (string, error) {
	p := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: use grpc or http/protobuf (http/json is not served by Go's exporter)", p)
}

// checkEndpoint is the one-line error of an --otlp or --prometheus-push
// URL that cannot be one; example is the fix.
func checkEndpoint(flag, endpoint, example string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %s: give an http:// or https:// URL, e.g. %s", flag, redact(endpoint), example)
	}
	return nil
}

// redact drops a URL's user and password, for messages.
func redact(endpoint string) string {
	u, _, _ := splitUser(endpoint)
	return u
}

// splitUser takes the user and password out of a URL: the exporters'
// errors print the URL they were given, and they go as basic auth.
func splitUser(endpoint string) (bare, user, pass string) {
	u, err := url.Parse(endpoint)
	if err != nil || u.User == nil {
		return endpoint, "", ""
	}
	user = u.User.Username()
	pass, _ = u.User.Password()
	u.User = nil
	return u.String(), user, pass
}

// basicAuth is the Authorization header of a user and password.
func basicAuth(user, pass string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
}

func newOTLP(ctx context.Context, endpoint string, run Run, timeout time.Duration) (*otlpSink, error) {
	proto, err := otlpProtocol()
	if err != nil {
		return nil, err
	}
	where := "the endpoint of OTEL_EXPORTER_OTLP_ENDPOINT (or its default)"
	var headers map[string]string
	if endpoint != FromEnv {
		var user, pass string
		if endpoint, user, pass = splitUser(endpoint); user != "" || pass != "" {
			headers = basicAuth(user, pass)
		}
		if err := checkEndpoint("--otlp", endpoint, "--otlp=http://127.0.0.1:4318 (OTLP/HTTP; OTEL_EXPORTER_OTLP_PROTOCOL=grpc and :4317 for gRPC)"); err != nil {
			return nil, err
		}
		where = redact(endpoint)
	}
	// No retries: the next trial's export carries the same cumulative
	// series, and a retry would hold the exporting goroutine past it.
	var exp sdkmetric.Exporter
	switch proto {
	case "grpc":
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithTimeout(timeout), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false})}
		if endpoint != FromEnv {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
		if headers != nil {
			opts = append(opts, otlpmetricgrpc.WithHeaders(headers))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	default:
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithTimeout(timeout), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false})}
		if endpoint != FromEnv {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(metricsPath(endpoint)))
		}
		if headers != nil {
			opts = append(opts, otlpmetrichttp.WithHeaders(headers))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(run.attributes()...))
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	// OTEL_RESOURCE_ATTRIBUTES adds to them, as in any SDK.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return &otlpSink{exp: exp, res: res, start: run.Started, where: "--otlp " + proto + " to " + where}, nil
}

// metricsPath is an OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT
// takes it) with the metrics signal's path, /v1/metrics, added unless it
// ends in it already.
func metricsPath(endpoint string) string {
	if strings.HasSuffix(strings.TrimRight(endpoint, "/"), "/v1/metrics") {
		return endpoint
	}
	return strings.TrimRight(endpoint, "/") + "/v1/metrics"
}

// attributes are the run's resource attributes.
func (r Run) attributes() []attribute.KeyValue {
	kv := []attribute.KeyValue{
		semconv.ServiceName("tlsbench"),
		semconv.ServiceVersion(r.Version),
		attribute.String("tlsbench.run.id", r.ID),
		attribute.String("tlsbench.tls.library", r.TLSLibrary),
	}
	// An instance of its own per shard: Prometheus' OTLP receiver makes it
	// the instance label, so that the shards' series never collide.
	instance := r.ID
	if r.Shard != "" {
		kv = append(kv, attribute.String("tlsbench.shard", r.Shard))
		instance += " " + r.Shard
	}
	return append(kv, semconv.ServiceInstanceID(instance))
}

func (o *otlpSink) name() string { return o.where }

func (o *otlpSink) export(ctx context.Context, snap snapshot) error {
	return o.exp.Export(ctx, o.metrics(snap, time.Now()))
}

func (o *otlpSink) shutdown(ctx context.Context) error { return o.exp.Shutdown(ctx) }

// metrics is snap as OTLP's data: gauges, cumulative monotonic sums and
// cumulative exponential histograms from the run's start.
func (o *otlpSink) metrics(snap snapshot, now time.Time) *metricdata.ResourceMetrics {
	var ms []metricdata.Metrics
	byName := map[string]int{}
	at := func(name, unit string, data metricdata.Aggregation) {
		byName[name] = len(ms)
		ms = append(ms, metricdata.Metrics{Name: OTLPName(name), Unit: unit, Data: data})
	}
	for _, p := range snap.points {
		i, ok := byName[p.name]
		if !ok {
			switch p.kind {
			case counter:
				at(p.name, "1", metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true})
			default:
				at(p.name, unitOf(p.name), metricdata.Gauge[float64]{})
			}
			i = byName[p.name]
		}
		switch d := ms[i].Data.(type) {
		case metricdata.Sum[float64]:
			d.DataPoints = append(d.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(p.labels), StartTime: o.start, Time: now, Value: p.value})
			ms[i].Data = d
		case metricdata.Gauge[float64]:
			d.DataPoints = append(d.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(p.labels), Time: now, Value: p.value})
			ms[i].Data = d
		}
	}
	for _, h := range snap.hists {
		i, ok := byName[h.name]
		if !ok {
			at(h.name, "s", metricdata.ExponentialHistogram[float64]{Temporality: metricdata.CumulativeTemporality})
			i = byName[h.name]
		}
		d := ms[i].Data.(metricdata.ExponentialHistogram[float64])
		d.DataPoints = append(d.DataPoints, metricdata.ExponentialHistogramDataPoint[float64]{
			Attributes: attrs(h.labels), StartTime: o.start, Time: now,
			Count: h.exp.Count, Sum: h.exp.Sum, Min: metricdata.NewExtrema(h.exp.Min), Max: metricdata.NewExtrema(h.exp.Max),
			Scale: h.exp.Scale, PositiveBucket: metricdata.ExponentialBucket{Offset: h.exp.Offset, Counts: h.exp.Counts},
		})
		ms[i].Data = d
	}
	return &metricdata.ResourceMetrics{Resource: o.res, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/tlsbench/tlsbench/internal/export"}, Metrics: ms}}}
}

// OTLPName is the name a series goes by over OTLP: its Prometheus name
// but for the rate, whose unit (1/s) Prometheus' OTLP translation spells
// out itself: tlsbench_rate_per_second would come out
// tlsbench_rate_per_second_per_second.
func OTLPName(name string) string {
	if name == Rate {
		return strings.TrimSuffix(Rate, "_per_second")
	}
	return name
}

// unitOf is a gauge's unit, from its name. Prometheus' OTLP translation
// adds a unit's name to a metric's unless it is there (s: _seconds, %:
// _percent; 1/s: _per_second, see OTLPName) and _ratio to a gauge of unit
// 1; counts are annotations ({round_trip}), which it leaves out: so every
// series reaches Prometheus with the name the Pushgateway gives it.
func unitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "_percent"):
		return "%"
	case strings.Contains(name, "_seconds"):
		return "s"
	case strings.HasSuffix(name, "_per_second"):
		return "1/s"
	case name == PhaseRoundTrips:
		return "{round_trip}"
	case name == GatePassed:
		return "{gate}" // 1 passed, 0 failed: not a ratio
	}
	return "1"
}

func attrs(labels []label) attribute.Set {
	kv := make([]attribute.KeyValue, len(labels))
	for i, l := range labels {
		kv[i] = attribute.String(l.name, l.value)
	}
	return attribute.NewSet(kv...)
}
