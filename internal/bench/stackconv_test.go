package bench

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestStackConversion: a client's Report becomes a trial as Go's tallies
// do: operations, their times, failures by "phase: kind", a C tool's
// Totals, and what a failed run did not run counted as failed.
func TestStackConversion(t *testing.T) {
	ms := int64(time.Millisecond)
	ops := []clientstack.Op{
		{Worker: 0, Start: 0, End: 2 * ms},
		{Worker: 1, Start: 1 * ms, End: 4 * ms, Phase: "tls-handshake", Kind: "tls", Message: "certificate verify failed"},
		{Worker: 0, Start: 2 * ms, End: 6 * ms},
		{Worker: 1, Start: 4 * ms, End: 10 * ms},
	}
	tlsLine := &clientstack.Negotiated{Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384", Group: "secp256r1", Resumed: "-"}
	connect := clientstack.Run{Experiment: "connect", Concurrency: 2, Duration: 100 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		rep       clientstack.Report
		run       clientstack.Run
		err       error
		ops       int64
		conns     int64
		errors    map[string]int64
		elapsed   time.Duration
		latencies int64
	}{
		{"operations", clientstack.Report{Ops: ops, TLS: tlsLine, CPU: time.Millisecond}, connect, nil,
			3, 3, map[string]int64{"tls-handshake: tls": 1}, 10 * time.Millisecond, 3},
		{"pool holds its connections", clientstack.Report{Ops: ops}, clientstack.Run{Experiment: "pool", Concurrency: 2, Duration: time.Second}, nil,
			3, 2, map[string]int64{"tls-handshake: tls": 1}, 10 * time.Millisecond, 3},
		// 4 reported in 10 ms of a 100 ms run: 36 more at that rate.
		{"a crash: the rest at the rate so far", clientstack.Report{Ops: ops}, connect, errors.New("client x exited during a run"),
			3, 3, map[string]int64{"tls-handshake: tls": 1, clientFailed: 36}, 10 * time.Millisecond, 3},
		{"a crash: the rest of the count", clientstack.Report{Ops: ops}, clientstack.Run{Experiment: "connect", Concurrency: 2, MaxOps: 10, Duration: time.Minute},
			errors.New("client x exited during a run"), 3, 3, map[string]int64{"tls-handshake: tls": 1, clientFailed: 6}, 10 * time.Millisecond, 3},
		{"a crash before any operation: one per worker", clientstack.Report{Elapsed: time.Second}, connect, errors.New("client x exited during a run"),
			0, 0, map[string]int64{clientFailed: 2}, time.Second, 0},
		{"a tool's totals", clientstack.Report{Totals: &clientstack.Totals{Ops: 500, Errors: 5, ErrorSample: "Error: Connection reset", Mean: 2 * time.Millisecond, P99: 9 * time.Millisecond}, Elapsed: time.Second},
			clientstack.Run{Experiment: "pool", Concurrency: 4, Duration: time.Second}, nil, 500, 4, map[string]int64{"other: other": 5}, time.Second, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr result.Trial
			err := stackTally(tc.rep, tc.run, tc.err).fill(&tr, tc.rep, tc.run, time.Now())
			if (tc.ops == 0) != (err != nil) {
				t.Errorf("err %v", err)
			}
			if tr.Ops != tc.ops || tr.Conns != tc.conns || tr.Elapsed != tc.elapsed || tr.Latency.Count != tc.latencies {
				t.Errorf("ops %d conns %d elapsed %v latencies %d, want %d %d %v %d", tr.Ops, tr.Conns, tr.Elapsed, tr.Latency.Count, tc.ops, tc.conns, tc.elapsed, tc.latencies)
			}
			if len(tr.Errors) != len(tc.errors) {
				t.Errorf("errors %v, want %v", tr.Errors, tc.errors)
			}
			for k, n := range tc.errors {
				if tr.Errors[k] != n || tr.ErrorSamples[k] == "" {
					t.Errorf("errors %v samples %v, want %v", tr.Errors, tr.ErrorSamples, tc.errors)
				}
			}
		})
	}
	var tr result.Trial
	rep := clientstack.Report{Ops: ops, TLS: tlsLine, CPU: 3 * time.Millisecond}
	if err := stackTally(rep, connect, nil).fill(&tr, rep, connect, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Each operation's end - start: 2, 4 and 6 ms.
	if math.Abs(tr.Latency.Mean-4) > 0.01 || tr.Latency.Max < 6 || tr.ClientCPU != 3*time.Millisecond {
		t.Errorf("latency %+v, client CPU %v", tr.Latency, tr.ClientCPU)
	}
	if n := tr.Negotiated; n == nil || n.Version != "TLS 1.3" || n.Suite != "TLS_AES_256_GCM_SHA384" || n.Group != "P-256" {
		t.Errorf("negotiated %+v", n)
	}
	if s := tr.ErrorSamples["tls-handshake: tls"]; s != "tls-handshake: certificate verify failed" {
		t.Errorf("sample %q", s)
	}
}
