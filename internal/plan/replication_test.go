package plan

import (
	"errors"
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
		{"galera rtt", Replication{Lab: "galera", RTT: time.Millisecond}, "rtt: not on a Galera cluster's group links yet"},
		{"galera resync", Replication{Lab: "galera", Resync: true}, "resync: no Galera state transfer"},
		{"galera client tls 1.2", Replication{Lab: "galera", TLS: []string{"off", "1.2"}, ClientTLS: true}, "client_tls: a Galera node's TLS 1.2 holds for its clients too"},
		{"galera client tls 1.3", Replication{Lab: "galera", TLS: []string{"off", "1.3"}, ClientTLS: true}, ""},
		{"redis", Replication{Lab: "redis", TLS: []string{"off", "1.2", "1.3"}}, ""},
		{"redis sync", Replication{Lab: "redis", Sync: []string{"on"}}, "sync: Redis replicates asynchronously only"},
		{"redis rtt", Replication{Lab: "redis", RTT: time.Millisecond}, "rtt: not on a Redis cluster's link yet"},
		{"redis resync", Replication{Lab: "redis", Resync: true}, "resync: no Redis full-sync figure yet"},
		{"bad tls", Replication{TLS: []string{"1.1"}}, `tls: "1.1" is no replication link: use off, 1.2 or 1.3`},
		{"bad key", Replication{Keys: []string{"rsa512"}}, `keys: unknown key type "rsa512"`},
		{"bad sync", Replication{Sync: []string{"remote_write"}}, `sync: "remote_write" is no commit mode`},
		{"twice", Replication{TLS: []string{"off", "off"}}, `"off" is given twice`},
		{"zero writers", Replication{givenFields: givenFields{"concurrency"}}, "concurrency: 0 writers is out of range"},
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
