package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRoutes: New keeps each --via entry parsed, secrets included, and
// every variant through it records the entry's redacted route, whose
// label is the variant's Tunnel and whose JSON holds no secret.
func TestRoutes(t *testing.T) {
	const pw = "hunter2"
	tests := []struct {
		name   string
		spec   Spec
		via    string // the entry, as given
		info   RouteInfo
		label  string
		starts bool // StartsServer
	}{
		{"direct", Spec{}, "direct", RouteInfo{}, "", false},
		{"lab sshd", Spec{Target: "lab:postgres"}, "ssh", RouteInfo{Kind: RouteSSH}, "ssh", true},
		{"lab sshd cipher", Spec{Target: "lab:postgres"}, "ssh:aes256-ctr", RouteInfo{Kind: RouteSSH, Arg: "aes256-ctr"}, "ssh aes256-ctr", true},
		{"user's sshd", Spec{Target: "https://127.0.0.1:8443/"}, "ssh://bench:" + pw + "@127.0.0.1:2222?cipher=aes128-ctr&identity=/home/bench/.ssh/id_ed25519",
			RouteInfo{Kind: RouteSSH, Arg: "aes128-ctr"}, "ssh aes128-ctr", false},
		{"stunnel", Spec{Target: "lab:mariadb"}, "stunnel", RouteInfo{Kind: RouteStunnel}, "stunnel", true},
		{"pgbouncer", Spec{Target: "lab:postgres", QueryMode: "simple"}, "pgbouncer:local?server_tls_sslmode=require&pool_mode=transaction",
			RouteInfo{Kind: RoutePgbouncer, Arg: "local", Params: "pool_mode=transaction&server_tls_sslmode=require"},
			"pgbouncer local pool_mode=transaction server_tls_sslmode=require", true},
		{"haproxy", Spec{Target: "lab:redis"}, "haproxy", RouteInfo{Kind: RouteHAProxy}, "haproxy", true},
		{"openssh", Spec{Target: "lab:postgres"}, "openssh:aes256-cbc", RouteInfo{Kind: RouteOpenSSH, Arg: "aes256-cbc"}, "openssh aes256-cbc", true},
		{"wireguard", Spec{Target: "lab:postgres"}, "wireguard", RouteInfo{Kind: RouteWireGuard}, "wireguard", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.spec
			raw.Via = []string{tt.via}
			s, err := New(raw)
			if err != nil {
				t.Fatal(err)
			}
			rs := s.Routes()
			if len(rs) != 1 || rs[0].Label() != tt.label || rs[0].Info() != tt.info || rs[0].StartsServer() != tt.starts {
				t.Fatalf("Routes() = %+v: want one with label %q, info %+v, StartsServer %v", rs, tt.label, tt.info, tt.starts)
			}
			if tt.info.Kind == RouteSSH && strings.Contains(tt.via, "://") {
				if p, _ := rs[0].URL.User.Password(); p != pw {
					t.Errorf("Routes()[0].URL has password %q, want the one given", p)
				}
			}
			if got := tt.info.Route().Label(); got != tt.label {
				t.Errorf("RouteInfo.Route().Label() = %q, want %q", got, tt.label)
			}
			vs := s.Variants()
			if len(vs) == 0 {
				t.Fatal("no variants")
			}
			for _, v := range vs {
				if v.Route != tt.info || v.Tunnel != tt.label {
					t.Errorf("variant %s: route %+v, tunnel %q; want %+v, %q", v.ID, v.Route, v.Tunnel, tt.info, tt.label)
				}
			}
			data, err := json.Marshal(struct {
				Spec     Spec      `json:"spec"`
				Variants []Variant `json:"variants"`
			}{s, vs})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), pw) {
				t.Errorf("the recorded spec and variants show the password: %s", data)
			}
			if vdata, _ := json.Marshal(vs); strings.Contains(string(vdata), "127.0.0.1:2222") || strings.Contains(string(vdata), "id_ed25519") {
				t.Errorf("the variants record the SSH server's URL: %s", vdata)
			}
			switch {
			case tt.info == RouteInfo{} && strings.Contains(string(data), `"route"`):
				t.Errorf("a direct variant records a route: %s", data)
			case tt.info != RouteInfo{} && !strings.Contains(string(data), `"route":{"kind":"`+tt.info.Kind+`"`):
				t.Errorf("no route recorded: %s", data)
			}
		})
	}
}

// TestRouteInfoJSON: a variant's route round-trips through the result's
// JSON, and a variant without one (direct, or a file written before the
// field) reads as the zero RouteInfo.
func TestRouteInfoJSON(t *testing.T) {
	v := Variant{ID: "pgbouncer local pool_mode=transaction", TLS: "off", Tunnel: "pgbouncer local pool_mode=transaction",
		Route: RouteInfo{Kind: RoutePgbouncer, Arg: "local", Params: "pool_mode=transaction"}}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	const want = `"route":{"kind":"pgbouncer","arg":"local","params":"pool_mode=transaction"}`
	if !strings.Contains(string(data), want) {
		t.Errorf("JSON %s, want %s", data, want)
	}
	var back Variant
	if err := json.Unmarshal(data, &back); err != nil || back != v {
		t.Errorf("read back %+v, %v; want %+v", back, err, v)
	}
	var old Variant
	if err := json.Unmarshal([]byte(`{"id":"ssh","tls":"off","via":"ssh"}`), &old); err != nil || old.Route != (RouteInfo{}) {
		t.Errorf("a variant without the field: %+v, %v", old, err)
	}
	if s := PgbouncerOf(v.Route.Route()); !s.Local || s.PoolMode != "transaction" || s.ServerTLS != "verify-full" {
		t.Errorf("PgbouncerOf the recorded route: %+v", s)
	}
}

// TestParsedTarget: New keeps the target parsed, the URL's credentials
// in it but not in Target; OnServer derives one compared lab server's
// spec without parsing again.
func TestParsedTarget(t *testing.T) {
	s, err := New(Spec{Target: "mongodb://app:hunter2@127.0.0.1:27017/bench", Filter: `{"_id": 1}`, Collection: "usertable"})
	if err != nil {
		t.Fatal(err)
	}
	pt := s.ParsedTarget()
	if pt.Engine() != "mongodb" || pt.Host != "127.0.0.1:27017" || pt.Redacted != s.Target || strings.Contains(s.Target, "hunter2") {
		t.Errorf("ParsedTarget() = %+v, Target %q", pt, s.Target)
	}
	u := pt.URL()
	if p, _ := u.User.Password(); p != "hunter2" {
		t.Errorf("ParsedTarget().URL() has password %q", p)
	}
	u.Host = "elsewhere:1" // a copy: the spec's stays
	if s.ParsedTarget().URL().Host != "127.0.0.1:27017" {
		t.Error("URL() returned the spec's own URL, not a copy")
	}
	if w := s.UserWorkload(); w.Database != "bench" || w.Collection != "usertable" {
		t.Errorf("the filter's namespace %s.%s, want bench.usertable (the URL's database)", w.Database, w.Collection)
	}
	if (Spec{Target: "builtin"}).ParsedTarget().Engine() != "" {
		t.Error("a Spec New did not make has a parsed target")
	}

	labs, err := New(Spec{Lab: "postgres:15,postgres:18", TLS: []string{"off", "1.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if vs := labs.Variants(); len(vs) != 4 || vs[0].Server != "postgres:15" || vs[3].Server != "postgres:18" {
		t.Errorf("variants of two lab servers: %+v", vs)
	}
	one := labs.OnServer("postgres:18")
	if one.Target != "lab:postgres:18" || one.Lab != "" || one.ParsedTarget().Lab != "postgres:18" || one.ParsedTarget().Engine() != "postgres" {
		t.Errorf("OnServer: target %q, lab %q, parsed %+v", one.Target, one.Lab, one.ParsedTarget())
	}
	if vs := one.Variants(); len(vs) != 2 || vs[0].Server != "" {
		t.Errorf("variants on one server: %+v", vs)
	}
}

// TestSourceAddr: New keeps an address given as --source parsed; auto and
// spread have none.
func TestSourceAddr(t *testing.T) {
	for _, tt := range []struct{ source, want, addr string }{
		{"", SourceAuto, ""},
		{SourceSpread, SourceSpread, ""},
		{"127.0.0.2", "127.0.0.2", "127.0.0.2"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1", "::ffff:127.0.0.1"},
	} {
		s, err := New(Spec{Source: tt.source})
		if err != nil {
			t.Fatal(err)
		}
		a := s.SourceAddr()
		if s.Source != tt.want || a.IsValid() != (tt.addr != "") || a.IsValid() && a.String() != tt.addr {
			t.Errorf("--source %q: Source %q, SourceAddr %v; want %q, %q", tt.source, s.Source, a, tt.want, tt.addr)
		}
	}
}
