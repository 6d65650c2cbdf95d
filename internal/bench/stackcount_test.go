package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// fakeCounts is a server's count read in turn: the last one stays.
type fakeCounts struct {
	seq   []driver.ConnCount
	reads int
}

func (c *fakeCounts) ConnCount(context.Context) (driver.ConnCount, error) {
	n := c.seq[min(c.reads, len(c.seq)-1)]
	c.reads++
	return n, nil
}

func (c *fakeCounts) Close() error { return nil }

// TestStackCount: what the server counted over a stack's trial is set
// beside what the stack reported (its connections, those it opened of
// its own, its failures at most), and where they differ one warning per
// variant names both counts; PostgreSQL's count is read once the
// sessions the trial opened are gone.
func TestStackCount(t *testing.T) {
	pg := func(n, open int64) driver.ConnCount {
		return driver.ConnCount{Counter: "pg_stat_database.sessions", Accepted: n, Open: open}
	}
	maria := func(n, tls int64) driver.ConnCount {
		return driver.ConnCount{Counter: "Connections", Accepted: n, TLSCounter: "Ssl_finished_accepts", TLS: tls, Open: -1}
	}
	libpq := plan.Variant{ID: "tls1.3 libpq", Client: "libpq", TLS: "1.3"}
	pymysql := plan.Variant{ID: "plain pymysql", Client: "pymysql", TLS: "off"}
	pymysqlTLS := plan.Variant{ID: "tls1.3 pymysql", Client: "pymysql", TLS: "1.3"}
	for _, tc := range []struct {
		name   string
		v      plan.Variant
		before driver.ConnCount
		after  []driver.ConnCount
		trial  result.Trial
		extra  clientstack.Extra
		want   result.ServerCount
		warn   string
	}{
		{name: "pgbench: its own first connection", v: libpq, before: pg(100, 0),
			// Two backends still exiting, then gone.
			after: []driver.ConnCount{pg(119, 2), pg(121, 0), pg(121, 0)}, trial: result.Trial{Conns: 20}, extra: clientstack.Extra{Min: 1, Max: 1, Known: true},
			want: result.ServerCount{Counter: "pg_stat_database.sessions", Conns: 21, Want: 21, WantMax: 21}},
		{name: "one more than reported", v: libpq, before: pg(100, 0), after: []driver.ConnCount{pg(122, 0)},
			trial: result.Trial{Conns: 20}, extra: clientstack.Extra{Min: 1, Max: 1, Known: true},
			want: result.ServerCount{Counter: "pg_stat_database.sessions", Conns: 22, Want: 21, WantMax: 21},
			warn: "connect tls1.3 libpq c=2: the server counted 22 connections (pg_stat_database.sessions) where client libpq reported 20 and opened 1 of its own, all over TLS: another client of the server's, or connections the client did not report (each trial's counts are in the result's server_count)"},
		{name: "failures may or may not have connected", v: pymysql, before: maria(10, 4), after: []driver.ConnCount{maria(27, 4)},
			trial: result.Trial{Conns: 15, Errors: map[string]int64{"auth: auth": 3}}, extra: clientstack.Extra{Known: true},
			want: result.ServerCount{Counter: "Connections", Conns: 17, TLSCounter: "Ssl_finished_accepts", Want: 15, WantMax: 18}},
		{name: "plain counted over TLS", v: pymysql, before: maria(10, 4), after: []driver.ConnCount{maria(30, 5)},
			trial: result.Trial{Conns: 20}, extra: clientstack.Extra{Known: true},
			want: result.ServerCount{Counter: "Connections", Conns: 20, TLSCounter: "Ssl_finished_accepts", TLS: 1, Want: 20, WantMax: 20},
			warn: "connect plain pymysql c=2: the server counted 20 connections (Connections), 1 of them over TLS (Ssl_finished_accepts) where client pymysql reported 20, all in plaintext: another client of the server's, or connections the client did not report (each trial's counts are in the result's server_count)"},
		{name: "TLS all counted over TLS", v: pymysqlTLS, before: maria(10, 4), after: []driver.ConnCount{maria(30, 24)},
			trial: result.Trial{Conns: 20}, extra: clientstack.Extra{Known: true},
			want: result.ServerCount{Counter: "Connections", Conns: 20, TLSCounter: "Ssl_finished_accepts", TLS: 20, Want: 20, WantMax: 20}},
		{name: "a warm-up's connections: at least", v: pymysqlTLS, before: maria(10, 4), after: []driver.ConnCount{maria(90, 84)},
			trial: result.Trial{Conns: 20},
			want:  result.ServerCount{Counter: "Connections", Conns: 80, TLSCounter: "Ssl_finished_accepts", TLS: 80, Want: 20}},
		{name: "fewer than reported", v: pymysqlTLS, before: maria(10, 4), after: []driver.ConnCount{maria(20, 14)},
			trial: result.Trial{Conns: 20},
			want:  result.ServerCount{Counter: "Connections", Conns: 10, TLSCounter: "Ssl_finished_accepts", TLS: 10, Want: 20},
			warn:  "connect tls1.3 pymysql c=2: the server counted 10 connections (Connections), 10 of them over TLS (Ssl_finished_accepts) where client pymysql reported 20 and opened an unknown number of its own, all over TLS: another client of the server's, or connections the client did not report (each trial's counts are in the result's server_count)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warned []string
			r := &Runner{Warn: func(w string) { warned = append(warned, w) }}
			cc := &fakeCounts{seq: tc.after}
			c := &stackCount{s: cc, cc: cc, before: tc.before, timeout: 5 * time.Second}
			where := TrialLabel(plan.Connect, tc.v, 2, 1, 0)
			for range 2 { // a second trial of the variant warns no more
				tr := tc.trial
				cc.reads = 0
				r.endCount(context.Background(), c, tc.v, where, &tr, clientstack.Report{Extra: tc.extra})
				if tr.ServerCount == nil || *tr.ServerCount != tc.want {
					t.Fatalf("server count %+v, want %+v", tr.ServerCount, tc.want)
				}
			}
			if tc.warn == "" && len(warned) > 0 || tc.warn != "" && (len(warned) != 1 || warned[0] != tc.warn) {
				t.Errorf("warnings %q\nwant %q", warned, tc.warn)
			}
		})
	}
}
