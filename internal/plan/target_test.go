package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// secret is the password of every case below: it must never come out.
const secret = "S3cr3t"

func TestParseTargetRefusals(t *testing.T) {
	tests := []struct {
		in   string
		want string // a fragment of the error; "" when accepted
		host string // Target.Host when accepted
	}{
		// Not URLs: say what it looks like, never echo it.
		{"host=localhost user=app password=S3cr3t dbname=app", "target is not a URL: it looks like a libpq key=value string: give postgres://user@host:port/db?sslmode=", ""},
		{"app:S3cr3t@tcp(127.0.0.1:3306)/bench", "target is not a URL: it looks like a go-sql-driver DSN: give mysql://user@host:port/db", ""},
		{"app:S3cr3t@/bench", "go-sql-driver DSN", ""},
		{"mysql://app:S3cr3t@tcp(127.0.0.1:3306)/bench", "target: the host part looks like a go-sql-driver DSN's net(addr): give mysql://user@host:port/db", ""},
		{"https://127.0.0.1/a@/b", "target: an '@' before '/' or 'name(' reads as a go-sql-driver DSN: percent-encode that '@' as %40", ""},
		{"127.0.0.1:5432", "target is not a URL: use http(s)://", ""},
		{"S3cr3t", "target is not a URL", ""},
		{"1pg://app:S3cr3t@127.0.0.1/", "target: the scheme does not parse", ""},
		{"ftp://x/", `unsupported target scheme "ftp"`, ""},
		// User info that net/url would cut short.
		{"https://admin:12#S3cr3t@127.0.0.1/", "percent-encode it as %23", ""},
		{"https://admin:12/S3cr3t@127.0.0.1/", "target: the user info does not parse: an '@' follows the host part: percent-encode '/', '?' and '@' in the password", ""},
		{"https://admin:12?S3cr3t@127.0.0.1/", "an '@' follows the host part", ""},
		{"https://admin/12:S3cr3t@127.0.0.1/", "an '@' follows the host part", ""},
		{"postgres://app@127.0.0.1:5432/db?password=S3cr3t@x", "an '@' follows the host part", ""},
		{"https://127.0.0.1/x?token=S3cr3t#frag", "a '#' starts a URL fragment", ""},
		{"https://ad min:S3cr3t@127.0.0.1/", "target: the user info does not parse: percent-encode", ""},
		{"https://admin:S3cr3t%zz@127.0.0.1/", "the user info does not parse", ""},
		{"https://127.0.0.1/%zzS3cr3t", "target: the path or query does not parse", ""},
		// Hosts and ports.
		{"postgres://[::1/app?password=S3cr3t", "target: the host part does not parse: an IPv6 address needs its closing ']'", ""},
		{"postgres:///app", "target has no host: give the host, e.g. postgres://127.0.0.1:5432/db", ""},
		{"postgres://app:S3cr3t@/app", "target has no host", ""},
		{"http://:8080/", "target has no host: give the host, e.g. http://127.0.0.1:8080/", ""},
		{"mysql://app:S3cr3t@:3306/bench", "target has no host: give the host, e.g. mysql://127.0.0.1:3306/db", ""},
		{"https://127.0.0.1:0/", "target: port 0 is out of range: use 1 to 65535", ""},
		{"https://127.0.0.1:65536/", "target: port 65536 is out of range", ""},
		{"redis://app:S3cr3t@127.0.0.1:99999999999999999999", "port 99999999999999999999 is out of range", ""},
		{"https://app:S3cr3t@127.0.0.1:https/", "target: the port is not a number: give HOST:PORT with a port from 1 to 65535", ""},
		{"postgres://app:S3cr3t@db1:5432,db2:5432/app", "target lists 2 hosts", ""},
		{"https://app:S3cr3t@bad!host/", "target: the host part does not parse: give a host name or an IP address", ""},
		// Unix sockets.
		{"postgres:///app?host=/var/run/postgresql&password=S3cr3t", "target: Unix sockets are not supported: tlsbench measures TCP connections: give the TCP host, e.g. postgres://127.0.0.1:5432/db (TLS never runs over a Unix socket anyway)", ""},
		{"postgres:///app?host=%2Fvar%2Frun%2Fpostgresql", "Unix sockets are not supported", ""},
		{"postgresql://%2Fvar%2Frun%2Fpostgresql/app", "Unix sockets are not supported", ""},
		{"postgres://app:S3cr3t@127.0.0.1/app?host=/tmp", "Unix sockets are not supported", ""},
		{"mysql://app:S3cr3t@unix(/var/run/mysqld/mysqld.sock)/bench", "Unix sockets are not supported", ""},
		// Accepted.
		{"postgres://app:p@ss:S3cr3t@127.0.0.1/db", "", "127.0.0.1:5432"},
		{"https://app:S3cr3t@127.0.0.1:8443/", "", "127.0.0.1:8443"},
		{"https://[::1]:8443/", "", "[::1]:8443"},
		{"https://[fe80::1%25lo]:8443/", "", "[fe80::1%lo]:8443"},
		{"https://127.0.0.1/users/@me", "", "127.0.0.1:443"},
		{"mysql://app:S3cr3t@db_1.example:3306/bench?tls=true", "", "db_1.example:3306"},
		{"redis://:S3cr3t@127.0.0.1:6379/0", "", "127.0.0.1:6379"},
		{"postgres://app@127.0.0.1:5432/db?sslmode=require&password=S3cr3t", "", "127.0.0.1:5432"},
		{"https://127.0.0.1:65535/", "", "127.0.0.1:65535"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("%s: %v is not a plan.Error", tt.in, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows the password: %v", tt.in, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: the error is not one line: %q", tt.in, err)
			}
		}
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got.Host != tt.host || strings.Contains(got.Redacted, secret) {
			t.Errorf("%s: host %q redacted %q, want host %q and no password", tt.in, got.Host, got.Redacted, tt.host)
		}
		// The CLI parses the recorded (redacted) target again.
		if again, err := ParseTarget(got.Redacted); err != nil || again.Host != got.Host || again.Redacted != got.Redacted {
			t.Errorf("%s: the redacted target %q parses as %+v, %v", tt.in, got.Redacted, again, err)
		}
	}
}

func TestRedactAny(t *testing.T) {
	tests := []struct{ in, want string }{
		{"host=localhost user=app password=S3cr3t dbname=app", "host=localhost user=app password=xxxxx dbname=app"},
		{"host=localhost password='a S3cr3t\\' b' dbname=app", "host=localhost password=xxxxx dbname=app"},
		{"host=localhost password=a\\ S3cr3t dbname=app", "host=localhost password=xxxxx dbname=app"},
		{"password = S3cr3t sslpassword=\"x S3cr3t\"", "password = xxxxx sslpassword=xxxxx"},
		{"host=h password='S3cr3t", "host=h password=xxxxx"},
		{"app:S3cr3t@tcp(127.0.0.1:3306)/bench", "app:xxxxx@tcp(127.0.0.1:3306)/bench"},
		{"app:S3c@r3t@tcp(127.0.0.1:3306)/bench?tls=true", "app:xxxxx@tcp(127.0.0.1:3306)/bench?tls=true"},
		{"postgres:///app?host=/var/run/postgresql&password=S3cr3t", "postgres:///app?host=/var/run/postgresql&password=xxxxx"},
		{"postgres://[::1/app?password=S3cr3t", "postgres://[::1/app?password=xxxxx"},
		{"postgres://u@h/db?PassWord=S3cr3t&sslmode=require&pass%77ord=S3cr3t", "postgres://u@h/db?PassWord=xxxxx&sslmode=require&pass%77ord=xxxxx"},
		{"https://admin:12#S3cr3t@127.0.0.1/", "https://admin:xxxxx@127.0.0.1/"},
		{"https://admin:1/2?3@S3cr3t#@127.0.0.1/x", "https://admin:xxxxx@127.0.0.1/x"},
		{"https://127.0.0.1/x?token=S3cr3t#S3cr3t", "https://127.0.0.1/x?token=xxxxx#xxxxx"},
		{"mongodb://u:S3cr3t@127.0.0.1/?authSource=admin&tls=true", "mongodb://u:xxxxx@127.0.0.1/?authSource=admin&tls=true"},
		{"ssh://u:S3cr3t@127.0.0.1:22?cipher=aes128-gcm@openssh.com", "ssh://u:xxxxx@127.0.0.1:22?cipher=aes128-gcm@openssh.com"},
		{"http://u:p@[::1", "http://u:xxxxx@[::1"},
		// Not secrets: unchanged.
		{"builtin", "builtin"},
		{"lab:postgres", "lab:postgres"},
		{"10s", "10s"},
		{"0,20ms,170ms", "0,20ms,170ms"},
		{"/tmp/tlsbench-20240101-120000.json", "/tmp/tlsbench-20240101-120000.json"},
		{"--tls", "--tls"},
		{"--auth=md5", "--auth=md5"},
		{"off,1.2,1.3", "off,1.2,1.3"},
		{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"ssh:aes128-gcm@openssh.com", "ssh:aes128-gcm@openssh.com"},
		{"direct,ssh:chacha20-poly1305@openssh.com,stunnel", "direct,ssh:chacha20-poly1305@openssh.com,stunnel"},
		{"ssh://bench@127.0.0.1:2222?cipher=aes256-gcm@openssh.com", "ssh://bench@127.0.0.1:2222?cipher=aes256-gcm@openssh.com"},
		{"scram-sha-256", "scram-sha-256"},
		{"user@example.com", "user@example.com"},
		{"https://127.0.0.1/users/@me?x=1", "https://127.0.0.1/users/@me?x=1"},
		// Ambiguous: "8443/users/" could be a password holding '/'.
		{"https://127.0.0.1:8443/users/@me?x=1", "https://127.0.0.1:xxxxx@me?x=1"},
		{"postgres://u@127.0.0.1/db?sslmode=require", "postgres://u@127.0.0.1/db?sslmode=require"},
		{"a word", "a word"},
		{"", ""},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		if got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := Redact(got); again != got {
			t.Errorf("Redact(Redact(%q)) = %q, want %q", tt.in, again, got)
		}
	}
}

func TestParseRouteRefusals(t *testing.T) {
	tests := []struct{ in, want, label string }{
		{"ssh://u:S3cr3t@127.0.0.1:22?cipher=aes128-gcm@openssh.com", "", "ssh aes128-gcm@openssh.com"},
		{"ssh://u@127.0.0.1:2222?cipher=chacha20-poly1305@openssh.com&known_hosts=/k", "", "ssh chacha20-poly1305@openssh.com"},
		{"ssh://u:S3c#r3t@127.0.0.1:22", "via: a '#' starts a URL fragment", ""},
		{"ssh://u:S3c/r3t@127.0.0.1:22", "via: the user info does not parse: an '@' follows the host part", ""},
		{"ssh://u:S3cr3t@:22", "via has no host: give the host, e.g. ssh://user@127.0.0.1:22", ""},
		{"ssh://u:S3cr3t@127.0.0.1:0", "via: port 0 is out of range", ""},
		{"ssh://u:S3cr3t@[::1", "via: the host part does not parse", ""},
		{"ssh:u:S3cr3t@127.0.0.1", "via: unknown SSH cipher: use one of", ""},
		{"u:S3cr3t@127.0.0.1", "via: unknown way", ""},
		{"vpn", "via vpn: unknown way", ""},
	}
	for _, tt := range tests {
		v, err := ParseRoute(tt.in)
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the password: %v", tt.in, err)
		}
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.want)
			}
			continue
		}
		if err != nil || v.Label() != tt.label {
			t.Errorf("%s: %q, %v, want label %q", tt.in, v.Label(), err, tt.label)
		}
	}
}

// TestDefaultTLS: without --tls a URL target compares plain with the TLS
// its URL asks for, TLS 1.2 with 1.3 where its port speaks only TLS, and
// runs plain alone where the URL asks for plaintext only; prepare uses
// the URL's own mode (OwnTLS).
func TestDefaultTLS(t *testing.T) {
	tests := []struct {
		target string
		tls    []string
		own    string
	}{
		{"postgres://u@127.0.0.1/db?sslmode=require", []string{"off", "auto"}, "auto"},
		{"postgres://u@127.0.0.1/db?sslmode=verify-full&sslrootcert=/ca.pem", []string{"off", "auto"}, "auto"},
		{"postgres://u@127.0.0.1/db?sslmode=verify-ca&sslrootcert=/ca.pem", []string{"off", "auto"}, "auto"},
		{"postgres://u@127.0.0.1/db?sslmode=prefer", []string{"off", "auto"}, "off"},
		{"postgres://u@127.0.0.1/db", []string{"off", "auto"}, "off"},
		{"postgres://u@127.0.0.1/db?sslmode=disable", []string{"off"}, "off"},
		{"mysql://u@127.0.0.1/db?tls=true", []string{"off", "auto"}, "auto"},
		{"mysql://u@127.0.0.1/db?tls=skip-verify", []string{"off", "auto"}, "auto"},
		{"mysql://u@127.0.0.1/db", []string{"off", "auto"}, "off"},
		{"mysql://u@127.0.0.1/db?tls=false", []string{"off"}, "off"},
		{"mongodb://127.0.0.1/?tls=true", []string{"off", "auto"}, "auto"},
		{"mongodb://127.0.0.1/", []string{"off"}, "off"},
		{"rediss://127.0.0.1:6380", []string{"1.2", "1.3"}, "auto"},
		{"redis://127.0.0.1", []string{"off"}, "off"},
		{"https://127.0.0.1:8443/", []string{"1.2", "1.3"}, "auto"},
		{"http://127.0.0.1:8080/", []string{"off"}, "off"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.target)
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if !slices.Equal(got.DefaultTLS, tc.tls) || got.OwnTLS != tc.own {
			t.Errorf("%s: default %v, own %q; want %v, %q", tc.target, got.DefaultTLS, got.OwnTLS, tc.tls, tc.own)
		}
		s, err := New(Spec{Target: tc.target, CAFile: "/ca.pem"})
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if !slices.Equal(s.TLS, tc.tls) || !s.TLSByDefault {
			t.Errorf("%s: spec tls %v, by default %v; want %v, true", tc.target, s.TLS, s.TLSByDefault, tc.tls)
		}
	}
	for _, s := range []Spec{{Target: "redis://127.0.0.1", TLS: []string{"off"}}, {Lab: "postgres"}, {Target: Builtin}} {
		if got, err := New(s); err != nil || got.TLSByDefault {
			t.Errorf("%+v: %v, by default %v: want false (given, or not a URL)", s, err, got.TLSByDefault)
		}
	}
}

// TestConnectPings: connect alone on a URL target pings (it needs no
// prepared data); a lab server keeps the seed studies' point select; pool
// and stream keep their workloads.
func TestConnectPings(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Target: "postgres://u@127.0.0.1/db?sslmode=require"}, WorkloadPing},
		{Spec{Target: "mysql://u@127.0.0.1/db"}, WorkloadPing},
		{Spec{Target: "redis://127.0.0.1"}, WorkloadPing},
		{Spec{Target: "mongodb://127.0.0.1/"}, WorkloadPing},
		{Spec{Target: "https://127.0.0.1/"}, "get"},
		{Spec{Lab: "postgres"}, "point-select"},
		{Spec{Lab: "redis"}, "get"},
		{Spec{Target: "postgres://u@127.0.0.1/db", Experiments: []Experiment{Pool}}, "point-select"},
		{Spec{Target: "redis://127.0.0.1", Experiments: []Experiment{Pool}}, "get"},
		{Spec{Target: "postgres://u@127.0.0.1/db", Experiments: []Experiment{Connect, Pool}}, "point-select"},
		{Spec{Target: "postgres://u@127.0.0.1/db", Workload: "read-only"}, "read-only"},
		{Spec{Target: "postgres://u@127.0.0.1/db", Experiments: []Experiment{Stream}}, "stream"},
	}
	for _, tc := range tests {
		s, err := New(tc.spec)
		if err != nil || s.Workload != tc.want {
			t.Errorf("%+v: %v, workload %q, want %q", tc.spec, err, s.Workload, tc.want)
		}
		if err == nil && s.Workload == WorkloadPing && (s.QueryMode != "" || s.Tables != 0 || s.Rows != 0) {
			t.Errorf("%+v: ping with query mode %q, %d tables of %d rows: it reads no data", tc.spec, s.QueryMode, s.Tables, s.Rows)
		}
	}
	if _, err := New(Spec{Target: "postgres://u@127.0.0.1/db", QueryMode: "simple"}); err == nil || !strings.Contains(err.Error(), "ping is one round trip") {
		t.Errorf("ping with a query mode: %v", err)
	}
}

// TestStreamTables: stream reads sbtest1 alone, so its data is one table
// unless --tables says otherwise; the other workloads keep sysbench's 8.
func TestStreamTables(t *testing.T) {
	for _, tt := range []struct {
		e      Experiment
		tables int
		want   int
	}{
		{Stream, 0, 1},
		{Stream, 3, 3},
		{Pool, 0, DefaultTables},
	} {
		s, err := New(Spec{Lab: "postgres", Experiments: []Experiment{tt.e}, Tables: tt.tables})
		if err != nil {
			t.Fatal(err)
		}
		if s.Tables != tt.want {
			t.Errorf("%s --tables %d: %d tables, want %d", tt.e, tt.tables, s.Tables, tt.want)
		}
	}
}
