package advise

import (
	"errors"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ph is a phase of a synthetic connection: its time, round trips and the
// client's and server's share of its time (the network's is the rest).
type ph struct {
	name           string
	ms             float64
	rt             int
	client, server float64
}

func msd(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// mk makes a decoded connection that begins at at (s after t0) with the
// phases given, as the wire decoder would.
func mk(server string, proto string, at float64, rtt float64, n *result.Negotiated, phases ...ph) *wire.Conn {
	start := t0.Add(msd(at * 1000))
	c := &wire.Conn{Client: netip.MustParseAddrPort("127.0.0.1:40000"), Server: netip.MustParseAddrPort(server),
		Protocol: proto, RTT: msd(rtt), Negotiated: n}
	c.Trace = netx.Trace{Start: start, Sent: 600, Received: 1400}
	t := start
	for _, p := range phases {
		c.Trace.Phases = append(c.Trace.Phases, netx.Phase{Name: p.name, Start: t, Duration: msd(p.ms), RoundTrips: p.rt})
		c.Split = append(c.Split, result.PhaseSplit{Phase: p.name, Client: p.client, Server: p.server, Network: p.ms - p.client - p.server})
		t = t.Add(msd(p.ms))
	}
	c.Trace.End = t
	if n != nil {
		c.Offered = &result.Offered{Versions: []string{n.Version}}
		c.ClientCert = "none"
	}
	return c
}

// pgTLS12 is a pgbench -C connection over TLS 1.2 (an SSLRequest first)
// at RTT rtt: 4 encrypted flights, the SCRAM login's 3 (its last answer
// the long one, with the server's parameters) and a query; each answer
// begins rtt+1 ms after the one before, so the login takes 3*rtt+3 ms.
func pgTLS12(at, rtt float64) *wire.Conn {
	c := mk("127.0.0.1:5432", wire.ProtoPostgres, at, rtt, &result.Negotiated{Version: "TLS 1.2", Suite: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", Group: "X25519", PeerKey: "RSA-2048"},
		ph{"tcp", rtt, 1, 0, 0},
		ph{"startup", rtt + 0.2, 1, 0.1, 0.1},
		ph{"tls-handshake", 2*rtt + 3, 2, 1, 2},
		ph{"encrypted", 4*rtt + 5, 4, 2, 3},
		ph{"close", 0.1, 0, 0.1, 0})
	c.Flights, c.CertChainBytes = 4, 1500
	enc := c.Trace.Phases[3].Start
	for i, n := range []int{65, 115, 494, 88} {
		c.Answers = append(c.Answers, wire.Answer{At: enc.Add(msd(float64(i+1) * (rtt + 1))), Bytes: n})
	}
	return c
}

func collect(conns ...*wire.Conn) *Collector {
	var c Collector
	for _, x := range conns {
		c.Add(x)
	}
	return &c
}

func find(t *testing.T, a result.Advised, name string) result.Change {
	t.Helper()
	for _, c := range a.Advice {
		if c.Change == name {
			return c
		}
	}
	var names []string
	for _, c := range a.Advice {
		names = append(names, c.Change)
	}
	t.Fatalf("no change %q among %q", name, names)
	return result.Change{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestRoundTrips checks each change's round trips and its setup time on
// synthetic connections: the setup less the round trips at each
// connection's own RTT, less the client's and server's time of what goes
// whole.
func TestRoundTrips(t *testing.T) {
	// Two RTTs: 2 ms and 10 ms; setup = all but close.
	pg := []*wire.Conn{pgTLS12(0, 2), pgTLS12(0.5, 10), pgTLS12(1.2, 2), pgTLS12(2.7, 10)}
	setup := func(rtt float64) float64 { return rtt + (rtt + 0.2) + (2*rtt + 3) + (4*rtt + 5) }
	https13 := mk("127.0.0.1:8443", wire.ProtoTLS, 0, 4, &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_128_GCM_SHA256", Group: "P-256", HelloRetry: true},
		ph{"tcp", 4, 1, 0, 0}, ph{"tls-handshake", 8 + 2, 2, 1, 1}, ph{"encrypted", 4 + 1, 1, 0.5, 0.5}, ph{"close", 0, 0, 0, 0})
	https13.HelloRetry, https13.Flights = true, 1
	https13.Offered.ALPN = []string{"http/1.1"}
	plainPG := mk("127.0.0.1:5432", wire.ProtoPostgres, 0, 3, nil,
		ph{"tcp", 3, 1, 0, 0}, ph{"startup", 3.5, 1, 0.2, 0.3}, ph{"auth", 7, 2, 0.5, 0.5}, ph{"query", 3.2, 1, 0.1, 0.1}, ph{"close", 0, 0, 0, 0})

	tests := []struct {
		name    string
		conns   []*wire.Conn
		key     string
		change  string
		rt      float64 // saved per connection
		setup   float64 // predicted mean, ms
		na      bool
		applies string
	}{
		{"tls1.3 on tls1.2", pg, "", "TLS 1.2 → 1.3", 1, (setup(2) - 2 + setup(10) - 10) / 2, false, "4 of 4 connections made a full TLS 1.2 handshake"},
		// The SSLRequest's client time goes (0.1 ms); the server's there,
		// its backend's start, stays.
		{"direct TLS", pg, "", "PostgreSQL 17+ direct TLS", 1, (setup(2) - 2 - 0.1 + setup(10) - 10 - 0.1) / 2, false, "sent an SSLRequest"},
		{"resumption on postgres", pg, "", "session resumption on", 0, 0, true, "PostgreSQL never resumes a TLS session"},
		// Pooling saves the login too: its 3 round trips and the rest of
		// its time (3 ms), besides tcp, the SSLRequest and the handshake.
		{"pooling", pg, "", "pooling", 7, (setup(2) - 7*2 - 0.2 - 3 - 3 + setup(10) - 7*10 - 0.2 - 3 - 3) / 2, false, "1 operation at the median"},
		{"tls off", pg, "", "TLS off (the bound)", 3, (setup(2) - 3*2 - 3 - 0.1 + setup(10) - 3*10 - 3 - 0.1) / 2, false, "4 of 4 connections use TLS"},
		{"key seen", pg, "", "RSA → ECDSA P-256 server key", 0, setup(2)/2 + setup(10)/2, false, "rsa2048 key (seen in the TLS 1.2 certificate)"},
		{"hello retry", []*wire.Conn{https13}, "", "avoid HelloRetryRequest", 1, 4 + 10 + 5 - 4, false, "1 of 1 TLS connections paid a HelloRetryRequest"},
		{"tls1.3 already", []*wire.Conn{https13}, "", "TLS 1.2 → 1.3", 0, 0, true, "negotiated TLS 1.3 already"},
		{"key assumed", []*wire.Conn{https13}, "", "RSA → ECDSA P-256 server key", 0, 19, false, "assumed: TLS 1.3 encrypts the certificate"},
		{"key given", []*wire.Conn{https13}, "ecdsa-p256", "RSA → ECDSA P-256 server key", 0, 0, true, "ecdsa-p256 already (as --server-key says)"},
		{"resumption on https", []*wire.Conn{https13}, "", "session resumption on", 0, 19, false, "1 of 1 TLS connections made a full handshake"},
		{"hybrid on", []*wire.Conn{https13}, "", "post-quantum hybrid on", 0, 19, false, "negotiated P-256"},
		{"plain postgres", []*wire.Conn{plainPG}, "", "TLS off → on (TLS 1.3)", -2, 16.7 + 2*3, false, "none of the 1 connections uses TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := collect(tt.conns...).Advise(result.Capture{Source: "x.pcap"}, Options{ServerKey: tt.key})
			if err != nil {
				t.Fatal(err)
			}
			c := find(t, out[0], tt.change)
			if c.NotApplicable != tt.na || !strings.Contains(c.Applies, tt.applies) {
				t.Errorf("applies %v: %q, want %v: %q", !c.NotApplicable, c.Applies, !tt.na, tt.applies)
			}
			if tt.na {
				return
			}
			if !near(c.RoundTripsSaved, tt.rt) || c.Setup.Predicted == nil || !near(*c.Setup.Predicted, tt.setup) {
				t.Errorf("saved %v round trips, setup %v → %v ms; want %v, %v", c.RoundTripsSaved, *c.Setup.Now, deref(c.Setup.Predicted), tt.rt, tt.setup)
			}
			// No calibration: no CPU figure, and the command that gets them.
			if c.Server.Now != nil || c.Server.Predicted != nil || c.Client.Predicted != nil || c.Capacity.Predicted != nil || c.Cores.Predicted != nil {
				t.Errorf("CPU figures without a calibration: %+v %+v", c.Server, c.Client)
			}
			if c.Setup.Measured != nil || c.Setup.ErrorPct != nil {
				t.Errorf("measured figures without a replay: %+v", c.Setup)
			}
			if !strings.HasPrefix(out[0].Calibrate, "tlsbench connect ") {
				t.Errorf("no calibration command: %q", out[0].Calibrate)
			}
		})
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestProfile checks the profile's counts, rate and distributions against
// what the synthetic connections hold.
func TestProfile(t *testing.T) {
	conns := []*wire.Conn{pgTLS12(0, 2), pgTLS12(0.5, 10), pgTLS12(1.2, 2), pgTLS12(2.7, 10), pgTLS12(2.9, 30)}
	conns[4].Resumed = true // not PostgreSQL's way, but counted as seen
	other := mk("127.0.0.1:6379", wire.ProtoPlain, 1, 1, nil, ph{"tcp", 1, 1, 0, 0}, ph{"data", 5, 4, 1, 3}, ph{"close", 0, 0, 0, 0})
	out, err := collect(append(conns, other)...).Advise(result.Capture{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("%d profiles, want one per endpoint (2)", len(out))
	}
	p := out[0].Profile
	if p.Conns != 5 || p.TLSConns != 5 || p.Engine != "postgres" || p.SSLRequests != 5 || p.Resumed != 1 || p.ServerKey != "rsa2048" || p.ServerKeyFrom != "capture" || p.CertChainBytes != 1500 {
		t.Errorf("profile %+v", p)
	}
	if !slices.Equal(p.Rate.PerSecond, []int64{2, 1, 2}) || p.Rate.Peak != 2 {
		t.Errorf("rate %+v, want 2, 1, 2 per second, peak 2", p.Rate)
	}
	if d := p.RTT; d.P50 != 10 || d.P95 != 30 || d.Min != 2 || !near(d.Mean, 54.0/5) {
		t.Errorf("RTT %+v", d)
	}
	if d := p.Ops; d.P50 != 1 || d.Max != 1 || !strings.HasPrefix(p.OpsKind, "queries") {
		t.Errorf("ops %+v (%s)", d, p.OpsKind)
	}
	if !slices.Equal(p.Login, []result.Share{{Name: "SCRAM: 3 round trips", Conns: 5}}) {
		t.Errorf("login %+v", p.Login)
	}
	if len(p.Versions) != 1 || p.Versions[0] != (result.Share{Name: "TLS 1.2", Conns: 5}) || p.Groups[0].Name != "X25519" {
		t.Errorf("shares %+v %+v", p.Versions, p.Groups)
	}
	r := out[1].Profile
	if r.Engine != "redis" || r.Ops.P50 != 4 || r.TLSConns != 0 || r.ServerKey != "" || r.Rate.Peak != 0 {
		t.Errorf("redis profile %+v", r)
	}
	// A plain capture's advice: the cost of TLS, nothing else.
	var names []string
	for _, c := range out[1].Advice {
		names = append(names, c.Change)
	}
	if !slices.Equal(names, []string{"TLS off → on (TLS 1.3)", "pooling"}) && !slices.Equal(names, []string{"pooling", "TLS off → on (TLS 1.3)"}) {
		t.Errorf("plain redis advice: %q", names)
	}
}

// TestCalibration checks that CPU figures come from the calibration's
// variants only, and that a missing one is named.
func TestCalibration(t *testing.T) {
	cal := result.New()
	cal.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", Target: "lab:postgres"}
	cal.Variants = []plan.Variant{{ID: "tls1.2 rsa2048", TLS: "1.2", Key: "rsa2048"}, {ID: "tls1.3 rsa2048", TLS: "1.3", Key: "rsa2048"}}
	for round := range 3 {
		cal.Trials = append(cal.Trials,
			result.Trial{Experiment: plan.Connect, Variant: "tls1.2 rsa2048", Concurrency: 1, Round: round, Ops: 100, ServerCPU: time.Duration(300+10*round) * time.Millisecond, ClientCPU: 100 * time.Millisecond,
				BytesSent: 100000, BytesReceived: 200000, Negotiated: &result.Negotiated{Version: "TLS 1.2", PeerKey: "RSA-2048"}},
			result.Trial{Experiment: plan.Connect, Variant: "tls1.3 rsa2048", Concurrency: 1, Round: round, Ops: 100, ServerCPU: time.Duration(250+10*round) * time.Millisecond, ClientCPU: 90 * time.Millisecond,
				BytesSent: 90000, BytesReceived: 190000, Negotiated: &result.Negotiated{Version: "TLS 1.3", PeerKey: "RSA-2048"}})
	}
	// A pool's cell: 100 operations per connection, 50 bytes each.
	for round := range 3 {
		cal.Trials = append(cal.Trials, result.Trial{Experiment: plan.Connect, Variant: "tls1.2 rsa2048", Concurrency: 1, Round: round, PerConn: 100, Ops: 1000,
			ServerCPU: 100 * time.Millisecond, ClientCPU: 50 * time.Millisecond, BytesSent: 50000, Negotiated: &result.Negotiated{Version: "TLS 1.2", PeerKey: "RSA-2048"}})
	}
	conns := []*wire.Conn{pgTLS12(0, 2), pgTLS12(1, 2), pgTLS12(2, 2), pgTLS12(3, 2)}
	out, err := collect(conns...).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "/tmp/cal.json"})
	if err != nil {
		t.Fatal(err)
	}
	a := out[0]
	if a.Calibration == nil || a.Calibration.Source != "cal.json" || a.Calibration.Engine != "postgres" {
		t.Errorf("calibration %+v", a.Calibration)
	}
	c := find(t, a, "TLS 1.2 → 1.3")
	if c.Server.Now == nil || !near(*c.Server.Now, 3.1) || !near(*c.Server.Predicted, 2.6) || c.Server.PredictedCI == nil || !near(*c.Client.Predicted, 0.9) {
		t.Errorf("server CPU %+v, client %+v", c.Server, c.Client)
	}
	rate := 4.0 / (3 + setupOf(2)/1000 + 0.0001)
	if !near(*c.Capacity.Predicted, 1000/2.6) || math.Abs(*c.Cores.Predicted-2.6*rate/1000) > 1e-3 {
		t.Errorf("capacity %v, cores %v (rate %v)", *c.Capacity.Predicted, *c.Cores.Predicted, rate)
	}
	if !near(*c.Bytes.Predicted, 2000-200) {
		t.Errorf("bytes %v, want 2000 less the calibration's 200 per connection", *c.Bytes.Predicted)
	}
	// The capture negotiated X25519, which the calibration's trials do
	// not record: its cells stand in, and are named.
	if want := "the calibration has no cell tls1.2 rsa2048 group X25519 resume off negotiation postgres; used tls1.2 rsa2048 instead (it negotiated group none)"; !slices.Contains(c.Substituted, want) {
		t.Errorf("substituted %q, want %q", c.Substituted, want)
	}
	// Pooled, a connection's 2000 bytes become an operation's own 50,
	// the calibration's, not 2000 less a handshake of Go's client.
	if pool := find(t, a, "pooling"); pool.Bytes.Predicted == nil || !near(*pool.Bytes.Predicted, 50) || !near(*pool.Server.Predicted, 0.1) {
		t.Errorf("pooling: bytes %v, server CPU %v", deref(pool.Bytes.Predicted), deref(pool.Server.Predicted))
	}
	k := find(t, a, "RSA → ECDSA P-256 server key")
	if k.Server.Predicted != nil || !slices.Contains(k.Missing, "tls1.2 ecdsa-p256 group X25519 resume off negotiation postgres") {
		t.Errorf("ECDSA without its variant: %+v, missing %q", k.Server, k.Missing)
	}
	if !strings.Contains(a.Calibrate, "--key rsa2048,ecdsa-p256") {
		t.Errorf("calibrate %q", a.Calibrate)
	}
	// Another engine's calibration is refused.
	cal.Spec.Lab = "redis"
	if _, err := collect(conns...).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "cal.json"}); err == nil || !strings.Contains(err.Error(), "is a run on redis") {
		t.Errorf("another engine's calibration: %v", err)
	}
}

// setupOf is pgTLS12's time from SYN to its end, ms.
func setupOf(rtt float64) float64 { return rtt + (rtt + 0.2) + (2*rtt + 3) + (4*rtt + 5) + 0.1 }

func TestNoConnection(t *testing.T) {
	var c Collector
	_, err := c.Advise(result.Capture{Packets: 12, Unseen: map[string]int64{"began-before-capture": 2, "ended-after-capture": 1}}, Options{})
	var ne *NoConnError
	if !errors.As(err, &ne) || err.Error() != "no connection completes in the capture (2 began before the capture (no SYN), 1 were still open at its end): capture from before the first connection opens until the last one closes" {
		t.Errorf("%v", err)
	}
	_, err = collect(pgTLS12(0, 1)).Advise(result.Capture{}, Options{ServerKey: "rsa512"})
	if err == nil || !strings.HasPrefix(err.Error(), `--server-key: unknown key type "rsa512"`) {
		t.Errorf("%v", err)
	}
}

// TestCalibrationGroup: the CPU and bytes of TLS 1.3 come from the
// calibration's cell that negotiates the capture's group without a
// HelloRetryRequest, not from Go's default offer (its hybrid key share,
// and PostgreSQL 15's HelloRetryRequest); without that cell, the default
// one stands in, and is named.
func TestCalibrationGroup(t *testing.T) {
	cal := result.New()
	cal.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", Target: "lab:postgres"}
	cal.Variants = []plan.Variant{{ID: "tls1.2 rsa2048 p256", TLS: "1.2", Key: "rsa2048", Group: plan.GroupP256},
		{ID: "tls1.3 rsa2048", TLS: "1.3", Key: "rsa2048"}, {ID: "tls1.3 rsa2048 p256", TLS: "1.3", Key: "rsa2048", Group: plan.GroupP256}}
	trial := func(v, version string, retry bool, bytes int64) result.Trial {
		return result.Trial{Experiment: plan.Connect, Variant: v, Concurrency: 1, Ops: 10, ServerCPU: 30 * time.Millisecond, ClientCPU: 10 * time.Millisecond,
			BytesSent: bytes * 10, Negotiated: &result.Negotiated{Version: version, Group: "P-256", HelloRetry: retry, PeerKey: "RSA-2048"}}
	}
	for range 2 {
		cal.Trials = append(cal.Trials, trial("tls1.2 rsa2048 p256", "TLS 1.2", false, 3000),
			trial("tls1.3 rsa2048", "TLS 1.3", true, 4600), trial("tls1.3 rsa2048 p256", "TLS 1.3", false, 2950))
	}
	var conns []*wire.Conn
	for i := range 4 {
		c := pgTLS12(float64(i), 2)
		c.Negotiated.Group = "P-256"
		conns = append(conns, c)
	}
	advise := func() result.Change {
		out, err := collect(conns...).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "cal.json"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out[0].Calibrate, "--group p256") {
			t.Errorf("calibrate %q lacks the observed group", out[0].Calibrate)
		}
		return find(t, out[0], "TLS 1.2 → 1.3")
	}
	c := advise()
	if c.Bytes.Predicted == nil || !near(*c.Bytes.Predicted, 2000-50) || len(c.Substituted) > 0 {
		t.Errorf("TLS 1.3 bytes %v (substituted %q), want 50 fewer than now's 2000, from the P-256 cell", deref(c.Bytes.Predicted), c.Substituted)
	}
	cal.Trials = slices.DeleteFunc(cal.Trials, func(t result.Trial) bool { return t.Variant == "tls1.3 rsa2048 p256" })
	c = advise()
	want := "the calibration has no cell tls1.3 rsa2048 group P-256 resume off negotiation postgres HelloRetryRequest no; used tls1.3 rsa2048 instead (it negotiated group P-256 after a HelloRetryRequest)"
	if c.Bytes.Predicted == nil || !near(*c.Bytes.Predicted, 2000+1600) || !slices.Equal(c.Substituted, []string{want}) {
		t.Errorf("TLS 1.3 bytes %v, substituted %q; want 1600 more, and %q", deref(c.Bytes.Predicted), c.Substituted, want)
	}
}

// TestLoginFromCapture: real captures of PostgreSQL's SCRAM login over
// TLS 1.3 (pgbench against PostgreSQL 15, tlsbench's Go client against
// PostgreSQL 18, the wire package's test data): every login is told 3
// round trips from the server's answers, and the operations are the
// flights less the login's (the wire's goldens list the flights: 3 and 5
// for pgbench, whose first connection only checks; 8, 8 and 5 for the
// Go client's).
func TestLoginFromCapture(t *testing.T) {
	for _, tt := range []struct {
		file string
		ops  []float64
		// pool is the round trips a pool saves, per connection: tcp, the
		// SSLRequest (pgbench's all, half the Go client's: the other half
		// direct), the handshake (2 with pgbench's HelloRetryRequest) and
		// the login.
		pool float64
	}{{"pg-tls.pcap", []float64{0, 2}, 1 + 1 + 2 + 3}, {"pg18-mixed.pcap", []float64{5, 5, 2, 2, 2, 2}, 1 + 0.5 + 1 + 3}} {
		t.Run(tt.file, func(t *testing.T) {
			out := adviseCapture(t, tt.file)
			p := out[0].Profile
			if !slices.Equal(p.Login, []result.Share{{Name: "SCRAM: 3 round trips", Conns: p.TLSConns}}) || p.TLSConns != int64(len(tt.ops)) {
				t.Errorf("login %+v of %d TLS connections", p.Login, p.TLSConns)
			}
			if d := p.Ops; !near(d.Mean, mean(tt.ops)) || d.P50 != quantile(tt.ops, 0.5) || d.P95 != quantile(tt.ops, 0.95) || d.Min != slices.Min(tt.ops) || d.Max != slices.Max(tt.ops) {
				t.Errorf("operations %+v, want %v", d, tt.ops)
			}
			if pool := find(t, out[0], "pooling"); !near(pool.RoundTripsSaved, tt.pool) {
				t.Errorf("pooling saves %v round trips, want %v", pool.RoundTripsSaved, tt.pool)
			}
		})
	}
}

// adviseCapture is the advice, without a calibration, on a capture of
// the wire's testdata.
func adviseCapture(t *testing.T, file string) []result.Advised {
	t.Helper()
	var col Collector
	info, err := wire.ReadFile(t.Context(), filepath.Join("..", "wire", "testdata", file), wire.Options{Conn: col.Add})
	if err != nil {
		t.Fatal(err)
	}
	out, err := col.Advise(info.Info, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile is the nearest-rank quantile.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

// TestCalibrationBytesNeverNegative: a capture whose client moved fewer
// bytes than the calibration's in now's cell (libpq's X25519 key share
// before its HelloRetryRequest, against Go's post-quantum one) would be
// predicted fewer than no bytes with TLS off: the plain cell's own
// figure is taken instead, and said.
func TestCalibrationBytesNeverNegative(t *testing.T) {
	cal := result.New()
	cal.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", Target: "lab:postgres"}
	cal.Variants = []plan.Variant{{ID: "tls1.3 rsa2048", TLS: "1.3", Key: "rsa2048"}, {ID: "plain", TLS: "off"}}
	for range 2 {
		cal.Trials = append(cal.Trials,
			result.Trial{Experiment: plan.Connect, Variant: "tls1.3 rsa2048", Concurrency: 1, Ops: 10, ServerCPU: 30 * time.Millisecond, BytesSent: 46000,
				Negotiated: &result.Negotiated{Version: "TLS 1.3", Group: "P-256", HelloRetry: true}},
			result.Trial{Experiment: plan.Connect, Variant: "plain", Concurrency: 1, Ops: 10, ServerCPU: 20 * time.Millisecond, BytesSent: 9000})
	}
	var conns []*wire.Conn
	for i := range 4 {
		c := pgTLS12(float64(i), 2)
		c.Negotiated.Version, c.Negotiated.Group, c.Negotiated.HelloRetry, c.HelloRetry = "TLS 1.3", "P-256", true, true
		conns = append(conns, c)
	}
	out, err := collect(conns...).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "cal.json"})
	if err != nil {
		t.Fatal(err)
	}
	off := find(t, out[0], "TLS off (the bound)")
	if off.Bytes.Predicted == nil || !near(*off.Bytes.Predicted, 900) || len(off.Substituted) != 1 || !strings.HasPrefix(off.Substituted[0], "bytes: the calibration's client moves 4600 bytes per connection") {
		t.Errorf("TLS off: bytes %v, substituted %q", deref(off.Bytes.Predicted), off.Substituted)
	}
}

// TestResumptionBytes: the bytes session resumption saves over TLS 1.2
// are each connection's own, from its capture: what an abbreviated
// handshake leaves out (the wire's TestAbbreviated counts them) less the
// ticket its ClientHello carries; where the capture shows no ticket (curl
// --no-sessionid asked for none), none is subtracted, and the advice says
// so.
func TestResumptionBytes(t *testing.T) {
	for _, tt := range []struct {
		file     string
		saved    float64
		noTicket bool
	}{
		{"my-tls12-conn.pcap", 1566 - 176, false},
		{"curl-12.pcap", 1052, true},
	} {
		t.Run(tt.file, func(t *testing.T) {
			c := find(t, adviseCapture(t, tt.file)[0], "session resumption on")
			saved, ok := c.Bytes.Saved()
			if c.NotApplicable || !ok || !near(saved, tt.saved) {
				t.Errorf("resumption saves %v bytes per connection (%v), want %v", saved, ok, tt.saved)
			}
			if said := strings.Contains(c.Applies, "no session ticket"); said != tt.noTicket {
				t.Errorf("applies %q: says no ticket %v, want %v", c.Applies, said, tt.noTicket)
			}
		})
	}
}

// TestCalibrationPaired: a CPU saving is the calibration's cells paired
// round by round, as it interleaved them, and its interval is the
// saving's over rounds: a drift that moves both cells of a round alike
// (7, 9, 11 ms per connection now; 0.2, 0.3, 0.1 ms less with ECDSA)
// leaves the saving's interval narrow. Cells without rounds in common
// are differenced unpaired, the interval both cells' together, never
// the changed cell's alone.
func TestCalibrationPaired(t *testing.T) {
	calibrated := func(rounds [][2]float64, ecdsaRound func(int) int) result.Change {
		cal := result.New()
		cal.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", Target: "lab:postgres"}
		cal.Variants = []plan.Variant{{ID: "tls1.2 rsa2048", TLS: "1.2", Key: "rsa2048"}, {ID: "tls1.2 ecdsa-p256", TLS: "1.2", Key: "ecdsa-p256"}}
		n := &result.Negotiated{Version: "TLS 1.2"}
		for r, ms := range rounds {
			cal.Trials = append(cal.Trials,
				result.Trial{Experiment: plan.Connect, Variant: "tls1.2 rsa2048", Concurrency: 1, Round: r, Ops: 100, ServerCPU: msd(100 * ms[0]), Negotiated: n},
				result.Trial{Experiment: plan.Connect, Variant: "tls1.2 ecdsa-p256", Concurrency: 1, Round: ecdsaRound(r), Ops: 100, ServerCPU: msd(100 * ms[1]), Negotiated: n})
		}
		out, err := collect(pgTLS12(0, 2), pgTLS12(1, 2)).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "cal.json"})
		if err != nil {
			t.Fatal(err)
		}
		return find(t, out[0], "RSA → ECDSA P-256 server key")
	}
	rounds := [][2]float64{{7, 6.8}, {9, 8.7}, {11, 10.9}}
	t975 := 4.302652729911275 // Student's t, 2 degrees of freedom
	c := calibrated(rounds, func(r int) int { return r })
	saved, _ := c.Server.Saved()
	if !near(saved, 0.2) || c.Server.PredictedCI == nil || math.Abs(*c.Server.PredictedCI-t975*0.1/math.Sqrt(3)) > 1e-6 {
		t.Errorf("paired: saves %v ms ±%v, want 0.2 ±%v", saved, deref(c.Server.PredictedCI), t975*0.1/math.Sqrt(3))
	}
	// ECDSA's trials in rounds of their own: nothing to pair.
	c = calibrated(rounds, func(r int) int { return r + 10 })
	sd := func(xs ...float64) float64 {
		m := mean(xs)
		var ss float64
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		return math.Sqrt(ss / float64(len(xs)-1))
	}
	want := t975 / math.Sqrt(3) * math.Hypot(sd(7, 9, 11), sd(6.8, 8.7, 10.9))
	if saved, _ := c.Server.Saved(); !near(saved, 0.2) || c.Server.PredictedCI == nil || math.Abs(*c.Server.PredictedCI-want) > 1e-6 {
		t.Errorf("unpaired: saves %v ms ±%v, want 0.2 ±%v", saved, deref(c.Server.PredictedCI), want)
	}
}

// TestRedisLogin: an encrypted Redis login is the first flight (AUTH or
// HELLO, assumed), and a ready check after it when the second answer is
// as long as an INFO's (ioredis: HELLO with CLIENT SETINFO pipelined,
// then INFO, then the operation and QUIT: answers as a capture on the
// server showed them over TLS 1.2).
func TestRedisLogin(t *testing.T) {
	for _, tt := range []struct {
		answers []int
		rt      int
		how     string
	}{
		{[]int{310, 5049, 137, 65}, 2, "assumed AUTH or HELLO, then a ready check (INFO, as ioredis sends): 2 round trips"},
		{[]int{34, 36, 34}, 1, "assumed AUTH or HELLO: 1 round trip"},
		{[]int{34, 1500}, 1, "assumed AUTH or HELLO: 1 round trip"},
	} {
		c := mk("127.0.0.1:6379", wire.ProtoTLS, 0, 1, &result.Negotiated{Version: "TLS 1.2"},
			ph{"tcp", 1, 1, 0, 0}, ph{"tls-handshake", 2, 2, 0, 0}, ph{"encrypted", float64(len(tt.answers)), len(tt.answers), 0, 0})
		c.Flights = len(tt.answers)
		enc := c.Trace.Phases[2].Start
		for i, n := range tt.answers {
			c.Answers = append(c.Answers, wire.Answer{At: enc.Add(msd(float64(i + 1))), Bytes: n})
		}
		if rt, _, how := loginOf(c, ""); rt != tt.rt || how != tt.how {
			t.Errorf("answers %v: login %d round trips, %q; want %d, %q", tt.answers, rt, how, tt.rt, tt.how)
		}
	}
}

// TestRedisReadyCheckReplay: on a capture of ioredis (a ready check in
// its login), the operations are the flights less the login's 2, pooling
// saves the login's 2 round trips too, and the replay says its Go client
// logs in with one.
func TestRedisReadyCheckReplay(t *testing.T) {
	// On Redis's port, or on another one with --engine redis.
	for server, o := range map[string]Options{"127.0.0.1:6379": {}, "127.0.0.1:44711": {Engine: "redis"}} {
		t.Run(server, func(t *testing.T) { redisReadyCheckReplay(t, server, o) })
	}
}

func redisReadyCheckReplay(t *testing.T, server string, o Options) {
	var conns []*wire.Conn
	for i := range 40 {
		c := mk(server, wire.ProtoTLS, float64(i)/10, 1, &result.Negotiated{Version: "TLS 1.2", Group: "X25519", PeerKey: "RSA-2048"},
			ph{"tcp", 1, 1, 0, 0}, ph{"tls-handshake", 2, 2, 0, 0}, ph{"encrypted", 4, 4, 0, 0}, ph{"close", 0.1, 0, 0, 0})
		c.Flights = 4
		enc := c.Trace.Phases[2].Start
		for j, n := range []int{310, 5049, 137, 65} {
			c.Answers = append(c.Answers, wire.Answer{At: enc.Add(msd(float64(j + 1))), Bytes: n})
		}
		conns = append(conns, c)
	}
	out, err := collect(conns...).Advise(result.Capture{}, o)
	if err != nil {
		t.Fatal(err)
	}
	a := out[0]
	if a.Profile.Ops.P50 != 2 || !strings.Contains(a.Profile.OpsKind, "ready check") {
		t.Errorf("operations %+v (%q), want 2 a connection", a.Profile.Ops, a.Profile.OpsKind)
	}
	if pool := find(t, a, "pooling"); pool.RoundTripsSaved != 1+2+2 {
		t.Errorf("pooling saves %v round trips, want 5 (tcp, the handshake's 2, the login's 2)", pool.RoundTripsSaved)
	}
	rs, err := NewReplays(a, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info := rs[0].Info(); info.PerConn != 2 || !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "the replay's (Go's) with 1 (AUTH)") }) {
		t.Errorf("replay: %d operations a connection, notes %q", info.PerConn, info.Notes)
	}
}

// TestCalibrationSetupNoRoundTrip: a change of no round trip (the server's
// key) saves the setup time the calibration's two cells differ by, paired
// by round, at the capture's load: the signature's time on the
// handshake's path, which no round trip count predicts.
func TestCalibrationSetupNoRoundTrip(t *testing.T) {
	cal := result.New()
	cal.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", Target: "lab:postgres"}
	cal.Variants = []plan.Variant{{ID: "tls1.2 rsa2048", TLS: "1.2", Key: "rsa2048"}, {ID: "tls1.2 ecdsa-p256", TLS: "1.2", Key: "ecdsa-p256"}}
	n := &result.Negotiated{Version: "TLS 1.2"}
	setup := func(ms float64) []result.Phase {
		return []result.Phase{{Name: "tcp", Latency: result.Hist{Mean: 1, Count: 100}}, {Name: "tls-handshake", Latency: result.Hist{Mean: ms, Count: 100}},
			{Name: "close", Latency: result.Hist{Mean: 9, Count: 100}}}
	}
	for r, hs := range [][2]float64{{5, 3}, {6, 4.2}, {5.5, 3.3}} {
		cal.Trials = append(cal.Trials,
			result.Trial{Experiment: plan.Connect, Variant: "tls1.2 rsa2048", Concurrency: 1, Round: r, Ops: 100, Conns: 100, ServerCPU: msd(300), Negotiated: n, Phases: setup(hs[0])},
			result.Trial{Experiment: plan.Connect, Variant: "tls1.2 ecdsa-p256", Concurrency: 1, Round: r, Ops: 100, Conns: 100, ServerCPU: msd(200), Negotiated: n, Phases: setup(hs[1])})
	}
	out, err := collect(pgTLS12(0, 2), pgTLS12(1, 2)).Advise(result.Capture{}, Options{Calibration: cal, CalibrationSource: "cal.json"})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, out[0], "RSA → ECDSA P-256 server key")
	saved, _ := c.Setup.Saved()
	if c.RoundTripsSaved != 0 || !near(saved, 2) || !near(*c.P95.Now-*c.P95.Predicted, 2) || !strings.Contains(c.Model, "cells' difference") {
		t.Errorf("setup %+v, p95 %+v, model %q: want 2 ms saved (the cells' handshakes, paired)", c.Setup, c.P95, c.Model)
	}
	// TLS 1.3's round trip is the round trip model's, not the cells'.
	if c := find(t, out[0], "TLS 1.2 → 1.3"); strings.Contains(c.Model, "cells' difference") {
		t.Errorf("TLS 1.3's model %q", c.Model)
	}
}
