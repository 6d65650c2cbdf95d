package wire

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestChecks sets the run's mean phases beside the wire's per variant:
// the wire's connections are those starting within a connect trial's time;
// phases the wire sees only as encrypted flights are summed beside them;
// a count that differs is noted.
func TestChecks(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	phase := func(name string, ms float64, trips int) result.Phase {
		return result.Phase{Name: name, Latency: result.Hist{Count: 2, Mean: ms}, RoundTrips: result.RoundTrips{Mean: float64(trips)}}
	}
	trials := []result.Trial{
		{Experiment: plan.Connect, Variant: "plain", Start: t0, Elapsed: time.Second, Conns: 2,
			Phases: []result.Phase{phase("tcp", 0.1, 1), phase("query", 0.3, 1)}},
		{Experiment: plan.Connect, Variant: "tls1.3", Start: t0.Add(2 * time.Second), Elapsed: time.Second, Conns: 2,
			Phases: []result.Phase{phase("tcp", 0.1, 1), phase("tls-handshake", 1, 1), phase("query", 0.3, 1)}},
		// Not connect: not the wire check's.
		{Experiment: plan.Pool, Variant: "plain", Start: t0.Add(4 * time.Second), Elapsed: time.Second},
	}
	conn := func(at time.Duration, phases ...netx.Phase) *Conn {
		return &Conn{Trace: netx.Trace{Start: t0.Add(at), End: t0.Add(at + time.Millisecond), Phases: phases}}
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	conns := []*Conn{
		conn(100*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.2), RoundTrips: 1}, netx.Phase{Name: "query", Duration: ms(0.4), RoundTrips: 1}),
		// One plain connection of two: noted.
		conn(2500*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.2), RoundTrips: 1}, netx.Phase{Name: "tls-handshake", Duration: ms(2), RoundTrips: 1},
			netx.Phase{Name: PhaseEncrypted, Duration: ms(0.5), RoundTrips: 1}),
		conn(2600*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.4), RoundTrips: 1}, netx.Phase{Name: "tls-handshake", Duration: ms(4), RoundTrips: 1},
			netx.Phase{Name: PhaseEncrypted, Duration: ms(0.7), RoundTrips: 1}),
		conn(10*time.Second, netx.Phase{Name: "tcp", Duration: ms(9)}), // in no connect trial
	}
	checks, notes := Checks(nil, trials, conns)
	want := []result.WireCheck{
		{Variant: "plain", Phase: "tcp", Conns: 1, Tool: 0.1, Wire: 0.2, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "plain", Phase: "query", Conns: 1, Tool: 0.3, Wire: 0.4, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: "tcp", Conns: 2, Tool: 0.1, Wire: 0.3, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: "tls-handshake", Conns: 2, Tool: 1, Wire: 3, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: PhaseEncrypted, Conns: 2, Tool: 0.3, Wire: 0.6, ToolRoundTrips: 1, WireRoundTrips: 1},
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if len(checks) != len(want) {
		t.Fatalf("checks %+v, want %+v", checks, want)
	}
	for i, c := range checks {
		w := want[i]
		if c.Variant != w.Variant || c.Phase != w.Phase || c.Conns != w.Conns || !near(c.Tool, w.Tool) || !near(c.Wire, w.Wire) ||
			!near(c.ToolRoundTrips, w.ToolRoundTrips) || !near(c.WireRoundTrips, w.WireRoundTrips) {
			t.Errorf("check %d: %+v, want %+v", i, c, w)
		}
	}
	wantNotes := []string{
		"--wire: plain opened 2 connections in its trials, the capture shows 1 starting within them",
		"--wire: tls1.3: the wire cannot see inside the encrypted flights after the handshake; tlsbench's query are summed beside them as encrypted",
	}
	for _, w := range wantNotes {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, w) }) {
			t.Errorf("notes %q: no %q", notes, w)
		}
	}
}

// TestChecksFoldData: where the wire does not decode a plaintext protocol
// (Redis, MongoDB) it has one data phase; tlsbench's phases it did not see
// are summed beside it, not each set against a phase of 0 connections.
func TestChecksFoldData(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	phase := func(name string, ms float64, trips int) result.Phase {
		return result.Phase{Name: name, Latency: result.Hist{Count: 1, Mean: ms}, RoundTrips: result.RoundTrips{Mean: float64(trips)}}
	}
	trials := []result.Trial{{Experiment: plan.Connect, Variant: "plain", Start: t0, Elapsed: time.Second, Conns: 1,
		Phases: []result.Phase{phase("tcp", 0.1, 1), phase("auth", 0.2, 1), phase("query", 0.1, 1), phase("close", 0.05, 0)}}}
	conns := []*Conn{{Trace: netx.Trace{Start: t0.Add(time.Millisecond), End: t0.Add(2 * time.Millisecond), Phases: []netx.Phase{
		{Name: "tcp", Duration: 100 * time.Microsecond, RoundTrips: 1},
		{Name: PhaseData, Duration: 300 * time.Microsecond, RoundTrips: 2},
		{Name: "close", Duration: 50 * time.Microsecond}}}}}
	checks, notes := Checks(nil, trials, conns)
	var phases []string
	for _, c := range checks {
		phases = append(phases, c.Phase)
		if c.Conns != 1 {
			t.Errorf("%s: %d connections on the wire, want 1", c.Phase, c.Conns)
		}
		if c.Phase == PhaseData && (c.Tool < 0.3-1e-9 || c.Tool > 0.3+1e-9 || c.ToolRoundTrips != 2) {
			t.Errorf("data: tlsbench %.3g ms [%g], want auth and query summed: 0.3 ms [2]", c.Tool, c.ToolRoundTrips)
		}
	}
	if want := []string{"tcp", "close", PhaseData}; !slices.Equal(phases, want) {
		t.Errorf("phases %q, want %q", phases, want)
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "does not decode this protocol's plaintext; tlsbench's auth, query are summed beside them as data")
	}) {
		t.Errorf("notes %q: no note of the fold", notes)
	}
}

// TestStackChecks: a client stack's trial has the last connections the
// capture shows starting before its done, as many as it reported (not
// its warm-up's, which come first; its first measured one may start
// before its warm line was read, the trial's Start); it has the
// wire's phases alone, with their split, and what the wire shows it
// negotiated, checked against the variant: another version, or a
// HelloRetryRequest where the variant names its group, fails it; where
// the stack said otherwise, a note.
func TestStackChecks(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	variants := []plan.Variant{
		{ID: "go tls1.3", TLS: "1.3", Client: plan.GoClient},
		{ID: "psycopg plain", TLS: "off", Client: "psycopg"},
		{ID: "psycopg tls1.3", TLS: "1.3", Client: "psycopg"},
		{ID: "psycopg tls1.3 p256", TLS: "1.3", Group: plan.GroupP256, Client: "psycopg"},
	}
	stackTrial := func(id string, at time.Duration, said *result.Negotiated) result.Trial {
		return result.Trial{Experiment: plan.Connect, Variant: id, Start: t0.Add(at), Elapsed: 500 * time.Millisecond,
			Ended: t0.Add(at + time.Second), Conns: 2, Negotiated: said}
	}
	trials := []result.Trial{
		stackTrial("psycopg plain", 0, nil),
		stackTrial("psycopg tls1.3", 10*time.Second, &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_256_GCM_SHA384", Group: "X25519"}),
		stackTrial("psycopg tls1.3 p256", 20*time.Second, nil),
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	conn := func(at, took time.Duration, n *result.Negotiated, retry bool) *Conn {
		phases := []netx.Phase{{Name: "tcp", Duration: ms(0.1), RoundTrips: 1}, {Name: "startup", Duration: ms(0.2), RoundTrips: 1}}
		split := []result.PhaseSplit{{Phase: "tcp", Network: 0.1}, {Phase: "startup", Client: 0.05, Server: 0.1, Network: 0.05}}
		if n != nil {
			phases = append(phases, netx.Phase{Name: "tls-handshake", Duration: ms(2), RoundTrips: 1})
		}
		return &Conn{Trace: netx.Trace{Start: t0.Add(at), End: t0.Add(at + took), Phases: phases}, Split: split, Negotiated: n, HelloRetry: retry}
	}
	tls12 := &result.Negotiated{Version: "TLS 1.2", Suite: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", Group: "P-256"}
	tls13 := &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_256_GCM_SHA384", Group: "P-256"}
	conns := []*Conn{
		conn(-100*time.Millisecond, 50*time.Millisecond, nil, false), // the warm-up's: ended before the warm line
		conn(-time.Millisecond, 5*time.Millisecond, nil, false),      // began before tlsbench read the warm line
		conn(900*time.Millisecond, 5*time.Millisecond, nil, false),   // after the operations' span, before done
		conn(10100*time.Millisecond, 5*time.Millisecond, tls13, true),
		conn(10200*time.Millisecond, 5*time.Millisecond, tls12, false),
		conn(20100*time.Millisecond, 5*time.Millisecond, tls13, true),
		conn(20200*time.Millisecond, 5*time.Millisecond, tls13, false),
	}
	checks, notes := Checks(variants, trials, conns)
	for _, c := range checks {
		if c.Client != "psycopg" || c.Tool != 0 || c.ToolRoundTrips != 0 || c.Conns != 2 || c.WireRoundTrips != 1 || c.Split == nil {
			t.Errorf("check %+v", c)
		}
		if c.Variant == "psycopg plain" && c.Phase == "startup" && (c.Split.Client != 0.05 || c.Split.Server != 0.1) {
			t.Errorf("split %+v", c.Split)
		}
	}
	if len(checks) != 2+3+3 || len(notes) != 0 {
		t.Errorf("%d checks, notes %q", len(checks), notes)
	}
	stacks, notes := Stacks(variants, trials, conns)
	if len(stacks) != 3 {
		t.Fatalf("stacks %+v", stacks)
	}
	want := []struct {
		tls, retries int64
		cert, failed string
	}{
		{0, 0, "", ""},
		{2, 1, "hidden", "asked for TLS 1.3, negotiated TLS 1.2 on 1 of 2 connections"},
		{2, 1, "hidden", "asked for the p256 key-exchange group, the server answered with a HelloRetryRequest on 1 of 2 connections"},
	}
	for i, w := range want {
		s := stacks[i]
		if s.Conns != 2 || s.TLS != w.tls || s.HelloRetries != w.retries || s.ClientCert != w.cert || s.Failed != w.failed || s.Client != "psycopg" {
			t.Errorf("%s: %+v, want %+v", s.Variant, s, w)
		}
	}
	if len(notes) != 1 || notes[0] != "--wire: psycopg tls1.3: client psycopg said it negotiated TLS 1.3 TLS_AES_256_GCM_SHA384 X25519, the wire shows TLS 1.3 TLS_AES_256_GCM_SHA384 P-256" {
		t.Errorf("notes %q", notes)
	}
}
