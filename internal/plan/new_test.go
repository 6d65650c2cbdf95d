package plan

import (
	"strings"
	"testing"
	"time"
)

func TestNewRefusals(t *testing.T) {
	lab := func(s Spec) Spec { s.Target = "lab:postgres"; return s }
	tests := []struct {
		spec Spec
		want string // "" when accepted
	}{
		{Spec{Concurrency: []int{1, 1}}, "concurrency: 1 is given twice"},
		{Spec{TLS: []string{"1.3", "off", "1.3"}}, "tls: 1.3 is given twice"},
		{Spec{Keys: []string{"rsa2048", "ed25519", "rsa2048"}}, "keys: rsa2048 is given twice"},
		{Spec{RTT: []time.Duration{time.Millisecond, time.Millisecond}}, "rtt: 1ms is given twice"},
		{Spec{RTT: []time.Duration{0, 0}}, "rtt: 0s is given twice"},
		{Spec{PredictRTT: []time.Duration{44 * time.Millisecond, 44 * time.Millisecond}}, "predict_rtt: 44ms is given twice"},
		{lab(Spec{Auth: []string{"md5", "md5"}}), "auth: md5 is given twice"},
		{Spec{TLS: []string{"1.2"}, Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ecdhe_rsa_with_aes_128_gcm_sha256"}}, "ciphers: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is given twice"},
		{Spec{Resume: []bool{true, true}}, "resume: on is given twice"},
		{Spec{RTT: []time.Duration{MaxRTT}}, "timeout 10s is too short for rtt 10s: a connection takes about 8 round trips: give timeout 100s or more"},
		{Spec{RTT: []time.Duration{0, 1100 * time.Millisecond}}, "timeout 10s is too short for rtt 1.1s: a connection takes about 8 round trips: give timeout 11s or more"},
		{Spec{RTT: []time.Duration{200 * time.Millisecond}, Timeout: 1500 * time.Millisecond}, "timeout 1.5s is too short for rtt 200ms: a connection takes about 8 round trips: give timeout 2s or more"},
		{Spec{RTT: []time.Duration{MaxRTT}, Timeout: 100 * time.Second}, ""},
		{Spec{RTT: []time.Duration{0, 170 * time.Millisecond}}, ""},
		{Spec{RTT: []time.Duration{time.Second}}, ""},
		{Spec{CAFile: "ca.pem"}, "ca_file applies to URL targets: tlsbench verifies the servers it starts with the CA it made for them"},
		{lab(Spec{CAFile: "ca.pem"}), "ca_file applies to URL targets"},
		{Spec{Target: "https://127.0.0.1/", CAFile: "ca.pem"}, ""},
		{Spec{Insecure: true}, ""}, // harmless: the built-in server's CA is trusted either way
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

// TestNewKeepsSecrets: whatever New returns, accepted or not, holds no
// password outside SecretURL.
func TestNewKeepsSecrets(t *testing.T) {
	for _, spec := range []Spec{
		{Target: "https://admin:12#S3cr3t@127.0.0.1/"},
		{Target: "https://admin:S3cr3t@127.0.0.1/", Concurrency: []int{1, 1}},
		{Target: "https://admin:S3cr3t@127.0.0.1/", Via: []string{"ssh://u:S3cr3t@127.0.0.1:22", "vpn"}},
		{Target: "https://admin:S3cr3t@127.0.0.1/", Via: []string{"ssh://u:S3cr3t@127.0.0.1:22"}, Trials: -1},
		{Target: "host=localhost password=S3cr3t"},
	} {
		via := append([]string(nil), spec.Via...)
		s, err := New(spec)
		if err == nil {
			t.Errorf("New(%+v) accepted", spec)
		}
		if strings.Contains(s.Target+strings.Join(s.Via, " ")+err.Error(), secret) {
			t.Errorf("New(%+v) = %q %q, %v: the password is there", spec, s.Target, s.Via, err)
		}
		if strings.Join(via, " ") != strings.Join(spec.Via, " ") {
			t.Errorf("New changed the caller's Via: %q", spec.Via)
		}
	}
}
