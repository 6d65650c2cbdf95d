package clientstack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// TestCurl: one curl process a run against the built-in HTTPS server:
// plain and TLS 1.3 connect runs whose transfers are each a connection
// the server counted (over TLS 1.3), a pool run whose transfers share the
// concurrency's connections, curl saying nothing of what it negotiated
// and giving its transfers, not totals; a run bounded by its duration,
// and a closed port's transfers failing as refused in tcp, a CA that
// signed nothing the server has in tls-handshake.
func TestCurl(t *testing.T) {
	labtest.Slow(t)
	srv := sharedLab(t, "http")
	ctx := context.Background()
	const n = 40
	for _, tc := range []struct {
		tls, experiment string
	}{
		{"off", "connect"},
		{"1.3", "connect"},
		{"1.3", "pool"},
	} {
		t.Run(tc.experiment+"-"+tc.tls, func(t *testing.T) {
			cfg := srv.config(t, "curl", tc.tls)
			c := startStack(t, cfg)
			var rep Report
			if tc.experiment == "connect" {
				rep = checkConnect(t, c, srv, cfg, n)
			} else {
				rep = checkPool(t, c, srv, cfg, Run{Experiment: "pool", Concurrency: 2, MaxOps: n, Duration: time.Minute})
			}
			if rep.Totals != nil {
				t.Errorf("totals %+v: curl says none", rep.Totals)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		cfg := srv.config(t, "curl", "off")
		c := startStack(t, cfg)
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Second, Warmup: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Ops) < 10 || rep.Elapsed < time.Second || rep.Elapsed > 20*time.Second {
			t.Errorf("a 1 s run: %d operations in %v", len(rep.Ops), rep.Elapsed)
		}
		checkOps(t, cfg, rep, -1, 2)
	})
	// A closed port's transfers fail as refused in tcp, a CA's that
	// signed nothing the server has in tls-handshake; curl has no login
	// to get wrong.
	for _, tc := range failures(t) {
		cfg := srv.config(t, "curl", "1.3")
		if !tc.change(&cfg) {
			continue
		}
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			c := startStack(t, cfg)
			rep, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 1, MaxOps: 3, Duration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ops) != 3 {
				t.Fatalf("%d operations, want 3", len(rep.Ops))
			}
			want := map[string]string{"closed port": "curl: (7) Failed to connect to 127.0.0.1 port " + strconv.Itoa(cfg.Port), "wrong CA": "curl: (60)"}[tc.name]
			for _, o := range rep.Ops {
				if o.Phase != tc.phase || o.Kind != tc.kind || !strings.Contains(o.Message, want) {
					t.Errorf("op %+v, want phase %s kind %s, %q", o, tc.phase, tc.kind, want)
				}
			}
		})
	}
}

// TestCurlCancel: a cancelled run ends at once, its curl reaped.
func TestCurlCancel(t *testing.T) {
	labtest.Slow(t)
	checkCancel(t, startStack(t, sharedLab(t, "http").config(t, "curl", "off")), "curl", 500*time.Millisecond)
}

// checkCancel checks that a pool run of c cancelled after d ends at once,
// none of its tool's processes left.
func checkCancel(t *testing.T, c Client, tool string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	began := time.Now()
	_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 20*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(began))
	}
	if kids := children(t, tool); len(kids) > 0 {
		t.Errorf("%s processes left: %v", tool, kids)
	}
}

// children are the processes of this test whose command is name.
func children(t *testing.T, name string) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "("+name) {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, s[:i+1])
		}
	}
	return kids
}
