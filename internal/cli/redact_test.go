package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestWireNoSecrets captures curl run with a bearer token, a user's
// password, a token in the URL's query and one in its environment: none
// of them reaches the result, its HTML page or the output, in tlsbench's
// command line nor in the captured command's.
func TestWireNoSecrets(t *testing.T) {
	needServer(t, "curl")
	needServer(t, "tcpdump")
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16})
	p := port(srv.Endpoint("ecdsa-p256"))[1:]
	u := "https://127.0.0.1:" + p + "/x?a=1&access_token=SECRET-query"
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := runMain(t, "wire", "--capture", "lo", "--port", p, "-o", out, "--",
		"env", "API_TOKEN=SECRET-env", "curl", "-s", "-o", "/dev/null", "--cacert", srv.CAFile(),
		"-H", "Authorization: Bearer SECRET-bearer", "-u", "app:SECRET-user", u)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"result": string(data), "page": string(page), "stdout": stdout, "stderr": stderr} {
		if i := strings.Index(s, "SECRET"); i >= 0 {
			t.Errorf("a secret is in the %s: ...%s...", what, s[max(i-60, 0):min(i+40, len(s))])
		}
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	// The command lines are still there, redacted.
	want := "env API_TOKEN=xxxxx curl -s -o /dev/null --cacert " + srv.CAFile() + " -H Authorization: xxxxx -u app:xxxxx https://127.0.0.1:" + p + "/x?a=1&access_token=xxxxx"
	if r.Capture == nil || strings.Join(r.Capture.Command, " ") != want {
		t.Errorf("captured command %q, want %q", r.Capture.Command, want)
	}
	if got := strings.Join(r.Command, " "); !strings.HasSuffix(got, "-- "+want) {
		t.Errorf("command line %q, want it to end in %q", got, want)
	}
	if len(tlsTrials(r)) != 1 {
		t.Errorf("trials %+v: want curl's TLS connection", r.Trials)
	}
}

// TestWireNoSecretInErrors: a command that cannot start is named without
// the credential it may be (an assignment meant for env).
func TestWireNoSecretInErrors(t *testing.T) {
	code, stdout, stderr := runMain(t, "wire", "--capture", "lo", "--port", "5432", "--", "PGPASSWORD=SECRET-pw", "psql")
	if code != 2 || strings.Contains(stdout+stderr, "SECRET") || !strings.Contains(stderr, "cannot start PGPASSWORD=xxxxx") {
		t.Errorf("exit %d: %q %q", code, stdout, stderr)
	}
}
