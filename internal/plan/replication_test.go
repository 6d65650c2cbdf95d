package plan

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewReplication(t *testing.T) {
	tests := []struct {
		name string
		r    Replication
		want string // "" when accepted
	}{
		{"defaults", Replication{}, ""},
		{"other lab", Replication{Lab: "mysql"}, `lab: no lab cluster of "mysql": use postgres, redis, mariadb, galera`},
		{"mariadb", Replication{Lab: "mariadb", TLS: []string{"off", "1.2", "1.3"}, RTT: 44 * time.Millisecond}, ""},
		{"mariadb sync", Replication{Lab: "mariadb", Sync: []string{"off", "on"}}, "sync: the MariaDB lab replica is asynchronous only"},
		{"mariadb resync", Replication{Lab: "mariadb", Resync: true}, "resync: no MariaDB resync figure"},
		{"galera", Replication{Lab: "galera", TLS: []string{"off", "1.2", "1.3"}}, ""},
		{"galera sync", Replication{Lab: "galera", Sync: []string{"on"}}, "sync: a Galera cluster commits one way"},
		{"galera rtt", Replication{Lab: "galera", RTT: time.Millisecond}, ""},
		{"galera resync", Replication{Lab: "galera", Resync: true}, ""},
		{"galera client tls 1.2", Replication{Lab: "galera", TLS: []string{"off", "1.2"}, ClientTLS: true}, "client_tls: a Galera node's TLS 1.2 holds for its clients too"},
		{"galera client tls 1.3", Replication{Lab: "galera", TLS: []string{"off", "1.3"}, ClientTLS: true}, ""},
		{"redis", Replication{Lab: "redis", TLS: []string{"off", "1.2", "1.3"}}, ""},
		{"postgres 18", Replication{Lab: "postgres:18"}, ""},
		{"redis version", Replication{Lab: "redis:7"}, "lab redis:7: only PostgreSQL comes in versions here, as postgres:15 or postgres:18"},
		{"postgres no version", Replication{Lab: "postgres:new"}, "lab postgres:new: only PostgreSQL comes in versions"},
		{"redis sync", Replication{Lab: "redis", Sync: []string{"on"}}, "sync: Redis replicates asynchronously only"},
		{"redis rtt", Replication{Lab: "redis", RTT: time.Millisecond}, ""},
		{"redis resync", Replication{Lab: "redis", Resync: true}, ""},
		{"bad tls", Replication{TLS: []string{"1.1"}}, `tls: "1.1" is no replication link: use off, 1.2 or 1.3`},
		{"bad key", Replication{Keys: []string{"rsa512"}}, `keys: unknown key type "rsa512"`},
		{"bad sync", Replication{Sync: []string{"remote_write"}}, `sync: "remote_write" is no commit mode`},
		{"twice", Replication{TLS: []string{"off", "off"}}, `"off" is given twice`},
		{"zero writers", Replication{Concurrency: []int{4, 0}}, "concurrency: 0 writers is out of range"},
		{"no writers", Replication{givenFields: givenFields{"concurrency"}}, "concurrency: give the writers, e.g. 4, or a list to sweep"},
		{"writers twice", Replication{Concurrency: []int{4, 1, 4}}, "concurrency: 4 is given twice"},
		{"writers swept", Replication{Concurrency: []int{1, 4, 16}}, ""},
		{"search", Replication{Knee: &Knee{From: 20, To: 1e6}}, ""},
		{"search range", Replication{Knee: &Knee{From: 500, To: 100}}, "rates 500..100: a search range goes up from above 0"},
		{"rates", Replication{Rates: []float64{100, 1000}}, ""},
		{"rate zero", Replication{Rates: []float64{0}}, "rates: 0 is out of range"},
		{"rate twice", Replication{Rates: []float64{100, 100}}, "rates: 100/s is given twice"},
		{"rates and search", Replication{Rates: []float64{100}, Knee: &Knee{From: 20, To: 1e6}}, "give fixed rates or a search"},
		{"lag slo alone", Replication{LagSLO: time.Second}, "lag_slo is the bound of a write-rate search: give rates auto"},
		{"lag slo at fixed rates", Replication{Rates: []float64{100}, LagSLO: time.Second}, "lag_slo is the bound of a write-rate search"},
		{"slo alone", Replication{SLO: time.Second, Sync: []string{"on"}}, "slo is the bound of a write-rate search"},
		{"slo async", Replication{Knee: &Knee{From: 20, To: 1e6}, SLO: time.Second}, "slo bounds a synchronous commit's p99: add sync on or remote_apply"},
		{"slo sync", Replication{Knee: &Knee{From: 20, To: 1e6}, SLO: time.Second, Sync: []string{"off", "on"}}, ""},
		{"negative lag slo", Replication{Knee: &Knee{From: 20, To: 1e6}, LagSLO: -time.Second}, "give the p99 to keep under"},
		{"zero trials", Replication{givenFields: givenFields{"trials"}}, "trials: 0: give at least 1 trial"},
		{"zero duration", Replication{givenFields: givenFields{"duration"}}, "duration: 0s is no time"},
		{"poll slower than beat", Replication{Heartbeat: 10 * time.Millisecond, LagPoll: 20 * time.Millisecond}, "lag_poll: 20ms is slower than the heartbeat"},
		{"rtt", Replication{RTT: time.Minute}, "rtt: 1m0s is out of range"},
		{"fine", Replication{TLS: []string{"1.2", "off"}, Sync: []string{"off", "remote_apply"}, RTT: 44 * time.Millisecond}, ""},
		{"own cluster", Replication{Primary: "postgres://u:pw@h1/db", Replica: "postgres://u:pw@h2/db"}, ""},
		{"own without replica", Replication{Primary: "postgres://u@h1/db"}, "replica: give the replica's URL"},
		{"own replica alone", Replication{Replica: "postgres://u@h2/db"}, "give the primary's URL too"},
		{"own with a link", Replication{Primary: "postgres://u@h1/db", Replica: "postgres://u@h2/db", TLS: []string{"1.3"}, givenFields: givenFields{"tls"}}, "tls changes a lab cluster's link"},
		{"own redis", Replication{Primary: "redis://u@h1/0", Replica: "redis://u@h2/0"}, "PostgreSQL only so far"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReplication(tt.r)
			var pe *Error
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			case err != nil && !errors.As(err, &pe):
				t.Errorf("error %v is not a plan.Error", err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

// TestReplicationSearchDefaults: a write-rate search bounds the lag by
// 1 s and, with a synchronous mode, the commit p99 by connect's default
// SLO; its trials are short and one per step, unless given.
func TestReplicationSearchDefaults(t *testing.T) {
	for _, tt := range []struct {
		raw      Replication
		lag, slo time.Duration
		d        time.Duration
		trials   int
	}{
		{Replication{Knee: &Knee{From: 20, To: 1e6}}, DefaultLagSLO, 0, DefaultKneeDuration, 1},
		{Replication{Knee: &Knee{From: 20, To: 1e6}, Sync: []string{"off", "remote_apply"}}, DefaultLagSLO, DefaultSLO, DefaultKneeDuration, 1},
		{Replication{Knee: &Knee{From: 20, To: 1e6}, LagSLO: 200 * time.Millisecond, Duration: 4 * time.Second, Trials: 2}, 200 * time.Millisecond, 0, 4 * time.Second, 2},
	} {
		r, err := NewReplication(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		if r.LagSLO != tt.lag || r.SLO != tt.slo || r.Duration != tt.d || r.Trials != tt.trials || r.Knee.Factor != KneeFactor {
			t.Errorf("%+v: lag slo %v, slo %v, -d %v, %d trials, factor %v; want %v, %v, %v, %d, %v", tt.raw, r.LagSLO, r.SLO, r.Duration, r.Trials, r.Knee.Factor, tt.lag, tt.slo, tt.d, tt.trials, KneeFactor)
		}
		for _, v := range r.Variants() {
			if want := map[bool]time.Duration{true: 0, false: tt.slo}[v.Sync == "off"]; r.SLOFor(v) != want { // an asynchronous commit is not bounded
				t.Errorf("%s: commit bound %v, want %v", v.ID, r.SLOFor(v), want)
			}
		}
	}
}

// TestReplicationConcurrencyJSON: a plan of a tlsbench before -c took a
// list (one number) reads as a list of one.
func TestReplicationConcurrencyJSON(t *testing.T) {
	for in, want := range map[string][]int{`{"concurrency": 4}`: {4}, `{"concurrency": [1, 4, 16]}`: {1, 4, 16}, `{"lab": "redis"}`: nil} {
		var r Replication
		if err := json.Unmarshal([]byte(in), &r); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !slices.Equal(r.Concurrency, want) {
			t.Errorf("%s: concurrency %v, want %v", in, r.Concurrency, want)
		}
	}
	var r Replication
	if err := json.Unmarshal([]byte(`{"lab": "redis", "concurrency": "x"}`), &r); err == nil {
		t.Error("a concurrency of text was read without an error")
	}
}

// TestReplicationVariants: per commit mode, the plain link first (its
// baseline), then each TLS link once per key; the key named only when
// there are several.
func TestReplicationVariants(t *testing.T) {
	r, err := NewReplication(Replication{TLS: []string{"1.3", "off"}, Keys: []string{"rsa2048", "ecdsa-p256"}, Sync: []string{"off", "on"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range r.Variants() {
		s := v.ID
		if v.Baseline {
			s += " (baseline)"
		}
		got = append(got, s)
	}
	want := "plain async (baseline)|tls1.3 rsa2048 async|tls1.3 ecdsa-p256 async|plain sync=on (baseline)|tls1.3 rsa2048 sync=on|tls1.3 ecdsa-p256 sync=on"
	if strings.Join(got, "|") != want {
		t.Errorf("variants %s, want %s", strings.Join(got, "|"), want)
	}
	r, _ = NewReplication(Replication{})
	if vs := r.Variants(); len(vs) != 2 || vs[1].ID != "tls1.3 async" || vs[1].Key != DefaultKey {
		t.Errorf("default variants %+v, want plain async and tls1.3 async with %s", vs, DefaultKey)
	}
	// Galera's one commit mode names its variants; a plan read back
	// from a result validates again.
	r, err = NewReplication(Replication{Lab: "galera"})
	if err != nil {
		t.Fatal(err)
	}
	if vs := r.Variants(); len(vs) != 2 || vs[0].ID != "plain galera" || vs[1].ID != "tls1.3 galera" || vs[1].Sync != GaleraSync {
		t.Errorf("galera variants %+v, want plain galera and tls1.3 galera", vs)
	}
	if _, err := NewReplication(r); err != nil {
		t.Errorf("a galera plan again: %v", err)
	}
}

// TestReplicationOwnClusterRedacted: the plan of the user's cluster keeps
// its URLs redacted; the secret ones only URLs returns; one variant.
func TestReplicationOwnClusterRedacted(t *testing.T) {
	r, err := NewReplication(Replication{Primary: "postgres://u:s3cret@h1/db", Replica: "postgres://u:s3cret@h2/db"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Primary+r.Replica, "s3cret") {
		t.Errorf("the plan keeps the password: %s %s", r.Primary, r.Replica)
	}
	if p, q := r.URLs(); !strings.Contains(p, "s3cret") || !strings.Contains(q, "s3cret") {
		t.Errorf("URLs lost the password: %s %s", p, q)
	}
	if vs := r.Variants(); len(vs) != 1 || !vs[0].Baseline || vs[0].TLS != "" || r.Trials != DefaultTrials {
		t.Errorf("variants %+v, trials %d: want one, as configured, and the default trials", vs, r.Trials)
	}
}
