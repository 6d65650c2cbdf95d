package cli

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/server"
)

// TestWorkloadBadInput: every mistake in the user's workload is one line
// naming the flag and the fix, exit 2, before anything is measured or
// started, and never shows the secret it was given.
func TestWorkloadBadInput(t *testing.T) {
	dir := t.TempDir()
	paths := filepath.Join(dir, "paths.txt")
	os.WriteFile(paths, []byte("/ok\n# a comment\nfoo\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "builtin", "--command", "GET k"}, "--command applies to redis targets"},
		{[]string{"pool", "redis://127.0.0.1:1", "--command", " "}, "--command is empty: give a Redis command such as 'GET key:__rand_int__'"},
		{[]string{"pool", "redis://127.0.0.1:1", "--command", "GET key:__rand_int__"}, "--command holds __rand_int__: give --keyspace N"},
		{[]string{"pool", "--lab", "redis", "--command", "SET __key__ __data__"}, "__key__ is memtier_benchmark's placeholder"},
		{[]string{"pool", "redis://127.0.0.1:1", "--command", `AUTH "s3cret`}, "--command: unbalanced quotes"},
		{[]string{"pool", "redis://127.0.0.1:1", "--command", "GET k", "--workload", "stream"}, "--command replaces --workload"},
		{[]string{"pool", "redis://127.0.0.1:1", "--keyspace", "10"}, "--keyspace is the range of __rand_int__ in --command or --filter"},
		{[]string{"pool", "mongodb://127.0.0.1:1", "--filter", `{"_id": }`, "--collection", "a.b"}, "--filter is not JSON at line 1, column 9"},
		{[]string{"pool", "mongodb://127.0.0.1:1", "--filter", `{"_id": 1}`}, "--filter needs --collection"},
		{[]string{"connect", "https://127.0.0.1:1/", "--data", "@" + filepath.Join(dir, "none.json")}, "--data file: stat"},
		{[]string{"connect", "https://127.0.0.1:1/", "-H", "Bearer s3cret"}, "-H/--header 1 has no ':': write it as 'Name: value'"},
		{[]string{"connect", "https://127.0.0.1:1/", "--paths", paths}, "--paths " + paths + ":3: a path must start with one '/'"},
		{[]string{"connect", "redis://127.0.0.1:1", "-X", "POST"}, "-X/--request applies to http:// and https:// targets"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line with %q", tt.args, code, stderr, exitUsage, tt.want)
		}
		if strings.Contains(stderr, "s3cret") {
			t.Errorf("%q: the error shows the secret: %s", tt.args, stderr)
		}
	}
}

// TestWorkloadRequest runs a curl-like request against the built-in
// server over HTTPS: the method, headers, body and paths reach it, the
// result records the request and its checksum but no credential (not in
// the spec, the command line, the tables or the HTML), and requests the
// server answers 404 count as errors of kind "response: status 404".
func TestWorkloadRequest(t *testing.T) {
	labtest.Slow(t)
	dir := t.TempDir()
	if err := server.WriteCerts(dir, []string{"ecdsa-p256"}); err != nil {
		t.Fatal(err)
	}
	certs, err := server.LoadCerts(dir, []string{"ecdsa-p256"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	count := map[string]int{}
	flaky := 0
	srv, err := server.Start(server.Config{
		HTTPSAddr: "127.0.0.1:0", Certs: map[string]tls.Certificate{"ecdsa-p256": certs["ecdsa-p256"]}, ResponseSize: 100,
		Check: func(r *http.Request) int {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			if r.Method == "POST" && string(body) == `{"password":"s3cret-body"}` && r.Header.Get("Authorization") == "Bearer s3cret-token" {
				count[r.URL.Path]++
			}
			if r.URL.Path == "/flaky" {
				// Every second request: the run's check (the first)
				// passes, then half the operations fail.
				if flaky++; flaky%2 == 0 {
					return http.StatusNotFound
				}
			}
			return 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := filepath.Join(dir, "body.json")
	os.WriteFile(body, []byte(`{"password":"s3cret-body"}`), 0o600)
	paths := filepath.Join(dir, "paths.txt")
	os.WriteFile(paths, []byte("# two pages\n/one\n/two\n"), 0o600)
	flakyPath := filepath.Join(dir, "flaky.txt")
	os.WriteFile(flakyPath, []byte("/flaky\n"), 0o600)
	url := "https://" + srv.HTTPSAddrs()["ecdsa-p256"]
	out := filepath.Join(dir, "r.json")
	args := []string{"pool", url, "--tls", "1.3", "--ca", filepath.Join(dir, "ca.crt"), "-n", "40", "--trials", "1", "--warmup", "0",
		"-H", "Authorization: Bearer s3cret-token", "-H", "Content-Type: application/json", "--data", "@" + body, "-o", out}

	code, stdout, stderr := runMain(t, append(args, "--paths", paths)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	// 40 operations and the check's one, spread over both paths.
	if count["/one"]+count["/two"] != 41 || count["/one"] < 5 || count["/two"] < 5 {
		t.Errorf("the server saw the POST with its headers and body %v times, want 41 over /one and /two", count)
	}
	mu.Unlock()
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	rec := r.Spec.Recorded
	if r.Spec.Workload != "request" || rec == nil || len(rec.SHA256) != 64 || rec.Paths != 2 || rec.BodyBytes != 26 ||
		!strings.HasPrefix(rec.Text, "POST <one of 2 paths in "+paths) || !strings.Contains(rec.Text, "Authorization: xxxxx\nContent-Type: application/json") {
		t.Errorf("the result records %+v (workload %q)", rec, r.Spec.Workload)
	}
	html, _ := os.ReadFile(strings.TrimSuffix(out, ".json") + ".html")
	saved, _ := os.ReadFile(out)
	for what, text := range map[string]string{"result": string(saved), "html": string(html), "stdout": stdout, "stderr": stderr} {
		if strings.Contains(text, "s3cret") {
			t.Errorf("the %s shows a secret", what)
		}
	}

	code, _, stderr = runMain(t, append(args, "--paths", flakyPath, "-o", filepath.Join(dir, "404.json"))...)
	if code != exitFailed || !strings.Contains(stderr, "operations failed") {
		t.Fatalf("exit %d, stderr %q: want exit %d and the error rate", code, stderr, exitFailed)
	}
	r, err = result.Read(filepath.Join(dir, "404.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tr := r.Trials[0]; tr.Errors["response: status 404"] != 20 || tr.Ops != 20 || !strings.Contains(tr.ErrorSamples["response: status 404"], "HTTP status 404 Not Found") {
		t.Errorf("errors %v, samples %v: want 20 of kind response: status 404 and 20 operations done", tr.Errors, tr.ErrorSamples)
	}
}
