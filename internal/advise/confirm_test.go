package advise

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// pgbenchTLS12 is the advice on a profile like pgbench -C over TLS 1.2
// with an RSA-2048 key against PostgreSQL 15: 240 connections over 2 s.
func pgbenchTLS12(t *testing.T) result.Advised {
	t.Helper()
	p := &profile{Profile: result.Profile{Server: "127.0.0.1:5432", Engine: "postgres", Conns: 240, TLSConns: 240, Span: 2,
		Rate: result.Rate{Mean: 120}, Ops: result.Dist{P50: 4}, RTT: result.Dist{P50: 2},
		Versions: []result.Share{{Name: "TLS 1.2", Conns: 240}}, Groups: []result.Share{{Name: "P-256", Conns: 240}},
		SSLRequests: 240, ServerKey: "rsa2048", ServerKeyFrom: "capture"}, version: "TLS 1.2", group: "P-256"}
	for range 240 {
		p.samples = append(p.samples, sample{rtt: 2, setup: 20, tls: true, version: "TLS 1.2", sslRequest: true, handshakeRT: 2, setupRT: 4})
	}
	return result.Advised{Profile: p.Profile, Advice: p.advise(nil)}
}

// TestNewReplays: the replay runs the observed profile, now and one
// variant per change, and direct TLS apart on PostgreSQL 18.
func TestNewReplays(t *testing.T) {
	a := pgbenchTLS12(t)
	rs, err := NewReplays(a, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d replays, want 2 (direct TLS apart)", len(rs))
	}
	main, direct := rs[0], rs[1]
	s := main.Spec
	if s.Lab != "postgres" || !slices.Equal(s.Rates, []float64{MaxReplayRate}) || !slices.Equal(s.RTT, []time.Duration{2 * time.Millisecond}) ||
		!slices.Equal(s.TLS, []string{"1.2", "off", "1.3"}) || !slices.Equal(s.Keys, []string{"rsa2048", "ecdsa-p256"}) || !slices.Equal(s.Groups, []string{plan.GroupP256}) {
		t.Errorf("main replay %+v", s)
	}
	if !slices.ContainsFunc(main.Info().Notes, func(n string) bool { return strings.Contains(n, "replay offers 100/s") }) {
		t.Errorf("no note of the rate scaled down: %q", main.Info().Notes)
	}
	if direct.Spec.Lab != "postgres:18" || !slices.Equal(direct.Spec.Negotiation, []string{plan.NegotiationPostgres, plan.NegotiationDirect}) {
		t.Errorf("direct replay %+v", direct.Spec)
	}
	// The plans are valid runs, and pick now and one variant per change.
	if want, picked := []string{"tls1.2 rsa2048 p256 rtt2ms", "tls1.2 ecdsa-p256 p256 rtt2ms", "plain rtt2ms", "tls1.3 rsa2048 p256 rtt2ms"}, picked(t, main.Spec, plan.Connect, main.Pick); !sameSet(picked, want) {
		t.Errorf("picked %q, want %q", picked, want)
	}
	if _, err := plan.New(direct.Spec); err != nil {
		t.Fatal(err)
	}
	// Pooling runs now's variant as a pool too, at the replay's rate, on
	// connections enough for its operations in flight; no other variant.
	if !main.pooled() || !slices.Equal(s.Experiments, []plan.Experiment{plan.Connect, plan.Pool}) || !slices.Equal(s.Concurrency, []int{2}) {
		t.Errorf("pooling's replay: experiments %v, concurrency %v", s.Experiments, s.Concurrency)
	}
	if want, pooled := []string{"tls1.2 rsa2048 p256 rtt2ms"}, picked(t, s, plan.Pool, main.Pick); !slices.Equal(pooled, want) {
		t.Errorf("the pool runs %q, want %q", pooled, want)
	}

	short := a
	short.Profile.Conns, short.Profile.Span = 1, 0
	rs, _ = NewReplays(short, ReplayOptions{})
	if rs[0].Spec.Rates != nil || !slices.ContainsFunc(rs[0].Info().Notes, func(n string) bool { return strings.Contains(n, "too short for a rate") }) {
		t.Errorf("a capture too short for a rate: %+v %q", rs[0].Spec, rs[0].Info().Notes)
	}
	unknown := a
	unknown.Profile.Engine = ""
	var nl *NoLabError
	if _, err := NewReplays(unknown, ReplayOptions{}); !errors.As(err, &nl) {
		t.Errorf("an unknown engine: %v", err)
	}
}

// picked is the IDs of the variants of raw's matrix (a valid run) that
// pick keeps.
func picked(t *testing.T, raw plan.Spec, e plan.Experiment, pick func(plan.Experiment, plan.Variant) bool) []string {
	t.Helper()
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range spec.Variants() {
		if pick(e, v) {
			out = append(out, v.ID)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestConfirm: the measured saving is now's figure less the change's,
// paired by round, its interval over rounds; the error is the measured
// saving's difference from the predicted, in percent of the predicted.
func TestConfirm(t *testing.T) {
	a := pgbenchTLS12(t)
	rs, err := NewReplays(a, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	main := rs[0]
	trial := func(v string, round int, trips []float64, ms []float64, cpu time.Duration) result.Trial {
		tr := result.Trial{Experiment: plan.Connect, Variant: v, Round: round, Conns: 100, Ops: 100, ServerCPU: cpu * 100, ClientCPU: cpu * 100}
		for i, n := range trips {
			tr.Phases = append(tr.Phases, result.Phase{Name: []string{"tcp", "startup", "tls-handshake", "auth"}[i], RoundTrips: result.RoundTrips{Min: int(n), Max: int(n), Mean: n}, Latency: result.Hist{Mean: ms[i], Count: 100}})
		}
		tr.Phases = append(tr.Phases, result.Phase{Name: "close", Latency: result.Hist{Mean: 5}})
		return tr
	}
	res := &result.Result{Variants: []plan.Variant{
		{ID: "now", TLS: "1.2", Key: "rsa2048", Group: plan.GroupP256},
		{ID: "tls13", TLS: "1.3", Key: "rsa2048", Group: plan.GroupP256},
		{ID: "ecdsa", TLS: "1.2", Key: "ecdsa-p256", Group: plan.GroupP256},
	}}
	for round, jitter := range []float64{0, 0.2, -0.2} {
		res.Trials = append(res.Trials,
			trial("now", round, []float64{1, 1, 2, 3}, []float64{2, 2, 4 + jitter, 6}, 3*time.Millisecond),
			trial("tls13", round, []float64{1, 1, 1, 3}, []float64{2, 2, 2 + jitter, 6}, 3*time.Millisecond),
			trial("ecdsa", round, []float64{1, 1, 2, 3}, []float64{2, 2, 4 + jitter, 6}, 2*time.Millisecond),
			// now's pool: 0.5 ms of server CPU, 0.25 of client CPU an
			// operation on a kept connection.
			result.Trial{Experiment: plan.Pool, Variant: "now", Round: round, Conns: 2, Ops: 1000, ServerCPU: 500 * time.Millisecond, ClientCPU: 250 * time.Millisecond})
	}
	if err := main.Confirm(&a, res); err != nil {
		t.Fatal(err)
	}
	find := func(name string) result.Change {
		i := slices.IndexFunc(a.Advice, func(c result.Change) bool { return c.Change == name })
		return a.Advice[i]
	}
	tls13 := find("TLS 1.2 → 1.3")
	// Predicted: 1 round trip of 2 ms; measured: 2 ms in every round.
	if *tls13.RoundTripsMeasured != 1 || *tls13.Setup.Measured != *tls13.Setup.Predicted || *tls13.Setup.MeasuredCI != 0 || *tls13.Setup.ErrorPct != 0 {
		t.Errorf("TLS 1.3: round trips %v, setup now %v predicted %v measured %v ±%v error %v", *tls13.RoundTripsMeasured, *tls13.Setup.Now, *tls13.Setup.Predicted, *tls13.Setup.Measured, *tls13.Setup.MeasuredCI, tls13.Setup.ErrorPct)
	}
	ecdsa := find("RSA → ECDSA P-256 server key")
	if *ecdsa.RoundTripsMeasured != 0 || *ecdsa.Server.Now != 3 || *ecdsa.Server.Measured != 2 || ecdsa.Server.ErrorPct != nil || *ecdsa.Capacity.Measured != 500 {
		t.Errorf("ECDSA: server CPU %+v, capacity %+v", ecdsa.Server, ecdsa.Capacity)
	}
	if off := find("TLS off (the bound)"); !strings.Contains(off.Unmeasured, "no trial of plain") {
		t.Errorf("TLS off without its trials: %q", off.Unmeasured)
	}
	// Pooling: now's own setup phases, all of them here.
	if pool := find("pooling"); *pool.RoundTripsMeasured != 7 || *pool.Setup.Measured != *pool.Setup.Now-14 {
		t.Errorf("pooling: round trips %v, setup %v → %v", *pool.RoundTripsMeasured, *pool.Setup.Now, *pool.Setup.Measured)
	}
	// Its CPU: a new connection's (3 ms) against the replay's operations
	// per connection pooled (1 × 0.5 ms; the client's 0.25).
	if pool := find("pooling"); main.Info().PerConn != 1 || !near(*pool.Server.Now, 3) || !near(*pool.Server.Measured, 0.5) || !near(*pool.Client.Measured, 0.25) || pool.Bytes.Measured != nil {
		t.Errorf("pooling's CPU: per conn %d, server %+v, client %+v, bytes %+v", main.Info().PerConn, pool.Server, pool.Client, pool.Bytes)
	}
	if len(a.Replays) != 1 || !slices.Equal(a.Replays[0].Variants, []string{"now", "tls13", "ecdsa"}) {
		t.Errorf("replays %+v", a.Replays)
	}
}

// TestNewReplaysStack: --client replays through a client stack what it
// can (closed loop, its own key shares, said), and refuses pooling with
// the reason; direct TLS stays Go's, said.
func TestNewReplaysStack(t *testing.T) {
	a := pgbenchTLS12(t)
	rs, err := NewReplays(a, ReplayOptions{Client: "libpq"})
	if err != nil {
		t.Fatal(err)
	}
	main, direct := rs[0], rs[1]
	s := main.Spec
	if !slices.Equal(s.ClientStacks, []string{"libpq"}) || s.Rates != nil || s.Groups != nil || s.PerConn != nil {
		t.Errorf("the stack's replay %+v", s)
	}
	if want, picked := []string{"libpq tls1.2 rsa2048 rtt2ms", "libpq tls1.2 ecdsa-p256 rtt2ms", "libpq plain rtt2ms", "libpq tls1.3 rsa2048 rtt2ms"}, picked(t, s, plan.Connect, main.Pick); !sameSet(picked, want) {
		t.Errorf("picked %q, want %q", picked, want)
	}
	info := main.Info()
	if !strings.HasPrefix(info.Client, "libpq (--client)") || !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "closed loops only") }) {
		t.Errorf("client %q, notes %q", info.Client, info.Notes)
	}
	if why := main.skipped["pooling"]; !strings.Contains(why, "client libpq reports each connection's time") {
		t.Errorf("pooling through libpq: %q", why)
	}
	if direct.Spec.ClientStacks != nil || !slices.ContainsFunc(direct.Info().Notes, func(n string) bool { return strings.Contains(n, "replayed with Go's client, not libpq") }) {
		t.Errorf("direct replay %+v, notes %q", direct.Spec, direct.Info().Notes)
	}
	if _, err := NewReplays(a, ReplayOptions{Client: "hiredis"}); err == nil || !strings.HasPrefix(err.Error(), "--client: client hiredis speaks redis, not postgres") {
		t.Errorf("another engine's stack: %v", err)
	}
}

// TestReplayed: the group a lab run offers for a selection: the observed
// one as --group names it, Go's default offer for a HelloRetryRequest,
// for a group Go lacks, and in TLS 1.2 for an ECDSA key whose curve the
// group is not (TLS 1.2's supported groups bound the certificate's curve
// too: the lab MariaDB refused ECDSA P-256 to a client offering X25519).
func TestReplayed(t *testing.T) {
	p := &profile{}
	for _, tt := range []struct {
		in   sel
		want string
	}{
		{sel{tls: "1.2", key: "rsa2048", group: "X25519", helloRetry: "no"}, plan.GroupX25519},
		{sel{tls: "1.2", key: "ecdsa-p256", group: "X25519", helloRetry: "no"}, ""},
		{sel{tls: "1.2", key: "ecdsa-p256", group: "P-256", helloRetry: "no"}, plan.GroupP256},
		{sel{tls: "1.3", key: "ecdsa-p256", group: "X25519", helloRetry: "no"}, plan.GroupX25519},
		{sel{tls: "1.3", key: "rsa2048", group: "P-256", helloRetry: "yes"}, ""},
		{sel{tls: "1.3", key: "rsa2048", group: "X448", helloRetry: "no"}, ""},
		{sel{tls: "1.2", key: "rsa2048", group: plan.GroupX25519MLKEM768}, ""},
	} {
		if got := p.replayed(tt.in); got.group != tt.want || got.helloRetry != "" {
			t.Errorf("%s: group %q, want %q", tt.in, got.group, tt.want)
		}
	}
}
