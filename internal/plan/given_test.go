package plan

import (
	"strings"
	"testing"
	"time"
)

// TestNewRefusesGiven: a list given empty (an unset shell variable) is an
// error naming the field, not the default matrix; durations are bounded
// and a negative one names its field.
func TestNewRefusesGiven(t *testing.T) {
	lab := func(s Spec) Spec { s.Target = "lab:postgres"; return s }
	d := func(d time.Duration) *time.Duration { return &d }
	tests := []struct {
		spec Spec
		want string // "" when accepted
	}{
		{Spec{TLS: []string{}}, "tls: the list is empty (an unset variable?): give values such as tls off,1.3, or leave tls out for the default"},
		{Spec{Preset: PresetDefault, TLS: []string{}}, "tls: the list is empty"},
		{Spec{Keys: []string{}}, "keys: the list is empty"},
		{lab(Spec{Via: []string{}}), "via: the list is empty"},
		{Spec{Groups: []string{}}, "groups: the list is empty"},
		{Spec{Ciphers: []string{}}, "ciphers: the list is empty"},
		{Spec{Resume: []bool{}}, "resume: the list is empty"},
		{lab(Spec{Auth: []string{}}), "auth: the list is empty"},
		{lab(Spec{Negotiation: []string{}}), "negotiation: the list is empty"},
		{Spec{ClientCerts: []string{}}, "client_certs: the list is empty"},
		{Spec{Concurrency: []int{}}, "concurrency: the list is empty"},
		{Spec{PerConn: []int{}}, "per_conn: the list is empty"},
		{Spec{Experiments: []Experiment{Storm}, Clients: []int{}}, "clients: the list is empty"},
		{Spec{RTT: []time.Duration{}}, "rtt: the list is empty"},
		{lab(Spec{RTTVia: []string{}}), "rtt_via: the list is empty"},
		{Spec{PredictRTT: []time.Duration{}}, "predict_rtt: the list is empty"},
		{Spec{TLS: nil, Keys: nil}, ""}, // not given: the defaults
		{Spec{Duration: 2562047 * time.Hour}, "duration 2562047h is out of range: use at most 24h"},
		{Spec{Duration: 24*time.Hour + time.Second}, "duration 24h0m1s is out of range: use at most 24h"},
		{Spec{Duration: 24 * time.Hour}, ""},
		{Spec{Duration: -time.Second}, "duration -1s is negative: give a positive length of each trial"},
		{Spec{Timeout: -time.Second}, "timeout -1s is negative: give a positive bound on each operation"},
		{Spec{Timeout: 25 * time.Hour}, "timeout 25h is out of range: use at most 24h"},
		{Spec{Warmup: d(-time.Second)}, "warmup -1s is negative: give 0 for no warm-up or a positive duration"},
		{Spec{Warmup: d(48 * time.Hour)}, "warmup 48h is out of range: use at most 24h"},
		{Spec{Warmup: d(0)}, ""},
	}
	for _, tt := range tests {
		_, err := New(tt.spec)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("New(%+v): %v", tt.spec, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("New(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

// TestNewRefusesGivenZero: a field Given as 0, where 0 is what "not given"
// looks like, is refused with the default it would have had; not given,
// the same 0 is the default.
func TestNewRefusesGivenZero(t *testing.T) {
	give := func(s Spec, fields ...string) Spec { s.Give(fields...); return s }
	tests := []struct {
		spec Spec
		want string // "" when accepted
	}{
		{give(Spec{}, "trials"), "trials: 0 is out of range: give a positive value or leave trials out for the default (3)"},
		{give(Spec{}, "timeout"), "timeout: 0 is out of range: give a positive value or leave timeout out for the default (10s)"},
		{give(Spec{Rates: []float64{10}}, "max_inflight"), "max_inflight: 0 is out of range: give a positive value or leave max_inflight out for the default (1024)"},
		{give(Spec{}, "slo"), "slo: 0 is out of range: give a positive value or leave slo out for the default (50ms)"},
		{give(Spec{}, "duration"), "duration: 0 is no trial: give a positive duration or count COUNT"},
		{give(Spec{Count: 10}, "duration"), ""},
		{give(Spec{ClientCPUs: " "}, "client_cpus"), "client_cpus: the CPU list is empty"},
		{give(Spec{Trials: 2}, "trials"), ""},
		{Spec{}, ""}, // nothing given: the defaults
	}
	for _, tt := range tests {
		s, err := New(tt.spec)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("New(%+v): %v", tt.spec, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("New(%+v) = %v, want %q", tt.spec, err, tt.want)
		case err == nil && tt.spec.Trials == 0 && s.Trials != DefaultTrials:
			t.Errorf("New(%+v).Trials = %d, want the default %d", tt.spec, s.Trials, DefaultTrials)
		}
	}
}
