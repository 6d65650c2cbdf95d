package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// quick are the flags that keep a URL-target run short.
var quick = []string{"--trials", "1", "-n", "5", "--warmup", "0s"}

// urlRun runs args against a URL target and reads its result: the exit
// code, the result (nil if none was written) and stderr.
func urlRun(t *testing.T, args ...string) (int, *result.Result, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, append(append(args, quick...), "-o", out)...)
	r, err := result.Read(out)
	if err != nil {
		return code, nil, stderr
	}
	return code, r, stderr
}

func variantIDs(r *result.Result) []string {
	var ids []string
	for _, v := range r.Variants {
		ids = append(ids, v.ID)
	}
	return ids
}

// TestConnectNeedsNoData: connect with default flags on a URL of a stock
// server that holds none of tlsbench's data runs (a ping per connection),
// and compares plain with TLS where the URL asks for TLS.
func TestConnectNeedsNoData(t *testing.T) {
	for _, tc := range []struct {
		engine, query string
		want          []string
	}{
		{"postgres", "?sslmode=require", []string{"plain", "tls-auto"}},
		{"mariadb", "?tls=skip-verify", []string{"plain", "tls-auto"}},
		{"redis", "", []string{"plain"}},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			srv, _ := bareLab(t, tc.engine)
			raw, err := srv.URL("", false)
			if err != nil {
				t.Fatal(err)
			}
			code, r, stderr := urlRun(t, "connect", raw+tc.query)
			if code != 0 || r == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if r.Spec.Workload != "ping" || !slices.Equal(variantIDs(r), tc.want) {
				t.Errorf("workload %q, variants %v: want ping, %v", r.Spec.Workload, variantIDs(r), tc.want)
			}
			if len(r.Warnings) > 0 {
				t.Errorf("warnings %q", r.Warnings)
			}
		})
	}
}

// TestPoolSaysPrepare: pool and stream keep their workloads, which read
// tlsbench's data: on a server without it, one line that says to run
// tlsbench prepare.
func TestPoolSaysPrepare(t *testing.T) {
	for _, engine := range []string{"postgres", "mariadb", "redis", "mongodb"} {
		t.Run(engine, func(t *testing.T) {
			srv, _ := bareLab(t, engine)
			raw, err := srv.URL("", false)
			if err != nil {
				t.Fatal(err)
			}
			for _, exp := range []string{"pool", "stream"} {
				code, _, stderr := urlRun(t, exp, raw, "-c", "1", "-d", "1s")
				if lines := errorLines(stderr); code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "tlsbench prepare") {
					t.Errorf("%s: exit %d, stderr %q: want exit 1 and one line that says tlsbench prepare", exp, code, stderr)
				}
			}
		})
	}
}

// TestRefusedDefaultVariant: a server that refuses plaintext (PostgreSQL
// with hostssl lines only in pg_hba.conf, MariaDB with
// require_secure_transport=ON) gets one warning line for the plain variant
// a URL target compares by default, and the TLS variant is measured;
// asked for by name, the refused variant is an error.
func TestRefusedDefaultVariant(t *testing.T) {
	for _, tc := range []struct{ engine, query string }{
		{"postgres", "?sslmode=require"},
		{"mariadb", "?tls=skip-verify"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			srv := labtest.Start(t, tc.engine, lab.Options{LocalhostOnly: true, TLSOnly: true})
			raw, err := srv.URL("", false)
			if err != nil {
				t.Fatal(err)
			}
			target := raw + tc.query
			code, r, stderr := urlRun(t, "connect", target)
			if code != 0 || r == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !slices.Equal(variantIDs(r), []string{"tls-auto"}) || !r.Variants[0].Baseline || len(r.Trials) == 0 {
				t.Errorf("variants %+v, %d trials: want tls-auto measured, the baseline", r.Variants, len(r.Trials))
			}
			var warned []string
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if strings.HasPrefix(l, "warning: ") {
					warned = append(warned, l)
				}
			}
			if len(warned) != 1 || !strings.HasPrefix(warned[0], "warning: plain not measured, ") || !strings.HasSuffix(warned[0], "measuring tls-auto only") ||
				len(r.Warnings) != 1 || "warning: "+r.Warnings[0] != warned[0] {
				t.Errorf("stderr warnings %q, result warnings %q: want the same one line about plain", warned, r.Warnings)
			}
			code, _, stderr = urlRun(t, "connect", target, "--tls", "off,auto")
			if lines := errorLines(stderr); code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "tlsbench: plain: ") {
				t.Errorf("--tls off,auto: exit %d, %q: want the refusal as one error line", code, stderr)
			}
		})
	}
}
