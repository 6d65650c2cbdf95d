package cli

import (
	"context"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// wirePhase returns a trial's phase by name, failing t without it.
func wirePhase(t *testing.T, tr result.Trial, name string) result.Phase {
	t.Helper()
	for _, p := range tr.Phases {
		if p.Name == name {
			return p
		}
	}
	var names []string
	for _, p := range tr.Phases {
		names = append(names, p.Name)
	}
	t.Fatalf("%s: no phase %s in %v", tr.Variant, name, names)
	return result.Phase{}
}

// tlsTrials returns a wire result's trials of TLS connections.
func tlsTrials(r *result.Result) []result.Trial {
	var out []result.Trial
	for _, tr := range r.Trials {
		if tr.Negotiated != nil {
			out = append(out, tr)
		}
	}
	return out
}

// TestWireCurl decomposes curl (OpenSSL) against the built-in server,
// captured live while it runs: a TLS 1.3 handshake takes 1 round trip, a
// TLS 1.2 one 2, each connection a variant of what it negotiated.
func TestWireCurl(t *testing.T) {
	needServer(t, "curl")
	needServer(t, "tcpdump")
	tests := []struct {
		maxTLS, version string
		trips           int
	}{
		{"", "TLS 1.3", 1},
		{"1.2", "TLS 1.2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16, MaxTLS: tt.maxTLS})
			p := port(srv.Endpoint("ecdsa-p256"))[1:]
			u := "https://127.0.0.1:" + p + "/"
			out := filepath.Join(t.TempDir(), "r.json")
			keep := filepath.Join(t.TempDir(), "c.pcap")
			const conns = 3
			// Connection: close: curl opens a connection per URL.
			code, stdout, stderr := runMain(t, "wire", "--capture", "lo", "--port", p, "--keep-capture", keep, "-o", out, "--",
				"curl", "-s", "--no-sessionid", "-o", "/dev/null", "--cacert", srv.CAFile(), "-H", "Connection: close", u, u, u)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "command: curl exited with status 0") {
				t.Errorf("the command's exit status is not reported: %s", stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			trials := tlsTrials(r)
			if len(trials) != 1 {
				t.Fatalf("%d TLS variants, want 1: %+v", len(trials), r.Trials)
			}
			tr := trials[0]
			if tr.Conns != conns || tr.Negotiated.Version != tt.version || tr.Negotiated.Suite == "" {
				t.Errorf("%s: %d connections, negotiated %+v", tr.Variant, tr.Conns, tr.Negotiated)
			}
			for _, ph := range []struct {
				name  string
				trips int
			}{{"tcp", 1}, {"tls-handshake", tt.trips}} {
				got := wirePhase(t, tr, ph.name).RoundTrips
				if got.Min != ph.trips || got.Max != ph.trips {
					t.Errorf("%s: %s took %+v round trips, want %d", tr.Variant, ph.name, got, ph.trips)
				}
			}
			if r.Capture == nil || r.Capture.Source != "live lo" || len(r.Capture.Command) == 0 || r.Capture.Command[0] != "curl" {
				t.Errorf("capture %+v", r.Capture)
			}
			if _, err := os.Stat(keep); err != nil {
				t.Errorf("--keep-capture: %v", err)
			}
			if !strings.Contains(stdout, tt.version) {
				t.Errorf("the report does not show %s:\n%s", tt.version, stdout)
			}
			// The capture kept decodes to the same connections.
			again := filepath.Join(t.TempDir(), "again.json")
			if code, _, stderr := runMain(t, "wire", keep, "--port", p, "-o", again); code != 0 {
				t.Fatalf("wire %s: exit %d: %s", keep, code, stderr)
			}
			r2, err := result.Read(again)
			if err != nil {
				t.Fatal(err)
			}
			if got := tlsTrials(r2); len(got) != 1 || got[0].Conns != conns {
				t.Errorf("the kept capture decodes to %+v", r2.Trials)
			}
		})
	}
}

// TestWirePgbench decomposes pgbench -C -S (libpq) over TLS against the
// lab PostgreSQL 15: the SSLRequest's round trip in startup, the
// HelloRetryRequest PostgreSQL's P-256-only TLS 1.3 costs (2 round trips),
// and the password kept out of the result.
func TestWirePgbench(t *testing.T) {
	needServer(t, "pgbench")
	needServer(t, "tcpdump")
	needServer(t, labBinaries["postgres"])
	srv, err := lab.Start(context.Background(), "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
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
	password, _ := u.User.Password()
	if out, err := exec.Command("pgbench", "-i", "-s", "1", "-q", raw).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v: %s", err, out)
	}
	q := u.Query()
	q.Set("sslmode", "require")
	u.RawQuery = q.Encode()
	out := filepath.Join(t.TempDir(), "r.json")
	const txns = 20
	code, _, stderr := runMain(t, "wire", "--capture", "lo", "--port", u.Port(), "-o", out, "--",
		"pgbench", "-C", "-S", "-n", "-t", strconv.Itoa(txns), u.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), password) {
		t.Errorf("the result holds the password")
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	trials := tlsTrials(r)
	if len(trials) != 1 {
		t.Fatalf("%d TLS variants, want 1: %+v", len(trials), r.Trials)
	}
	tr := trials[0]
	// pgbench -C: a connection per transaction, and one of its own.
	if tr.Conns < txns || tr.Conns > txns+1 || tr.Negotiated.Version != "TLS 1.3" || !tr.Negotiated.HelloRetry {
		t.Errorf("%s: %d connections, negotiated %+v", tr.Variant, tr.Conns, tr.Negotiated)
	}
	if tr.Wire == nil || tr.Wire.HelloRetries != tr.Conns || tr.Wire.Protocol != "postgres" {
		t.Errorf("%s: wire %+v", tr.Variant, tr.Wire)
	}
	for _, ph := range []struct {
		name  string
		trips int
	}{{"tcp", 1}, {"startup", 1}, {"tls-handshake", 2}} {
		got := wirePhase(t, tr, ph.name).RoundTrips
		if got.Min != ph.trips || got.Max != ph.trips {
			t.Errorf("%s took %+v round trips, want %d", ph.name, got, ph.trips)
		}
	}
	if r.Capture == nil || strings.Contains(strings.Join(r.Capture.Command, " "), password) || r.Capture.Command[0] != "pgbench" {
		t.Errorf("capture %+v", r.Capture)
	}
}

// TestConnectWire checks tlsbench's own phases against a capture of the
// same connections (connect --wire) on the lab PostgreSQL, plain and TLS.
func TestConnectWire(t *testing.T) {
	needServer(t, "tcpdump")
	needServer(t, labBinaries["postgres"])
	out := filepath.Join(t.TempDir(), "r.json")
	const n = 40
	code, stdout, stderr := runMain(t, "connect", "--lab", "postgres", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--wire", "-n", strconv.Itoa(n), "--trials", "2", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.WireChecks) == 0 {
		t.Fatalf("no wire checks; notes %q", r.Notes)
	}
	variants := map[string]bool{}
	for _, c := range r.WireChecks {
		variants[c.Variant] = true
		if c.Conns != 2*n {
			t.Errorf("%s %s: the wire matched %d connections, want %d", c.Variant, c.Phase, c.Conns, 2*n)
		}
		// tlsbench ends a phase when its read returns, the wire when the
		// packet arrives: the goroutine's wake-up in between (tens of
		// microseconds on an idle machine, up to a few tenths of a
		// millisecond on two loaded cores) moves time from one phase to
		// the next. The figures themselves are the report's table; the
		// test bounds what a loaded machine meets.
		if diff := math.Abs(c.Tool - c.Wire); diff > 0.05*c.Wire+0.5 {
			t.Errorf("%s %s: tlsbench %.3f ms, the wire %.3f ms", c.Variant, c.Phase, c.Tool, c.Wire)
		}
		// Round trips are exact, but inside encryption: a server answer
		// split across segments around a client write reads as one turn
		// to tlsbench and may read as two on the wire.
		slack := 0.0
		if c.Phase == wire.PhaseEncrypted {
			slack = 0.02 * c.WireRoundTrips
		}
		if math.Abs(c.ToolRoundTrips-c.WireRoundTrips) > slack {
			t.Errorf("%s %s: tlsbench counts %.2f round trips, the wire %.2f", c.Variant, c.Phase, c.ToolRoundTrips, c.WireRoundTrips)
		}
	}
	if len(variants) != 2 {
		t.Errorf("wire checks of %d variants, want 2", len(variants))
	}
	if !strings.Contains(stdout, "wire") {
		t.Errorf("the report does not show the wire check:\n%s", stdout)
	}
}

// TestWireBadInput: one line each, naming the problem and the fix.
func TestWireBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("this is not a capture\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	capture := redisCapture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no capture file", []string{"wire", filepath.Join(dir, "none.pcap")}, 2, "no such capture file"},
		{"no arguments", []string{"wire"}, 2, "wire takes one capture file"},
		{"two files", []string{"wire", text, text}, 2, "wire takes one capture file"},
		{"a directory", []string{"wire", dir}, 2, "is not a regular file"},
		{"empty file", []string{"wire", empty}, 1, "is empty"},
		{"not a capture", []string{"wire", text}, 1, "not a capture"},
		{"no connection on the port", []string{"wire", capture, "--port", "1"}, 1, "no TCP connection on port 1"},
		{"bad port", []string{"wire", capture, "--port", "0"}, 2, "--port: 0 is out of range"},
		{"capture without command", []string{"wire", "--capture", "lo", "--port", "5432"}, 2, "no command to run: give it after --"},
		{"capture without port", []string{"wire", "--capture", "lo", "--", "true"}, 2, "no --port"},
		{"capture and a file", []string{"wire", capture, "--capture", "lo", "--port", "5432", "--", "true"}, 2, "takes no capture file"},
		{"command without capture", []string{"wire", "--port", "5432", "--", "true"}, 2, "add --capture IFACE"},
		{"keep without capture", []string{"wire", capture, "--keep-capture", filepath.Join(dir, "k.pcap")}, 2, "--keep-capture applies to a live capture"},
		{"command cannot start", []string{"wire", "--capture", "lo", "--port", "5432", "--", "no-such-command-tlsbench"}, 2, "cannot start no-such-command-tlsbench: executable file not found"},
		{"unknown interface", []string{"wire", "--capture", "nosuch0", "--port", "5432", "--", "true"}, 2, `no interface "nosuch0"`},
		{"connect --wire elsewhere", []string{"connect", "http://192.0.2.1:8080/", "--wire", "-n", "1"}, 2, "--wire captures on this machine's loopback"},
		{"connect --wire with rtt", []string{"connect", "builtin", "--wire", "--rtt", "1ms", "-n", "1"}, 2, "--wire: --rtt delays inside tlsbench"},
		{"pool --wire", []string{"pool", "builtin", "--wire"}, 2, "unknown flag: --wire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q, want it to say %q", stderr, tt.want)
			}
			if n := strings.Count(stderr, "\n"); n != 1 {
				t.Errorf("want one line on stderr, got %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

// redisCapture captures a redis-cli PING against a lab Redis and returns
// the capture file.
func redisCapture(t *testing.T) string {
	t.Helper()
	needServer(t, "redis-cli")
	needServer(t, "tcpdump")
	srv, err := lab.Start(context.Background(), "redis", lab.Options{PlainOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	p, _ := strconv.Atoi(u.Port())
	file := filepath.Join(t.TempDir(), "redis.pcap")
	l, err := wire.StartLive(context.Background(), wire.LiveOptions{Interface: "lo", Ports: []int{p}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("redis-cli", "--no-auth-warning", "-u", raw, "PING").CombinedOutput(); err != nil {
		t.Fatalf("redis-cli: %v: %s", err, out)
	}
	if _, err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	return file
}
