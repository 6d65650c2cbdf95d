package bench

import (
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestJudgePeers: what the server saw of a stack's connections, as
// PostgreSQL's pg_stat_ssl and MariaDB's counts give it (recorded here),
// passes where it is the variant, and fails in one line naming the
// stack, what was asked and what the server saw where it is not.
func TestJudgePeers(t *testing.T) {
	plain := plan.Variant{ID: "psycopg plain", Client: "psycopg", TLS: "off"}
	tls13 := plan.Variant{ID: "psycopg tls1.3", Client: "psycopg", TLS: "1.3"}
	auto := plan.Variant{ID: "pgjdbc tls", Client: "pgjdbc", TLS: "auto"}
	maria := plan.Variant{ID: "pymysql tls1.3", Client: "pymysql", TLS: "1.3"}
	mariaPlain := plan.Variant{ID: "pymysql plain", Client: "pymysql", TLS: "off"}
	v13 := driver.ServerView{TLS: true, Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384", ClientCertKnown: true}
	v12 := driver.ServerView{TLS: true, Version: "TLSv1.2", Cipher: "ECDHE-ECDSA-AES256-GCM-SHA384", ClientCertKnown: true}
	off := driver.ServerView{}
	counts := func(accepted, tls int64) driver.Peers {
		return driver.Peers{Counted: true, Accepted: accepted, TLS: tls}
	}
	yes, no := true, false
	for _, tc := range []struct {
		name          string
		v             plan.Variant
		hop           *bool
		before, after driver.Peers
		views         []driver.ServerView
		want          *result.ServerView
		err           string
	}{
		{name: "plain seen plain", v: plain, views: []driver.ServerView{off}, want: &result.ServerView{}},
		{name: "TLS 1.3 seen", v: tls13, views: []driver.ServerView{v13, v13},
			want: &result.ServerView{TLS: true, Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384"}},
		{name: "any TLS seen 1.2", v: auto, views: []driver.ServerView{v12},
			want: &result.ServerView{TLS: true, Version: "TLSv1.2", Cipher: "ECDHE-ECDSA-AES256-GCM-SHA384"}},
		{name: "TLS 1.3 seen 1.2", v: tls13, views: []driver.ServerView{v12},
			err: "client psycopg: asked for TLS 1.3, the server reports a connection over TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384"},
		{name: "TLS seen plain", v: tls13, views: []driver.ServerView{v13, off},
			err: "client psycopg: asked for TLS 1.3, the server reports a plaintext connection"},
		{name: "plain seen TLS", v: plain, views: []driver.ServerView{v13},
			err: "client psycopg: asked for plaintext, the server reports a connection over TLSv1.3 TLS_AES_256_GCM_SHA384"},
		{name: "none seen", v: tls13,
			err: "client psycopg: the server showed none of its connections while it held a pool of one for 1s (its view of the user's other sessions)"},
		{name: "Redis TLS port", v: tls13, views: []driver.ServerView{{TLS: true}}, want: &result.ServerView{TLS: true}},
		{name: "Redis plain port for TLS", v: tls13, views: []driver.ServerView{{}},
			err: "client psycopg: asked for TLS 1.3, the server reports a plaintext connection"},
		{name: "pooler to the server in plaintext", v: tls13, hop: &no, views: []driver.ServerView{off}, want: &result.ServerView{}},
		{name: "pooler to the server over TLS, seen plain", v: plain, hop: &yes, views: []driver.ServerView{off},
			err: "client psycopg: asked for TLS from its intermediary to the server, the server reports a plaintext connection"},
		{name: "MariaDB counted TLS", v: maria, before: counts(10, 4), after: counts(12, 6), want: &result.ServerView{TLS: true}},
		{name: "MariaDB counted plain", v: mariaPlain, before: counts(10, 4), after: counts(11, 4), want: &result.ServerView{}},
		{name: "MariaDB TLS counted plain", v: maria, before: counts(10, 4), after: counts(12, 4),
			err: "client pymysql: asked for TLS 1.3, the server counted TLS on 0 of the 2 connections it accepted meanwhile (every client's: Connections, Ssl_finished_accepts)"},
		{name: "MariaDB plain counted TLS", v: mariaPlain, before: counts(10, 4), after: counts(11, 5),
			err: "client pymysql: asked for plaintext, the server counted TLS on 1 of the 1 connections it accepted meanwhile (every client's: Connections, Ssl_finished_accepts)"},
		{name: "MariaDB counted nothing", v: maria, before: counts(10, 4), after: counts(10, 4),
			err: "client pymysql: the server counted no connection while the client held its pool of one for 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unknown, err := judgePeers(tc.v, tc.hop, tc.before, tc.after, tc.views)
			if unknown != "" {
				t.Errorf("unknown %q", unknown)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || got != nil {
					t.Errorf("got %+v, %v\nwant error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got == nil || *got != *tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
