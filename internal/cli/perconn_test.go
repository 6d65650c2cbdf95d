package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestPerConn runs connect --per-conn through the command line against
// the built-in server: every trial of N > 1 ran whole connections of N
// requests and is recorded as such, the report has its table; bad values
// are one line naming --per-conn.
func TestPerConn(t *testing.T) {
	labtest.Slow(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runMain(t, "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--per-conn", "1,5", "-n", "40", "--trials", "2", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 8 || r.PlannedTrials != 8 {
		t.Fatalf("%d trials of %d planned, want 8 (2 rounds × 2 per-conn × 2 variants)", len(r.Trials), r.PlannedTrials)
	}
	per := map[int]int{}
	for _, tr := range r.Trials {
		per[tr.PerConn]++
		n := int64(max(tr.PerConn, 1))
		if tr.Ops != 40 || tr.Conns != 40/n || len(tr.Errors) > 0 {
			t.Errorf("%s per_conn %d: %d ops on %d connections, errors %v; want 40 on %d", tr.Variant, tr.PerConn, tr.Ops, tr.Conns, tr.Errors, 40/n)
		}
	}
	if per[0] != 4 || per[5] != 4 {
		t.Errorf("trials by per_conn %v, want 4 of 0 (one, omitted) and 4 of 5", per)
	}
	for _, want := range []string{"connect c=1 by operations per connection", "connect c=1 per-conn 5: phases", "more-ops",
		"the first N-1 requests of a connection keep it open"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report has no %q:\n%s", want, stdout)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "builtin", "--per-conn", "0"}, "--per-conn: 0 is out of range: use 1 to 100000 operations per connection"},
		{[]string{"connect", "builtin", "--per-conn", "3,3"}, "--per-conn: 3 is given twice"},
		{[]string{"pool", "builtin", "--per-conn", "3"}, "--per-conn applies to the connect experiment"},
		{[]string{"connect", "builtin", "--per-conn", "10", "-n", "5"}, "-n/--count 5 is fewer operations than one connection runs (--per-conn 10)"},
		{[]string{"connect", "builtin", "--per-conn", "x"}, "--per-conn"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if lines := errorLines(stderr); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
