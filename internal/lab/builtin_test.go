package lab

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labexe"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// tlsbenchExe is the real binary, built once by TestMain; not under -short,
// whose tests start no server.
var tlsbenchExe string

func TestMain(m *testing.M) {
	if os.Getenv("TLSBENCH_LAB_HELPER") != "" {
		helperParent()
		return
	}
	if flag.Parse(); testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tlsbench-labtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tlsbenchExe, err = labexe.Build(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// isolateTemp points the temp dir at a fresh one, so that a test can check
// that nothing was left behind.
func isolateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}

// TestBuiltinTLS12 checks --tls-max reaches the child, and that a TLS 1.3
// client gets the explained error.
func TestBuiltinTLS12(t *testing.T) {
	slow(t)
	b, err := StartBuiltin(context.Background(), BuiltinOptions{Keys: []string{"ecdsa-p256"}, MaxTLS: "1.2", Exe: tlsbenchExe})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if got := b.Info().Settings["tls_max"]; got != "1.2" {
		t.Errorf("tls_max = %q", got)
	}
	addr := b.Endpoint("ecdsa-p256")
	for _, mode := range []string{"1.2", "1.3"} {
		v := plan.Variant{ID: "tls" + mode, TLS: mode}
		cfg, err := tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: b.RootCAs()})
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.Dial("tcp", addr, cfg)
		if mode == "1.2" {
			if err != nil {
				t.Fatalf("TLS 1.2: %v", err)
			}
			c.Close()
			continue
		}
		if err == nil {
			c.Close()
			t.Fatal("TLS 1.3 handshake with a 1.2-only server succeeded")
		}
		want := addr + " does not speak TLS 1.3"
		if got := tlsx.Explain(err, addr, v); !strings.HasPrefix(got.Error(), want) {
			t.Errorf("Explain = %q, want %q…", got, want)
		}
	}
}

// script writes an executable shell script that stands in for a broken
// tlsbench binary.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-tlsbench")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuiltinStartFailures(t *testing.T) {
	slow(t)
	saved := readyTimeout
	readyTimeout = 2 * time.Second
	defer func() { readyTimeout = saved }()

	tests := []struct {
		name    string
		exe     string
		ctx     time.Duration // 0: no deadline
		want    []string
		wantErr error
	}{
		{"missing binary", "/nonexistent/tlsbench", 0, []string{"built-in server", "/nonexistent/tlsbench"}, nil},
		{"exits with a message", script(t, `echo "line 1" >&2; echo "boom: unknown flag --json" >&2; exit 3`), 0,
			[]string{"exited before it was ready (exit status 3)", "its log ends:\nline 1\nboom: unknown flag --json"}, nil},
		{"exits silently", script(t, `exit 0`), 0, []string{"exited before it was ready", "its log is empty"}, nil},
		{"prints something else", script(t, `echo "serving" >&2; echo hello; exec sleep 30`), 0,
			[]string{`printed "hello" instead of its addresses`, "its log ends:\nserving"}, nil},
		{"misses a key", script(t, `echo '{"http":"127.0.0.1:1","https":{"rsa2048":"127.0.0.1:2"}}'; exec sleep 30`), 0,
			[]string{"reported no HTTPS address for key ecdsa-p256"}, nil},
		{"never ready", script(t, `echo "generating keys" >&2; exec sleep 30`), 0,
			[]string{"was not ready within 2s", "its log ends:\ngenerating keys"}, nil},
		{"cancelled", script(t, `exec sleep 30`), 300 * time.Millisecond, []string{"start cancelled"}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := isolateTemp(t)
			ctx := context.Background()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			start := time.Now()
			b, err := StartBuiltin(ctx, BuiltinOptions{Keys: []string{"rsa2048", "ecdsa-p256"}, Exe: tt.exe})
			if err == nil {
				b.Stop()
				t.Fatal("StartBuiltin succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %v", err, tt.wantErr)
			}
			// The child (sleep 30) must have been stopped, not waited for.
			if d := time.Since(start); d > readyTimeout+2*stopGrace {
				t.Errorf("failure took %v", d)
			}
			assertEmpty(t, tmp)
		})
	}

	if _, err := StartBuiltin(context.Background(), BuiltinOptions{Exe: tlsbenchExe}); err == nil {
		t.Error("StartBuiltin without keys succeeded")
	}
	if _, err := StartBuiltin(context.Background(), BuiltinOptions{Keys: []string{"rsa2048"}, MaxTLS: "1.1", Exe: tlsbenchExe}); err == nil {
		t.Error("StartBuiltin with --tls-max 1.1 succeeded")
	}
}

// TestChildDiesWithParent kills a parent that started the built-in server
// with SIGKILL, which no cleanup code sees: Pdeathsig must end the child.
func TestChildDiesWithParent(t *testing.T) {
	h := startHelper(t, "builtin", t.TempDir())
	if !alive(h.server) {
		t.Fatalf("server %d not running while its parent is", h.server)
	}
	h.kill()
	if !waitGone(h.server, 5*time.Second) {
		syscall.Kill(h.server, syscall.SIGKILL)
		t.Errorf("server %d outlived its killed parent", h.server)
	}
}

// helper is a tlsbench stand-in (this test binary) that started a lab
// server and waits to be killed.
type helper struct {
	cmd    *exec.Cmd
	server int    // the server's pid
	dir    string // its lab dir
	addr   string // where it listens
}

// startHelper starts a helper running server ("builtin", "sshd" or
// "postgres") with TMPDIR tmp.
func startHelper(t *testing.T, server, tmp string) *helper {
	t.Helper()
	slow(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TLSBENCH_LAB_HELPER="+tlsbenchExe, "TLSBENCH_LAB_HELPER_SERVER="+server, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd}
	t.Cleanup(h.kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		t.Fatalf("helper said %q", line)
	}
	if h.server, err = strconv.Atoi(f[0]); err != nil {
		t.Fatalf("helper said %q", line)
	}
	h.dir, h.addr = f[1], f[2]
	return h
}

// kill SIGKILLs the helper, which no cleanup code sees.
func (h *helper) kill() {
	if h.cmd.ProcessState == nil {
		h.cmd.Process.Kill()
		h.cmd.Wait()
	}
}

// helperParent is the helper's side: it starts the server, prints its pid,
// dir and address, and waits to be killed.
func helperParent() {
	ctx := context.Background()
	var (
		p         *process
		dir, addr string
		err       error
	)
	switch os.Getenv("TLSBENCH_LAB_HELPER_SERVER") {
	case "sshd":
		var s *SSHD
		if s, err = StartSSHD(ctx); err == nil {
			p, dir, addr = s.proc, s.dir, s.Addr()
		}
	case "postgres":
		var s Server
		if s, err = Start(ctx, "postgres", Options{Keys: []string{"ecdsa-p256"}}); err == nil {
			pg := s.(*Postgres)
			p, dir, addr = pg.proc, pg.dir, pg.addr()
		}
	default:
		var b *Builtin
		if b, err = StartBuiltin(ctx, BuiltinOptions{Keys: []string{"ecdsa-p256"}, Exe: os.Getenv("TLSBENCH_LAB_HELPER")}); err == nil {
			p, dir, addr = b.proc, b.dir, b.Endpoint("")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(p.cmd.Process.Pid, dir, addr)
	time.Sleep(time.Minute)
	os.Exit(1)
}

// waitGone waits up to d for pid to end and reports whether it did.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(pid)
}

// alive reports whether pid runs: it exists and is not a zombie (which an
// init that does not reap, as in some containers, would leave).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(data[i+1:])), "Z")
}

// httpLogin is the lifecycle suite's login: a GET of rawURL on a new
// connection (the server has no users).
func httpLogin(ctx context.Context, rawURL string, tlsConfig *tls.Config) (tls.ConnectionState, error) {
	tr := &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer resp.Body.Close()
	var state tls.ConnectionState
	if resp.TLS != nil {
		state = *resp.TLS
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return state, err
	}
	if resp.StatusCode != http.StatusOK {
		return state, fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	return state, nil
}

// checkBuiltin is what only the built-in server promises (the lifecycle
// suite runs it): what Info reports, a plain HTTP listener and an HTTPS
// listener per key, each presenting its key and serving the response
// size, and URLs that follow UseKey.
func checkBuiltin(t *testing.T, srv Server, key string) {
	b := srv.(*Builtin)
	info := b.Info()
	if info.Software != "tlsbench built-in (net/http, crypto/tls)" || info.Settings["response_size"] != strconv.Itoa(builtinSize) || info.Settings["tls_max"] != "1.3" {
		t.Errorf("Info = %+v", info)
	}
	if len(info.Endpoints) != len(b.opts.Keys)+1 || info.Endpoints[""] != b.Endpoint("") {
		t.Errorf("Info endpoints %v", info.Endpoints)
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.RootCAs()}},
	}
	for _, k := range append([]string{""}, b.opts.Keys...) {
		url := "http://" + b.Endpoint(k) + "/"
		if k != "" {
			url = "https://" + b.Endpoint(k) + "/"
		}
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || n != builtinSize {
			t.Errorf("GET %s: %s, %d bytes, %v; want 200 with %d bytes", url, resp.Status, n, err, builtinSize)
		}
		if (k == "") != (resp.TLS == nil) {
			t.Fatalf("GET %s: TLS state %v", url, resp.TLS != nil)
		}
		if k != "" {
			if got := tlsx.KeyTypeOf(tlsx.PeerKey(resp.TLS.PeerCertificates[0])); got != k {
				t.Errorf("GET %s: presented key %s, want %s", url, got, k)
			}
		}
	}
	if b.Endpoint("ed25519") != "" {
		t.Error("Endpoint of a key not served is not empty")
	}
	if u, err := b.URL("", false); err != nil || u != "http://"+b.Endpoint("")+"/" {
		t.Errorf("URL plain = %q, %v", u, err)
	}
	if u, err := b.URL("", true); err != nil || u != "https://"+b.Endpoint(key)+"/" {
		t.Errorf("URL after UseKey(%s) = %q, %v", key, u, err)
	}
}
