package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClientVariants: --client crosses the matrix, client first in the
// IDs when a stack other than Go's is in the run, each client's plain
// variant its baseline, Go alone (given or not) as today.
func TestClientVariants(t *testing.T) {
	pg := func(s Spec) Spec {
		s.Target, s.Experiments = "lab:postgres", []Experiment{Connect}
		if s.TLS == nil {
			s.TLS = []string{"off", "1.3"}
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		spec    Spec
		want    []string // IDs, * for a baseline
		clients []string // Variant.Client of each
		stacks  []string // Spec.ClientStacks as New resolved it
	}{
		{"Go alone by default", pg(Spec{}), []string{"*plain", "tls1.3 rsa2048"}, []string{"", ""}, nil},
		{"Go alone given", pg(Spec{ClientStacks: []string{"go"}}), []string{"*plain", "tls1.3 rsa2048"}, []string{"", ""}, []string{"go"}},
		{"go and psycopg", pg(Spec{ClientStacks: []string{"go", "psycopg"}}),
			[]string{"*go plain", "go tls1.3 rsa2048", "*psycopg plain", "psycopg tls1.3 rsa2048"},
			[]string{"", "", "psycopg", "psycopg"}, []string{"go", "psycopg"}},
		{"aliases resolve, order kept", pg(Spec{ClientStacks: []string{"JDBC", "python", "go"}}),
			[]string{"*pgjdbc plain", "pgjdbc tls1.3 rsa2048", "*psycopg plain", "psycopg tls1.3 rsa2048", "*go plain", "go tls1.3 rsa2048"},
			[]string{"pgjdbc", "pgjdbc", "psycopg", "psycopg", "", ""}, []string{"pgjdbc", "psycopg", "go"}},
		{"no plain: each client's first", pg(Spec{TLS: []string{"1.2", "1.3"}, ClientStacks: []string{"node", "go"}}),
			[]string{"*node-postgres tls1.2 rsa2048", "node-postgres tls1.3 rsa2048", "*go tls1.2 rsa2048", "go tls1.3 rsa2048"},
			[]string{"node-postgres", "node-postgres", "", ""}, []string{"node-postgres", "go"}},
		{"a non-Go client alone", Spec{Target: "redis://127.0.0.1:6379", Experiments: []Experiment{Pool}, TLS: []string{"off"}, ClientStacks: []string{"java"}},
			[]string{"*jedis plain"}, []string{"jedis"}, []string{"jedis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var ids, clients []string
			for _, v := range s.Variants() {
				id := v.ID
				if v.Baseline {
					id = "*" + id
				}
				ids, clients = append(ids, id), append(clients, v.Client)
			}
			if strings.Join(ids, "|") != strings.Join(tc.want, "|") {
				t.Errorf("variants %q, want %q", ids, tc.want)
			}
			if strings.Join(clients, "|") != strings.Join(tc.clients, "|") {
				t.Errorf("clients %q, want %q", clients, tc.clients)
			}
			if strings.Join(s.ClientStacks, "|") != strings.Join(tc.stacks, "|") {
				t.Errorf("ClientStacks %q, want %q", s.ClientStacks, tc.stacks)
			}
		})
	}
}

// TestClientRefusals: an unknown client, one of another engine, one
// given twice, and what a stack other than Go's cannot do yet, each one
// line before the run.
func TestClientRefusals(t *testing.T) {
	pg := func(s Spec) Spec {
		if s.Target == "" {
			s.Target = "lab:postgres"
		}
		if s.Experiments == nil {
			s.Experiments = []Experiment{Connect}
		}
		if s.ClientStacks == nil {
			s.ClientStacks = []string{"go", "psycopg"}
		}
		return s
	}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{pg(Spec{ClientStacks: []string{"go", "hiredis-x"}}), `unknown client "hiredis-x" for postgres: use go, psycopg, pgjdbc, node-postgres, libpq`},
		{pg(Spec{ClientStacks: []string{"pymongo"}}), "client pymongo speaks mongodb, not postgres: use go, psycopg, pgjdbc, node-postgres, libpq"},
		{Spec{Target: "redis://127.0.0.1:6379", Experiments: []Experiment{Connect}, ClientStacks: []string{"jdbc"}}, `unknown client "jdbc" for redis: use go, redis-py, jedis, ioredis, hiredis`},
		{pg(Spec{ClientStacks: []string{"python", "psycopg"}}), "⟨client_stacks⟩: psycopg is given twice"},
		{pg(Spec{ClientStacks: []string{}}), "⟨client_stacks⟩: the list is empty (an unset variable?): give values such as ⟨client_stacks⟩ go,psycopg, or leave ⟨client_stacks⟩ out for the default"},
		{pg(Spec{Experiments: []Experiment{Stream}}), "not yet with ⟨client_stacks⟩ psycopg: the stream experiment (connect and pool only)"},
		{pg(Spec{Experiments: []Experiment{Storm}}), "not yet with ⟨client_stacks⟩ psycopg: the storm experiment (connect and pool only)"},
		{Spec{Target: "lab:mongodb", Preset: PresetMongoDBSeed, ClientStacks: []string{"go", "node"}}, "not yet with ⟨client_stacks⟩ node-mongodb: ⟨preset⟩ mongodb-seed (its new-client and reused-client loops run through go and pymongo only)"},
		{Spec{Target: "lab:mongodb", Preset: PresetMongoDBSeed, ClientStacks: []string{"mongodb-java"}}, "not yet with ⟨client_stacks⟩ mongodb-java: ⟨preset⟩ mongodb-seed (its new-client and reused-client loops run through go and pymongo only)"},
		{Spec{Target: "lab:mongodb", Experiments: []Experiment{Connect}, ClientStacks: []string{"pymongo"}, Preset: PresetDefault}, "not yet with ⟨client_stacks⟩ pymongo: ⟨preset⟩ default (Go's drivers only)"},
		{Spec{Target: "lab:mariadb", Experiments: []Experiment{Connect}, ClientStacks: []string{"go", "libmariadb"}},
			"client libmariadb runs pool only: sysbench 1.0.20 keeps a connection a thread and has no reconnect option; libmariadb's connect loop is ⟨client_stacks⟩ mysqlclient (MySQLdb over the same Debian libmariadb and OpenSSL)"},
		{Spec{Experiments: []Experiment{Pool}, ClientStacks: []string{"openssl"}},
			"client openssl runs connect only: openssl s_time opens a connection per handshake (-new) or resumes one (-reuse), and runs no workload on a pool; OpenSSL's pool is ⟨client_stacks⟩ curl (libcurl over the same OpenSSL 3)"},
		{pg(Spec{Via: []string{"direct", "ssh"}}), "not yet with ⟨client_stacks⟩ psycopg: ⟨via⟩ tunnels and poolers (direct connections only)"},
		{pg(Spec{Rates: []float64{100}}), "not yet with ⟨client_stacks⟩ psycopg: ⟨rates⟩ (closed loops only): the programs' protocol (clients/PROTOCOL.md) runs closed loops of workers, with no schedule of arrivals"},
		{pg(Spec{Rates: []float64{100}, ClientStacks: []string{"libpq"}}), "not yet with ⟨client_stacks⟩ libpq: ⟨rates⟩ (closed loops only): pgbench paces itself (--rate), but tlsbench does not drive its schedule or read its lateness yet"},
		{Spec{Target: "lab:redis", Experiments: []Experiment{Pool}, Rates: []float64{100}, ClientStacks: []string{"go", "hiredis"}},
			"not yet with ⟨client_stacks⟩ hiredis: ⟨rates⟩ (closed loops only): redis-benchmark cannot pace: each connection sends its next request as the last one's answer comes"},
		{Spec{Experiments: []Experiment{Connect}, Rates: []float64{100}, ClientStacks: []string{"curl"}},
			"not yet with ⟨client_stacks⟩ curl: ⟨rates⟩ (closed loops only): curl cannot pace: it starts a transfer whenever one of its --parallel slots is free"},
		{pg(Spec{PerConn: []int{1, 10}}), "not yet with ⟨client_stacks⟩ psycopg: ⟨per_conn⟩ above 1 (a stack reports each connection's time, not each operation's)"},
		{pg(Spec{TLS: []string{"1.2"}, Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}), "not yet with ⟨client_stacks⟩ psycopg: ⟨ciphers⟩ (the stack's own TLS 1.2 suites only)"},
		{pg(Spec{Target: "postgres://u@127.0.0.1/db?sslmode=require", Negotiation: []string{"postgres", "direct"}}), "not yet with ⟨client_stacks⟩ psycopg: ⟨negotiation⟩ direct (an SSLRequest first only)"},
		{pg(Spec{Source: "127.0.0.1"}), "not yet with ⟨client_stacks⟩ psycopg: ⟨source⟩ 127.0.0.1 (the stack picks its own source address)"},
		{pg(Spec{Workload: "read-only"}), "not yet with ⟨client_stacks⟩ psycopg: ⟨workload⟩ read-only (ping, point-select only)"},
		{Spec{Target: "redis://127.0.0.1:6379", Experiments: []Experiment{Pool}, ClientStacks: []string{"ioredis"}, Commands: []string{"SET k v"}},
			"not yet with ⟨client_stacks⟩ ioredis: your own workload (⟨commands⟩, ⟨filter⟩, ⟨method⟩, ⟨headers⟩, ⟨data⟩, ⟨paths⟩: the named workloads only)"},
	} {
		_, err := New(tc.spec)
		if err == nil || err.Error() != tc.want && (&Error{tc.want}).Error() != err.Error() {
			t.Errorf("%+v:\n got %v\nwant %s", tc.spec.ClientStacks, err, tc.want)
		}
		if _, ok := err.(*Error); err != nil && !ok {
			t.Errorf("%v is not a plan.Error (exit 2)", err)
		}
	}
	// What Go alone does is not refused; nor is an RTT for a stack (its
	// connections go through the relay).
	if _, err := New(pg(Spec{ClientStacks: []string{"go"}, RTT: []time.Duration{44 * time.Millisecond}})); err != nil {
		t.Errorf("go alone with --rtt: %v", err)
	}
	if _, err := New(pg(Spec{RTT: []time.Duration{0, 44 * time.Millisecond}, PredictRTT: []time.Duration{170 * time.Millisecond}})); err != nil {
		t.Errorf("psycopg with --rtt and --predict-rtt: %v", err)
	}
	// The MongoDB seed's loops run through pymongo, its find_one() with
	// no filter the stack's workload.
	s, err := New(Spec{Target: "lab:mongodb", Preset: PresetMongoDBSeed, ClientStacks: []string{"python", "go"}})
	if err != nil {
		t.Fatalf("--preset mongodb-seed --client python,go: %v", err)
	}
	if strings.Join(s.ClientStacks, "|") != "pymongo|go" || s.ClientWorkload() != "find-one" ||
		!slices.Equal(s.Experiments, []Experiment{Connect, NewClient, ReusedClient}) {
		t.Errorf("the seed through pymongo: stacks %q, workload %q, experiments %v", s.ClientStacks, s.ClientWorkload(), s.Experiments)
	}
}

func TestClientWorkload(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Target: "lab:postgres", Experiments: []Experiment{Pool}}, "point-select"},
		{Spec{Target: "postgres://u@127.0.0.1/db", Experiments: []Experiment{Connect}}, "ping"},
		{Spec{Target: "lab:redis", Experiments: []Experiment{Pool}}, "get"},
		{Spec{Target: "lab:mongodb", Experiments: []Experiment{Pool}}, "find-one-id"},
		{Spec{Experiments: []Experiment{Connect}}, "request"},
	} {
		s, err := New(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ClientWorkload(); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.spec.Target, s.Workload, got, tc.want)
		}
	}
}

func TestGroupLabelOf(t *testing.T) {
	for in, want := range map[string]string{"p256": "P-256", "secp256r1": "P-256", "prime256v1": "P-256", "X25519": "X25519",
		"x25519mlkem768": "X25519MLKEM768", "secp384r1": "P-384", "ffdhe2048": "ffdhe2048", "": ""} {
		if got := GroupLabelOf(in); got != want {
			t.Errorf("GroupLabelOf(%q) = %q, want %q", in, got, want)
		}
	}
}
