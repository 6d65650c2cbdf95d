package plan

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMongoDB(t *testing.T) {
	tests := []struct {
		url      string
		host     string
		tls      []string
		insecure bool
		ca       string
		err      string
	}{
		{url: "mongodb://u:p@127.0.0.1/admin", host: "127.0.0.1:27017", tls: []string{"off"}},
		{url: "mongodb://127.0.0.1:3717/?tls=true", host: "127.0.0.1:3717", tls: []string{"off", "auto"}},
		{url: "mongodb://127.0.0.1:3717/?ssl=true&tlsAllowInvalidHostnames=true&tlsCAFile=/root/ApsaraDB-CA-Chain.pem",
			host: "127.0.0.1:3717", tls: []string{"off", "auto"}, ca: "/root/ApsaraDB-CA-Chain.pem"},
		{url: "mongodb://127.0.0.1/?TLSInsecure=true", host: "127.0.0.1:27017", tls: []string{"off", "auto"}, insecure: true},
		{url: "mongodb://127.0.0.1/?tls=true&tlsAllowInvalidCertificates=true", host: "127.0.0.1:27017", tls: []string{"off", "auto"}, insecure: true},
		{url: "mongodb://127.0.0.1/?tls=true&tlsCertificateKeyFile=/c.pem&authMechanism=MONGODB-X509", host: "127.0.0.1:27017", tls: []string{"auto"}},
		{url: "mongodb://127.0.0.1/?tls=false&tlsCAFile=/x.pem", host: "127.0.0.1:27017", tls: []string{"off"}},
		{url: "mongodb://127.0.0.1/?tls=yes", err: "tls=yes: use true or false"},
		{url: "mongodb://127.0.0.1/?tls=true&ssl=false", err: "disagree"},
		{url: "mongodb://127.0.0.1/?tls=true&tlsCertificateFile=/c.pem", err: "in one PEM file as tlsCertificateKeyFile="},
		{url: "mongodb://root:secret@a:3717,b:3717,c:3717/admin?replicaSet=mgset", err: "lists 3 hosts"},
		{url: "mongodb+srv://root:secret@cluster0.example.net/", err: "mongodb+srv:// finds its hosts by DNS"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.url, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error shows the password: %v", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if got.Engine() != "mongodb" || got.Host != tc.host || !slices.Equal(got.DefaultTLS, tc.tls) || got.Insecure != tc.insecure || got.CAFile != tc.ca {
			t.Errorf("%s: %+v", tc.url, got)
		}
	}
}

func TestMongoDBSpec(t *testing.T) {
	s, err := New(Spec{Target: "mongodb://u:secret@127.0.0.1/?tls=true&tlsCAFile=/ca.pem", Experiments: []Experiment{Pool}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload != "find-one-id" || s.Tables != 1 || s.Rows != DefaultRows || s.QueryMode != "" || s.CAFile != "/ca.pem" || strings.Contains(s.Target, "secret") {
		t.Errorf("spec %+v", s)
	}
	if s, err := New(Spec{Target: "mongodb://127.0.0.1/"}); err != nil || s.Workload != WorkloadPing || s.Rows != 0 {
		t.Errorf("connect on a URL: %v, workload %q, rows %d: want a ping, no data", err, s.Workload, s.Rows)
	}
	if s, err := New(Spec{Target: "mongodb://127.0.0.1/?tls=true&tlsCAFile=/ca.pem", CAFile: "/mine.pem"}); err != nil || s.CAFile != "/mine.pem" {
		t.Errorf("ca_file beside tlsCAFile: %v, %q: ca_file wins", err, s.CAFile)
	}
	tests := []struct {
		spec Spec
		err  string
	}{
		{Spec{Target: "mongodb://127.0.0.1/", Workload: "point-select"}, `workload "point-select"`},
		{Spec{Target: "mongodb://127.0.0.1/", QueryMode: "simple"}, "query_mode applies to SQL databases only"},
		{Spec{Lab: "mongodb", Preset: "mysql-seed"}, `preset "mysql-seed"`},
		{Spec{Lab: "postgres", Preset: PresetMongoDBSeed}, "replays a MongoDB study"},
		{Spec{Lab: "mongodb", Preset: PresetMongoDBSeed, Concurrency: []int{4}}, "one client at a time"},
		{Spec{Lab: "mongodb", Preset: PresetMongoDBSeed, Workload: "stream"}, "leave workload out"},
		{Spec{Lab: "mongodb", Preset: PresetMongoDBSeed, Experiments: []Experiment{Pool}}, "runs its own experiments"},
		{Spec{Lab: "mongodb", Experiments: []Experiment{NewClient}}, "unknown experiment"},
	}
	for _, tc := range tests {
		if _, err := New(tc.spec); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.err)
		}
	}
}

// TestMongoDBPreset: the preset's own defaults, the seed's, and what the
// user typed kept.
func TestMongoDBPreset(t *testing.T) {
	s, err := New(Spec{Lab: "mongodb", Preset: PresetMongoDBSeed, Experiments: []Experiment{Connect, Pool}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Experiments, []Experiment{Connect, NewClient, ReusedClient}) || s.Workload != "find-one" ||
		s.Count*int64(s.Trials) != 5000 || s.Duration != MaxCountDuration || !slices.Equal(s.TLS, []string{"off", "auto"}) {
		t.Errorf("preset spec %+v", s)
	}
	var ids []string
	for _, v := range s.Variants() {
		ids = append(ids, v.ID)
	}
	if !slices.Equal(ids, []string{"plain", "tls-auto rsa2048"}) {
		t.Errorf("variants %v", ids)
	}
	s, err = New(Spec{Lab: "mongodb", Preset: PresetMongoDBSeed, Count: 50, Trials: 2, TLS: []string{"off", "1.2", "1.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Count != 50 || s.Trials != 2 || len(s.Variants()) != 3 {
		t.Errorf("preset with flags %+v", s)
	}
}
