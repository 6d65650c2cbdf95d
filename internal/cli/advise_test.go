package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// captured is what the test counts itself in a capture, per connection
// (by client port): the SYN's and SYN-ACK's times and the simple-protocol
// queries ('Q' messages) the client sent.
type captured struct {
	syn, synAck, ack time.Time // ack: the client's first segment after the SYN-ACK
	queries          int
}

// countCapture reads the pcap at path with gopacket alone, not with the
// wire decoder, and counts the connections to port.
func countCapture(t *testing.T, path string, port int) []*captured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	src := gopacket.NewPacketSource(r, r.LinkType())
	byPort := map[layers.TCPPort]*captured{}
	var order []*captured
	for pkt := range src.Packets() {
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil {
			continue
		}
		ts := pkt.Metadata().Timestamp
		switch {
		case tcp.DstPort == layers.TCPPort(port) && tcp.SYN && !tcp.ACK:
			if byPort[tcp.SrcPort] == nil || !byPort[tcp.SrcPort].synAck.IsZero() {
				c := &captured{syn: ts}
				byPort[tcp.SrcPort] = c
				order = append(order, c)
			}
		case tcp.SrcPort == layers.TCPPort(port) && tcp.SYN && tcp.ACK:
			if c := byPort[tcp.DstPort]; c != nil && c.synAck.IsZero() {
				c.synAck = ts
			}
		case tcp.DstPort == layers.TCPPort(port):
			c := byPort[tcp.SrcPort]
			if c == nil {
				continue
			}
			if !c.synAck.IsZero() && c.ack.IsZero() {
				c.ack = ts
			}
			if len(tcp.Payload) > 0 && tcp.Payload[0] == 'Q' {
				c.queries++
			}
		}
	}
	return order
}

// captureWhile captures port on loopback while run runs, into a pcap.
func captureWhile(t *testing.T, port int, run func()) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "c.pcap")
	l, err := wire.StartLive(context.Background(), wire.LiveOptions{Interface: "lo", Ports: []int{port}, File: file, Method: wire.MethodAFPacket})
	if err != nil {
		t.Fatal(err)
	}
	run()
	if _, err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	return file
}

// advised runs advise on a capture and reads its result back.
func advised(t *testing.T, args ...string) (*result.Result, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "advice.json")
	code, stdout, stderr := runMain(t, append(append([]string{"advise"}, args...), "-o", out)...)
	if code != 0 {
		t.Fatalf("advise: exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Advise) != 1 {
		t.Fatalf("%d profiles, want 1", len(r.Advise))
	}
	// The result renders again as the run printed it.
	if code, again, stderr := runMain(t, "advise", out); code != 0 || again != stdout {
		t.Errorf("advise %s: exit %d: %s\n%s\nwant\n%s", out, code, stderr, again, stdout)
	}
	return r, stdout
}

// checkProfile compares a profile with what the test counted itself.
func checkProfile(t *testing.T, p result.Profile, conns []*captured) {
	t.Helper()
	var rtts []float64
	for _, c := range conns {
		// Wireshark's iRTT: the SYN to the client's ACK of the SYN-ACK.
		rtts = append(rtts, float64(c.ack.Sub(c.syn))/float64(time.Millisecond))
	}
	if p.Conns != int64(len(conns)) {
		t.Errorf("profile: %d connections, the capture holds %d", p.Conns, len(conns))
	}
	for _, q := range []float64{0.5, 0.95} {
		got := map[float64]float64{0.5: p.RTT.P50, 0.95: p.RTT.P95}[q]
		if want := stats.Quantile(rtts, q); got != want {
			t.Errorf("RTT p%v %v ms, the capture's %v", q*100, got, want)
		}
	}
}

func findChange(t *testing.T, a result.Advised, name string) result.Change {
	t.Helper()
	for _, c := range a.Advice {
		if c.Change == name {
			return c
		}
	}
	t.Fatalf("no change %q in %+v", name, a.Advice)
	return result.Change{}
}

// TestAdvisePgbench advises on captures of pgbench -C (libpq) against a
// lab PostgreSQL 15 with an RSA-2048 key: over TLS 1.2, TLS 1.3 saves
// exactly 1 round trip per connection and direct TLS 1, resumption does
// not apply (PostgreSQL never resumes); over plaintext, turning TLS on
// costs 2 (the SSLRequest's and TLS 1.3's). The profile's connections,
// RTTs and queries per connection are what the test counts itself.
func TestAdvisePgbench(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "pgbench")
	srv, err := lab.Start(context.Background(), "postgres", lab.Options{Keys: []string{"rsa2048"}, LocalhostOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	raw, err := srv.URL("", true)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	script := filepath.Join(t.TempDir(), "select.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const txns = 12
	pgbench := func(sslmode string, extra url.Values) string {
		q := u.Query()
		q.Set("sslmode", sslmode)
		for k, v := range extra {
			q[k] = v
		}
		v := *u
		v.RawQuery = q.Encode()
		return captureWhile(t, port, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if out, err := exec.CommandContext(ctx, "pgbench", "-C", "-n", "-t", strconv.Itoa(txns), "-f", script, v.String()).CombinedOutput(); err != nil {
				t.Fatalf("pgbench: %v: %s", err, out)
			}
		})
	}

	t.Run("tls1.2", func(t *testing.T) {
		file := pgbench("require", url.Values{"ssl_max_protocol_version": {"TLSv1.2"}})
		r, stdout := advised(t, file, "--port", u.Port())
		a := r.Advise[0]
		p := a.Profile
		conns := countCapture(t, file, port)
		checkProfile(t, p, conns)
		if p.Engine != "postgres" || p.TLSConns != p.Conns || p.Versions[0].Name != "TLS 1.2" || p.ServerKey != "rsa2048" || p.ServerKeyFrom != "capture" || p.SSLRequests != p.Conns {
			t.Errorf("profile %+v", p)
		}
		for _, c := range []struct {
			name string
			rt   float64
		}{{"TLS 1.2 → 1.3", 1}, {"PostgreSQL 17+ direct TLS", 1}} {
			got := findChange(t, a, c.name)
			if got.NotApplicable || got.RoundTripsSaved != c.rt || got.Conns != p.Conns || *got.Setup.Predicted >= *got.Setup.Now {
				t.Errorf("%s: %+v", c.name, got)
			}
		}
		if res := findChange(t, a, "session resumption on"); !res.NotApplicable || !strings.Contains(res.Applies, "PostgreSQL never resumes") {
			t.Errorf("resumption: %+v", res)
		}
		// No calibration: no CPU figure, and the command that gives them.
		if c := findChange(t, a, "RSA → ECDSA P-256 server key"); c.Server.Predicted != nil || !strings.Contains(a.Calibrate, "tlsbench connect --lab postgres:18 --tls off,1.2,1.3 --key rsa2048,ecdsa-p256") {
			t.Errorf("ECDSA %+v; calibrate %q", c.Server, a.Calibrate)
		}
		for _, w := range []string{"advise: what each change would save", "TLS 1.2 → 1.3 (postgres at", "A prediction, not yet checked by a lab replay", "--calibration: tlsbench connect"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("the report lacks %q:\n%s", w, stdout)
			}
		}

		// --confirm replays the profile in the lab: TLS 1.3 and direct TLS
		// measured to save exactly the round trip predicted, the ECDSA
		// key less server CPU than RSA-2048's.
		r, stdout = advised(t, file, "--port", u.Port(), "--confirm", "--trials", "2", "-d", "1s", "-q")
		a = r.Advise[0]
		if len(a.Replays) != 2 || a.Replays[0].Error != "" || a.Replays[1].Error != "" {
			t.Fatalf("replays %+v", a.Replays)
		}
		if a.Profile.ClientTLS != "OpenSSL" || !strings.Contains(a.Replays[0].Client, "as libpq's would be") {
			t.Errorf("pgbench's client: %q; the replay says %q", a.Profile.ClientTLS, a.Replays[0].Client)
		}
		for _, name := range []string{"TLS 1.2 → 1.3", "PostgreSQL 17+ direct TLS", "pooling"} {
			c := findChange(t, a, name)
			if c.RoundTripsMeasured == nil || *c.RoundTripsMeasured != c.RoundTripsSaved || c.Setup.Measured == nil || c.Setup.MeasuredCI == nil {
				t.Errorf("%s: round trips predicted %v, measured %v; setup %s", name, c.RoundTripsSaved, val(c.RoundTripsMeasured), figure(c.Setup))
			}
		}
		// Pooling saves tcp, the SSLRequest, TLS 1.2's 2 and the SCRAM
		// login's 3, which the capture tells from the server's answers.
		if pool := findChange(t, a, "pooling"); pool.RoundTripsSaved != 7 || len(a.Profile.Login) != 1 || a.Profile.Login[0].Name != "SCRAM: 3 round trips" {
			t.Errorf("pooling saves %v round trips; login %+v", pool.RoundTripsSaved, a.Profile.Login)
		}
		// ECDSA: no round trip, a smaller certificate and signature (bytes
		// do not vary with load), and the server CPU measured with its
		// interval. Not asserted lower: RSA-2048's signature is about 2%
		// of a PostgreSQL connection's server CPU (its backend's fork and
		// SCRAM), which 2 short trials on a loaded machine do not resolve.
		ecdsa := findChange(t, a, "RSA → ECDSA P-256 server key")
		if ecdsa.RoundTripsMeasured == nil || *ecdsa.RoundTripsMeasured != 0 || ecdsa.Bytes.Measured == nil || *ecdsa.Bytes.Measured >= *ecdsa.Bytes.Now ||
			ecdsa.Server.Measured == nil || ecdsa.Server.MeasuredCI == nil {
			t.Errorf("ECDSA measured: rt %v, bytes %s, server CPU %s", val(ecdsa.RoundTripsMeasured), figure(ecdsa.Bytes), figure(ecdsa.Server))
		}
		for _, w := range []string{"advise: predicted vs measured in the lab replay", "measured in the lab replay:"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("the report lacks %q:\n%s", w, stdout)
			}
		}
	})

	t.Run("lab calibration", func(t *testing.T) {
		// advise --lab runs the calibration on this machine with the
		// capture's group (P-256, which PostgreSQL 15 chose): TLS 1.3's
		// bytes come from a cell without Go's post-quantum key share and
		// without a HelloRetryRequest, so they change by tens of bytes,
		// not the 1,600 of Go's default offer.
		file := pgbench("require", url.Values{"ssl_max_protocol_version": {"TLSv1.2"}})
		r, stdout := advised(t, file, "--port", u.Port(), "--lab", "postgres", "--trials", "1", "-d", "1s", "-q")
		a := r.Advise[0]
		if a.Calibration == nil || !a.Calibration.Lab || a.Calibration.Engine != "postgres" || a.Calibration.Started == "" || strings.HasPrefix(a.Calibration.Started, "0001-") {
			t.Fatalf("calibration %+v", a.Calibration)
		}
		tls13 := findChange(t, a, "TLS 1.2 → 1.3")
		saved, ok := tls13.Bytes.Saved()
		if !ok || saved > 400 || saved < -400 || len(tls13.Substituted) > 0 || !strings.Contains(tls13.Needs, "tls1.3 rsa2048 group P-256") {
			t.Errorf("TLS 1.3: bytes %s (saved %v), substituted %q, needs %q", figure(tls13.Bytes), saved, tls13.Substituted, tls13.Needs)
		}
		if ecdsa := findChange(t, a, "RSA → ECDSA P-256 server key"); ecdsa.Server.Predicted == nil || ecdsa.Client.Predicted == nil {
			t.Errorf("ECDSA without CPU figures: %s", figure(ecdsa.Server))
		}
		if direct := findChange(t, a, "PostgreSQL 17+ direct TLS"); direct.Server.Predicted != nil || len(direct.Missing) == 0 {
			t.Errorf("direct TLS calibrated on PostgreSQL 15: %+v", direct)
		}
		if !strings.Contains(stdout, "CPU figures: from the lab calibration advise --lab ran on this machine") || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "direct TLS needs PostgreSQL 17+") }) {
			t.Errorf("the report does not say where CPU came from, or what was not calibrated: notes %q\n%s", r.Notes, stdout)
		}
		// Another engine's lab is refused in one line.
		code, _, stderr := runMain(t, "advise", file, "--port", u.Port(), "--lab", "redis", "-o", filepath.Join(t.TempDir(), "x.json"))
		if code != 2 || !strings.Contains(stderr, "--lab redis: the capture's endpoint") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--lab redis: exit %d: %q", code, stderr)
		}
	})

	t.Run("libpq replay", func(t *testing.T) {
		// --confirm --client libpq replays through pgbench's own stack
		// what it can: TLS 1.3 and ECDSA measured in time and CPU, not in
		// round trips; pooling refused with the reason; direct TLS
		// replayed with Go's client, its round trip exact.
		file := pgbench("require", url.Values{"ssl_max_protocol_version": {"TLSv1.2"}})
		r, stdout := advised(t, file, "--port", u.Port(), "--confirm", "--client", "libpq", "--trials", "1", "-d", "1s", "-q")
		a := r.Advise[0]
		if len(a.Replays) != 2 || a.Replays[0].Error != "" || a.Replays[1].Error != "" {
			t.Fatalf("replays %+v", a.Replays)
		}
		if !strings.HasPrefix(a.Replays[0].Client, "libpq (--client)") || a.Replays[0].Rate != 0 || !strings.HasPrefix(a.Replays[1].Client, "go ") {
			t.Errorf("clients %q (rate %v) and %q", a.Replays[0].Client, a.Replays[0].Rate, a.Replays[1].Client)
		}
		tls13 := findChange(t, a, "TLS 1.2 → 1.3")
		if tls13.RoundTripsMeasured != nil || tls13.Setup.Measured == nil || tls13.Client.Measured == nil || tls13.Server.Measured == nil {
			t.Errorf("TLS 1.3 through libpq: round trips %v, setup %s, client CPU %s", val(tls13.RoundTripsMeasured), figure(tls13.Setup), figure(tls13.Client))
		}
		if pool := findChange(t, a, "pooling"); !strings.Contains(pool.Unmeasured, "client libpq reports each connection's time") {
			t.Errorf("pooling: %q", pool.Unmeasured)
		}
		if d := findChange(t, a, "PostgreSQL 17+ direct TLS"); d.RoundTripsMeasured == nil || *d.RoundTripsMeasured != 1 {
			t.Errorf("direct TLS with Go's client: %v", val(d.RoundTripsMeasured))
		}
		if !strings.Contains(stdout, "not measured by the client stack") {
			t.Errorf("the report lacks the stack's unmeasured round trips:\n%s", stdout)
		}
	})

	t.Run("hello retry", func(t *testing.T) {
		// libpq (OpenSSL 3.0) offers an X25519 key share first; PostgreSQL
		// 15 takes P-256 only: every TLS 1.3 connection pays a
		// HelloRetryRequest, and avoiding it saves exactly 1 round trip.
		file := pgbench("require", url.Values{"ssl_min_protocol_version": {"TLSv1.3"}})
		r, _ := advised(t, file, "--port", u.Port(), "--confirm", "--trials", "2", "-d", "1s", "-q")
		a := r.Advise[0]
		if a.Profile.HelloRetries != a.Profile.Conns {
			t.Fatalf("profile: %d HelloRetryRequests of %d connections", a.Profile.HelloRetries, a.Profile.Conns)
		}
		c := findChange(t, a, "avoid HelloRetryRequest")
		if c.NotApplicable || c.RoundTripsSaved != 1 || c.RoundTripsMeasured == nil || *c.RoundTripsMeasured != 1 {
			t.Errorf("HelloRetryRequest avoided: round trips predicted %v, measured %v (%s); replays %+v", c.RoundTripsSaved, val(c.RoundTripsMeasured), c.Unmeasured, a.Replays)
		}
	})

	t.Run("plain", func(t *testing.T) {
		file := pgbench("disable", nil)
		r, _ := advised(t, file, "--port", u.Port())
		a := r.Advise[0]
		conns := countCapture(t, file, port)
		checkProfile(t, a.Profile, conns)
		var queries []float64
		for _, c := range conns {
			queries = append(queries, float64(c.queries))
		}
		if got, want := a.Profile.Ops, (result.Dist{Mean: stats.Summarize(queries).Mean, P50: stats.Quantile(queries, 0.5), P95: stats.Quantile(queries, 0.95)}); got.P50 != want.P50 || got.P95 != want.P95 || got.Mean != want.Mean {
			t.Errorf("operations per connection %+v, the capture's queries %+v", got, want)
		}
		on := findChange(t, a, "TLS off → on (TLS 1.3)")
		if on.NotApplicable || on.RoundTripsSaved != -2 || *on.Setup.Predicted <= *on.Setup.Now {
			t.Errorf("TLS on: %+v", on)
		}
		if len(a.Advice) != 2 || findChange(t, a, "pooling").NotApplicable {
			t.Errorf("a plain capture's advice: %+v", a.Advice)
		}
	})
}

// TestAdviseCurl advises on curl (OpenSSL) against the built-in server
// capped at TLS 1.2 with an RSA-2048 key, a connection per request: TLS
// 1.3 saves 1 round trip on each, resumption 1 (curl kept no session).
func TestAdviseCurl(t *testing.T) {
	needServer(t, "curl")
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"rsa2048"}, ResponseSize: 16, MaxTLS: "1.2"})
	p := port(srv.Endpoint("rsa2048"))[1:]
	n, _ := strconv.Atoi(p)
	u := "https://127.0.0.1:" + p + "/"
	const conns = 6
	args := []string{"-s", "--no-sessionid", "-o", "/dev/null", "--cacert", srv.CAFile(), "-H", "Connection: close"}
	for range conns {
		args = append(args, u)
	}
	file := captureWhile(t, n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "curl", args...).CombinedOutput(); err != nil {
			t.Fatalf("curl: %v: %s", err, out)
		}
	})
	r, _ := advised(t, file)
	a := r.Advise[0]
	checkProfile(t, a.Profile, countCapture(t, file, n))
	if a.Profile.Conns != conns || a.Profile.Engine != "http" || a.Profile.Ops.P50 != 1 {
		t.Errorf("profile %+v", a.Profile)
	}
	for _, c := range []struct {
		name string
		rt   float64
	}{{"TLS 1.2 → 1.3", 1}, {"session resumption on", 1}, {"pooling", 3}} {
		if got := findChange(t, a, c.name); got.NotApplicable || got.RoundTripsSaved != c.rt {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

// TestAdviseConfirmNoLab: a capture of an engine the lab cannot start
// (TLS on a port no engine uses, without ALPN: openssl s_client against
// the built-in server) keeps its predictions under --confirm, and says
// why in one line.
func TestAdviseConfirmNoLab(t *testing.T) {
	needServer(t, "openssl")
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"rsa2048"}, ResponseSize: 16, MaxTLS: "1.2"})
	p := port(srv.Endpoint("rsa2048"))[1:]
	n, _ := strconv.Atoi(p)
	file := captureWhile(t, n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "openssl", "s_client", "-connect", "127.0.0.1:"+p, "-CAfile", srv.CAFile())
		cmd.Stdin = strings.NewReader("GET / HTTP/1.0\r\n\r\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl s_client: %v: %s", err, out)
		}
	})
	out := filepath.Join(t.TempDir(), "advice.json")
	code, _, stderr := runMain(t, "advise", file, "--confirm", "-o", out)
	var warnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning:") {
			warnings = append(warnings, l)
		}
	}
	if code != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "the lab cannot start a server of an unknown engine to replay the profile on") {
		t.Fatalf("exit %d; stderr %q, want one warning", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Advise[0]
	if len(a.Replays) != 1 || a.Replays[0].Error == "" || findChange(t, a, "TLS 1.2 → 1.3").RoundTripsMeasured != nil {
		t.Errorf("replays %+v", a.Replays)
	}

	// --lab: no lab server of an unknown engine, so no CPU figures, said
	// in one line and in the result.
	code, _, stderr = runMain(t, "advise", file, "--lab", "builtin", "-o", out)
	if code != 0 || strings.Count(stderr, "warning:") != 1 || !strings.Contains(stderr, "--lab builtin: no CPU figures for 127.0.0.1:"+p+": the lab cannot start a server of an unknown engine") {
		t.Fatalf("--lab: exit %d; stderr %q", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if r.Advise[0].Calibration != nil || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "no CPU figures") }) {
		t.Errorf("calibration %+v, notes %q", r.Advise[0].Calibration, r.Notes)
	}
}

// TestAdviseBadInput: what advise refuses, in one line each.
func TestAdviseBadInput(t *testing.T) {
	dir := t.TempDir()
	// A capture of a connection that began before it: data, no SYN.
	begun := filepath.Join(dir, "begun.pcap")
	writePcap(t, begun, tcpPacket(t, 40000, 5432, false, []byte("Q....SELECT 1")), tcpPacket(t, 5432, 40000, false, []byte("T....")))
	wireResult := filepath.Join(dir, "wire.json")
	wr := result.New()
	wr.Capture = &result.Capture{Source: "x.pcap"}
	if err := result.Write(wireResult, wr); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no complete connection", []string{begun}, 1, "no connection completes in the capture (1 began before the capture (no SYN)): capture from before the first connection opens until the last one closes"},
		{"missing", []string{filepath.Join(dir, "none.pcap")}, 2, "no such capture file"},
		{"wire result", []string{wireResult}, 2, "a wire result keeps each variant's means"},
		{"bad format", []string{begun, "--format", "xml"}, 2, `--format: unknown format "xml"`},
		{"bad key", []string{begun, "--server-key", "rsa512"}, 2, `--server-key: unknown key type "rsa512": use rsa1024, rsa2048`},
		{"two files", []string{begun, begun}, 2, "advise takes one capture file"},
		{"confirm a result", []string{wireResult, "--confirm"}, 2, "--confirm and --lab work on a capture's profile: give the capture file"},
		{"no trial", []string{begun, "--confirm", "--trials", "0"}, 2, "give at least 1 trial of a positive duration"},
		{"client without confirm", []string{begun, "--client", "libpq"}, 2, "--client chooses the client stack of the lab replay: give --confirm too"},
		{"bad lab", []string{begun, "--lab", "oracle"}, 2, `--lab: unknown lab engine "oracle": use postgres, mariadb`},
		{"lab and calibration", []string{begun, "--lab", "postgres", "--calibration", wireResult}, 2, "--lab runs a calibration, --calibration gives one: give one of them"},
		{"lab on a result", []string{wireResult, "--lab", "postgres"}, 2, "--confirm and --lab work on a capture's profile"},
		{"bad engine", []string{begun, "--engine", "oracle"}, 2, `--engine: unknown engine "oracle": use postgres, mysql`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, append(append([]string{"advise"}, tt.args...), "-o", filepath.Join(dir, tt.name+".json"))...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != tt.code || !strings.Contains(stderr, tt.want) || len(lines) != 1 {
				t.Errorf("exit %d, want %d; stderr %q, want one line with %q", code, tt.code, stderr, tt.want)
			}
		})
	}
}

// val writes an optional figure.
func val(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'g', 4, 64)
}

// figure writes a figure's values.
func figure(f result.Figure) string {
	return fmt.Sprintf("now %s ±%s, predicted %s ±%s, measured %s ±%s, error %s%%", val(f.Now), val(f.NowCI), val(f.Predicted), val(f.PredictedCI), val(f.Measured), val(f.MeasuredCI), val(f.ErrorPct))
}

// tcpPacket is an Ethernet frame of a TCP segment on loopback.
func tcpPacket(t *testing.T, src, dst int, syn bool, payload []byte) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: []byte{127, 0, 0, 1}, DstIP: []byte{127, 0, 0, 1}}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src), DstPort: layers.TCPPort(dst), SYN: syn, ACK: !syn, PSH: len(payload) > 0, Seq: 1000, Ack: 2000, Window: 65535}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writePcap(t *testing.T, path string, frames ...[]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
}
