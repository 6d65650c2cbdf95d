// Package exporttest runs real receivers of what package export sends,
// for tests: an OTLP metrics receiver over HTTP and gRPC built from the
// OTLP protocol's own Go types, and a Pushgateway's push API decoding
// with Prometheus' exposition parser (expfmt).
package exporttest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/tlsbench/tlsbench/internal/drivertest"
)

// OTLP is a running OTLP metrics receiver.
type OTLP struct {
	URL  string // http://127.0.0.1:PORT
	mu   sync.Mutex
	reqs []*colmetrics.ExportMetricsServiceRequest
}

// Requests are the export requests received so far.
func (o *OTLP) Requests() []*colmetrics.ExportMetricsServiceRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*colmetrics.ExportMetricsServiceRequest(nil), o.reqs...)
}

func (o *OTLP) add(r *colmetrics.ExportMetricsServiceRequest) {
	o.mu.Lock()
	o.reqs = append(o.reqs, r)
	o.mu.Unlock()
}

// OTLPHTTP starts an OTLP/HTTP receiver (POST /v1/metrics, binary
// protobuf, gzip or not) stopped when t ends.
func OTLPHTTP(t testing.TB) *OTLP {
	o := &OTLP{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" {
			http.Error(w, "not an OTLP metrics export", http.StatusNotFound)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(body)
		req := &colmetrics.ExportMetricsServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(b, req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.add(req)
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

type grpcService struct {
	colmetrics.UnimplementedMetricsServiceServer
	o *OTLP
}

func (g grpcService) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	g.o.add(req)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// OTLPGRPC starts an OTLP/gRPC receiver (plaintext) stopped when t ends.
func OTLPGRPC(t testing.TB) *OTLP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &OTLP{URL: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	colmetrics.RegisterMetricsServiceServer(srv, grpcService{o: o})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return o
}

// Pushgateway is a running receiver of Prometheus' push API.
type Pushgateway struct {
	URL    string
	mu     sync.Mutex
	pushes []Push
}

// Push is one push: its method, grouping labels (job included) and
// metric families.
type Push struct {
	Method   string
	Grouping map[string]string
	Families map[string]*dto.MetricFamily
}

// Pushes are the pushes received so far.
func (p *Pushgateway) Pushes() []Push {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Push(nil), p.pushes...)
}

// PushgatewayServer starts a receiver of PUT and POST
// /metrics/job/JOB{/LABEL/VALUE}, stopped when t ends.
func PushgatewayServer(t testing.TB) *Pushgateway {
	p := &Pushgateway{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		grouping, err := groupingOf(r.URL.EscapedPath())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fams := map[string]*dto.MetricFamily{}
		b, _ := io.ReadAll(r.Body)
		dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.ResponseFormat(r.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fams[mf.GetName()] = mf
		}
		p.mu.Lock()
		p.pushes = append(p.pushes, Push{Method: r.Method, Grouping: grouping, Families: fams})
		p.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// groupingOf reads /metrics/job/JOB/L1/V1/..., a LABEL@base64 with its
// value in URL-safe base64, as the Pushgateway does.
func groupingOf(path string) (map[string]string, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/metrics/"), "/")
	if len(parts) < 2 || len(parts)%2 != 0 {
		return nil, errors.New("not /metrics/job/JOB{/LABEL/VALUE}: " + path)
	}
	g := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, value := parts[i], parts[i+1]
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			v, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(value, "="))
			if err != nil {
				return nil, err
			}
			name, value = n, string(v)
		}
		g[name] = value
	}
	return g, nil
}

// Blackhole is a URL whose server reads requests and never answers: a
// slow endpoint. Its connections close when t ends.
func Blackhole(t testing.TB) string {
	return "http://" + drivertest.Listen(t, drivertest.Drain)
}
