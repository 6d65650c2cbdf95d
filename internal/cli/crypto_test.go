package cli

import (
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestCryptoCommand runs tlsbench crypto on a few primitives (Go only, to
// stay short) and checks the tables, the result file and its re-rendering.
func TestCryptoCommand(t *testing.T) {
	labtest.Slow(t)
	out := filepath.Join(t.TempDir(), "c.json")
	code, stdout, stderr := runMain(t, "crypto", "ecdsa-p256", "x25519", "x25519mlkem768", "aes-128-gcm", "--sizes", "16,1024", "-d", "20ms", "--openssl", "off", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"public key: operations/s", "ecdsa-p256", "key agreement", "x25519", "ciphers: MB/s on 1 core", "aes-128-gcm", "timing: Go 20ms per figure",
		"TLS 1.3 key exchange by group", "x25519mlkem768", "1216"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Crypto) != 2+3+2+2 || len(r.Trials) != 0 || r.Spec.Duration.String() != "20ms" {
		t.Errorf("%d primitives, %d trials, duration %v: want 9, 0, 20ms", len(r.Crypto), len(r.Trials), r.Spec.Duration)
	}
	for _, p := range r.Crypto {
		if p.Library != runtime.Version() || p.PerCore <= 0 {
			t.Errorf("primitive %+v", p)
		}
	}
	code, again, stderr := runMain(t, "report", out)
	if code != 0 || again != stdout {
		t.Errorf("report: exit %d (%s), output differs from the run's:\n%s\nrun:\n%s", code, stderr, again, stdout)
	}
}

func TestCryptoBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"crypto", "rsa512"}, `unknown primitive "rsa512": use rsa1024`},
		{[]string{"crypto", "-d", "0"}, "-d/--duration: 0s is no measurement"},
		{[]string{"crypto", "-d", "-1s"}, "-d/--duration: -1s is no measurement"},
		{[]string{"crypto", "-n", "-3"}, "-n/--count: -3 is negative"},
		{[]string{"crypto", "--sizes", "0"}, "--sizes: 0 is out of range"},
		{[]string{"crypto", "--sizes", "x"}, `invalid argument "x"`},
		{[]string{"crypto", "--openssl", "/nonexistent/openssl", "x25519"}, "--openssl: /nonexistent/openssl version"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line saying %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

// TestConnectCeilings checks that a connect run on the built-in server
// measures a Go ceiling for exactly its TLS keys and shows it, and that a
// run against a URL has none.
func TestConnectCeilings(t *testing.T) {
	labtest.Slow(t) // the built-in server
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runMain(t, "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256,rsa2048", "-n", "10", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range r.Ceilings {
		keys = append(keys, c.Key)
		if c.Library != runtime.Version() || c.Cores != runtime.NumCPU() || c.SignPerSec <= 0 {
			t.Errorf("ceiling %+v: want Go's, this machine's cores, a positive rate", c)
		}
	}
	if !slices.Equal(keys, []string{"ecdsa-p256", "rsa2048"}) {
		t.Errorf("ceilings for %v, want ecdsa-p256, rsa2048", keys)
	}
	if !strings.Contains(stdout, "connect: server ceiling per key") || !strings.Contains(stdout, "tls1.3 rsa2048 c=1") {
		t.Errorf("output lacks the ceilings:\n%s", stdout)
	}

	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16})
	url := "https://127.0.0.1" + port(srv.Endpoint("ecdsa-p256")) + "/"
	code, stdout, stderr = runMain(t, "connect", url, "--ca", srv.CAFile(), "-n", "5", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("URL run: exit %d: %s", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if len(r.Ceilings) != 0 || strings.Contains(stdout, "server ceiling") {
		t.Errorf("a URL target got ceilings %+v", r.Ceilings)
	}
}
