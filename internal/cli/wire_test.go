package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
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
// captured live (tlsbench's own packet socket) while it runs: a TLS 1.3 handshake takes 1 round trip, a
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
			// af_packet: its stop reads the ring until it is quiet;
			// tcpdump, stopped by SIGINT as curl exits, loses what it
			// has not read yet, on a loaded machine often the last
			// connection (9 runs of 25 beside stress-ng --cpu 4).
			code, stdout, stderr := runMain(t, "wire", "--capture", "lo", "--capture-with", "af_packet", "--port", p, "--keep-capture", keep, "-o", out, "--",
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
	srv, _ := sharedLab(t, "postgres")
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
// same connections (connect --wire) on the lab PostgreSQL, plain and TLS:
// the wire matches every connection, sees the phases in tlsbench's order
// and counts the same round trips, each phase's time measured on both
// sides. How close the times come is BenchmarkConnectWire's figure: the
// goroutine's wake-up between a packet's arrival and its read moves time
// from one phase to the next, tens of microseconds on an idle machine and
// milliseconds on a loaded one.
func TestConnectWire(t *testing.T) {
	r, stdout := connectWire(t)
	for _, c := range r.WireChecks {
		if c.Conns != 2*connectWireN {
			t.Errorf("%s %s: the wire matched %d connections, want %d", c.Variant, c.Phase, c.Conns, 2*connectWireN)
		}
		if c.Tool < 0 || c.Wire < 0 {
			t.Errorf("%s %s: tlsbench %.3f ms, the wire %.3f ms", c.Variant, c.Phase, c.Tool, c.Wire)
		}
		// Round trips are exact, but inside encryption: a server answer
		// split across segments around a client write reads as one turn
		// to tlsbench and may read as two on the wire, the more often the
		// more loaded the machine; never fewer.
		if c.Phase == wire.PhaseEncrypted && c.WireRoundTrips < c.ToolRoundTrips ||
			c.Phase != wire.PhaseEncrypted && c.WireRoundTrips != c.ToolRoundTrips {
			t.Errorf("%s %s: tlsbench counts %.2f round trips, the wire %.2f", c.Variant, c.Phase, c.ToolRoundTrips, c.WireRoundTrips)
		}
	}
	// Each variant's checked phases come in the order of its trials'
	// (encrypted, the wire's fold of the phases it cannot see inside
	// TLS, aside).
	for _, tr := range r.Trials {
		var order []string
		for _, p := range tr.Phases {
			order = append(order, p.Name)
		}
		var checked []string
		for _, c := range r.WireChecks {
			if c.Variant == tr.Variant && c.Phase != wire.PhaseEncrypted {
				checked = append(checked, c.Phase)
			}
		}
		if i := 0; len(checked) > 0 {
			for _, p := range order {
				if i < len(checked) && checked[i] == p {
					i++
				}
			}
			if i != len(checked) {
				t.Errorf("%s: wire checks of %v, not in the order of the phases %v", tr.Variant, checked, order)
			}
		}
	}
	if !strings.Contains(stdout, "wire") {
		t.Errorf("the report does not show the wire check:\n%s", stdout)
	}
}

// BenchmarkConnectWire reports the largest gap between tlsbench's phase
// time and the wire's over connect --wire's phases (PostgreSQL, plain and
// TLS 1.3), in ms and as a share of the wire's: the accuracy of the
// dialer's phases. Run it on an idle machine: make bench.
func BenchmarkConnectWire(b *testing.B) {
	var worst, share float64
	for range b.N {
		r, _ := connectWire(b)
		for _, c := range r.WireChecks {
			diff := math.Abs(c.Tool - c.Wire)
			worst = max(worst, diff)
			if c.Wire > 0 {
				share = max(share, diff/c.Wire)
			}
		}
	}
	b.ReportMetric(worst, "max-gap-ms")
	b.ReportMetric(100*share, "max-gap-%")
}

const connectWireN = 40

// connectWire runs connect --wire on the lab PostgreSQL, plain and TLS 1.3,
// and returns its result (with wire checks of both variants) and stdout.
func connectWire(tb testing.TB) (*result.Result, string) {
	needServer(tb, "tcpdump")
	needServer(tb, labBinaries["postgres"])
	out := filepath.Join(tb.TempDir(), "r.json")
	var stdout, stderr strings.Builder
	code := Main([]string{"connect", "--lab", "postgres", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--wire", "-n", strconv.Itoa(connectWireN), "--trials", "2", "--tables", "1", "--rows", "100", "-o", out}, &stdout, &stderr)
	if code != 0 {
		tb.Fatalf("exit %d: %s", code, stderr.String())
	}
	r, err := result.Read(out)
	if err != nil {
		tb.Fatal(err)
	}
	variants := map[string]bool{}
	for _, c := range r.WireChecks {
		variants[c.Variant] = true
	}
	if len(variants) != 2 {
		tb.Fatalf("wire checks of %d variants, want 2; notes %q", len(variants), r.Notes)
	}
	return r, stdout.String()
}

// TestWireBadInput: one line each, naming the problem and the fix.
func TestWireBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("this is not a capture\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	capture := redisCapture(t)
	// The same capture with its first record, then its fourth, claiming
	// 2 GB: damaged files, not captures of 0 packets or cut ones.
	raw, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	damaged := func(name string, record int) string {
		b, off := bytes.Clone(raw), 24
		for range record {
			off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
		}
		binary.LittleEndian.PutUint32(b[off+8:], 2<<30)
		path := filepath.Join(dir, name)
		os.WriteFile(path, b, 0o644)
		return path
	}
	first, fourth := damaged("first.pcap", 0), damaged("fourth.pcap", 3)
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
		{"damaged first record", []string{"wire", first}, 1, first + ": damaged capture at byte 24, after 0 packets: a record claims 2147483648 bytes, more than any capture keeps (262144): it holds no packet before that: capture again"},
		{"damaged fourth record", []string{"wire", fourth}, 1, "after 3 packets: a record claims 2147483648 bytes, more than any capture keeps (262144): keep the 3 packets before it with editcap -r " + fourth + " OUT.pcap 1-3, or capture again"},
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
			if len(errorLines(stderr)) != 1 {
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

// TestWireCaptureStop stops wire --capture while its command runs, as a
// SIGINT or SIGTERM to tlsbench's pid does (the signal cancels the
// context): the command's whole process group, a child it started in the
// background included, ends within the grace, and tlsbench returns
// interrupted. It took 10 s and left the children running.
func TestWireCaptureStop(t *testing.T) {
	needServer(t, "tcpdump")
	marker := fmt.Sprintf("tlsbench-wire-stop-%d", os.Getpid())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	f := wireFlags{ports: []int{1}, capture: "lo", snapLen: wire.DefaultSnapLen, output: filepath.Join(t.TempDir(), "r.json")}
	go func() {
		done <- wireRun(ctx, f, "", []string{"sh", "-c", "sleep 300 & sleep 300; wait", marker}, nil, &stdout, &stderr)
	}()
	// The shell and its two sleeps run.
	var procs []int
	deadline := time.Now().Add(30 * time.Second)
	for len(procs) < 3 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the command did not start within 30 s: %v", procs)
		}
		time.Sleep(20 * time.Millisecond)
		if sh := pidOf(marker); sh != 0 {
			procs = append([]int{sh}, childrenOf(sh)...)
		}
	}
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, errInterrupted) {
			t.Errorf("%v, want interrupted (stderr %q)", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("wire went on 30 s after it was stopped")
	}
	if took := time.Since(start); took > 2*groupGrace+5*time.Second {
		t.Errorf("took %v to stop", took)
	}
	if left := slices.DeleteFunc(procs, func(p int) bool { return !running(p) }); len(left) > 0 {
		t.Errorf("processes of the command still run: %v", left)
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// pidOf is the pid of the process whose command line holds s, 0 if none.
func pidOf(s string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); strings.Contains(string(b), s) {
			return pid
		}
	}
	return 0
}

// stat is the fields of /proc/PID/stat after the command's name: state,
// ppid, pgrp...; nil if there is no such process.
func stat(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	// pid (comm) state ppid ...: comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// running says whether pid is a live process (not a zombie).
func running(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if f := stat(p); len(f) > 1 && f[1] == strconv.Itoa(pid) && running(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestWirePostgresNegotiation decodes a live capture of tlsbench's own
// connections to PostgreSQL 18, half with an SSLRequest first and half
// with direct TLS (ALPN postgresql): two variants, named as a run names
// them, whose phases add up to no more than their totals. Both were one
// variant whose startup phase was a mean over half its connections.
func TestWirePostgresNegotiation(t *testing.T) {
	needServer(t, pg18)
	needServer(t, "tcpdump")
	srv, err := lab.Start(context.Background(), "postgres:18", lab.Options{Keys: []string{"ecdsa-p256"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	raw, err := srv.URL("", true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	if code, _, stderr := runMain(t, "prepare", raw, "--ca", srv.CAFile(), "--tables", "1", "--rows", "100"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "pg18.pcap")
	p, _ := strconv.Atoi(u.Port())
	l, err := wire.StartLive(context.Background(), wire.LiveOptions{Interface: "lo", Ports: []int{p}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	code, _, stderr := runMain(t, "connect", raw, "--ca", srv.CAFile(), "--tls", "1.3", "--negotiation", "postgres,direct", "-n", strconv.Itoa(n), "--trials", "1",
		"--tables", "1", "--rows", "100", "--warmup", "0s", "-o", filepath.Join(dir, "run.json"))
	if _, err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("connect: exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "wire.json")
	code, stdout, stderr := runMain(t, "wire", file, "--port", u.Port(), "-o", out)
	if code != 0 {
		t.Fatalf("wire: exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	trips := map[string]int{}
	var direct, request string
	for _, tr := range r.Trials {
		v := r.Variants[slices.IndexFunc(r.Variants, func(v plan.Variant) bool { return v.ID == tr.Variant })]
		if v.Negotiation == plan.NegotiationDirect {
			direct = tr.Variant
		} else {
			request = tr.Variant
		}
		if tr.Conns < n {
			t.Errorf("%s: %d connections, want at least %d", tr.Variant, tr.Conns, n)
		}
		var phases []string
		for _, p := range tr.Phases {
			phases = append(phases, p.Name)
			// The setup's phases, whose turns the protocol fixes: the
			// encrypted flights after the handshake vary from one
			// connection to the next with when the server's answers
			// arrive (on an idle machine too: means of 4.5 and 5.5),
			// and say nothing of the negotiation.
			if p.Name != "encrypted" {
				trips[tr.Variant] += p.RoundTrips.Min
			}
			if p.Latency.Count != tr.Conns {
				t.Errorf("%s: phase %s over %d connections of %d", tr.Variant, p.Name, p.Latency.Count, tr.Conns)
			}
		}
		sum := 0.0
		for _, s := range tr.Wire.Split {
			sum += s.Client + s.Server + s.Network
		}
		if past := result.WirePhasesPast(tr); past > 0 || sum > tr.Latency.Mean*1.001+0.003 {
			t.Errorf("%s: phases add up %.4f ms past the total %.4f ms; the split to %.4f", tr.Variant, past, tr.Latency.Mean, sum)
		}
		hasStartup := slices.Contains(phases, "startup")
		if hasStartup == (v.Negotiation == plan.NegotiationDirect) {
			t.Errorf("%s (negotiation %q): phases %v", tr.Variant, v.Negotiation, phases)
		}
	}
	if len(r.Trials) != 2 || direct != request+" direct" {
		t.Fatalf("variants %q and %q of %d, want X and X direct", request, direct, len(r.Trials))
	}
	if d := trips[request] - trips[direct]; d != 1 {
		t.Errorf("direct TLS saved %d round trips, want 1 (%v)", d, trips)
	}
	if !strings.Contains(stdout, direct) {
		t.Errorf("the report does not name %s:\n%s", direct, stdout)
	}
}
