package plan

import (
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://127.0.0.1:8443/", "https://127.0.0.1:8443/"},
		{"http://bench:s3cret@127.0.0.1/x", "http://bench:xxxxx@127.0.0.1/x"},
		{"postgres://u@127.0.0.1/db?sslmode=require&password=s3cret", "postgres://u@127.0.0.1/db?sslmode=require&password=xxxxx"},
		{"http://u:p@[::1", "http://u:xxxxx@[::1"},
		{"builtin", "builtin"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestVariants(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string // IDs; the first one marked * is the baseline
	}{
		{"default builtin", Spec{}, []string{"*plain", "tls1.2 rsa2048", "tls1.3 rsa2048"}},
		{"plain once whatever the keys", Spec{TLS: []string{"1.3", "off"}, Keys: []string{"rsa1024", "ecdsa-p256"}},
			[]string{"tls1.3 rsa1024", "tls1.3 ecdsa-p256", "*plain"}},
		{"no plain: the first is the baseline", Spec{TLS: []string{"1.2", "1.3"}, Resume: []bool{false, true}},
			[]string{"*tls1.2 rsa2048", "tls1.2 rsa2048 resume", "tls1.3 rsa2048", "tls1.3 rsa2048 resume"}},
		{"suites that fit the key only", Spec{TLS: []string{"1.2"}, Keys: []string{"rsa2048", "ecdsa-p256"},
			Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}},
			[]string{"*tls1.2 rsa2048 ECDHE_RSA_WITH_AES_128_GCM_SHA256", "tls1.2 ecdsa-p256 ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}},
		{"external https", Spec{Target: "https://127.0.0.1:8443/", TLS: []string{"auto", "1.3"}}, []string{"*tls-auto", "tls1.3"}},
		{"rtt 0 keeps the IDs", Spec{RTT: []time.Duration{0}}, []string{"*plain", "tls1.2 rsa2048", "tls1.3 rsa2048"}},
		{"rtt crossed, baseline of the first rtt", Spec{TLS: []string{"1.3", "off"}, RTT: []time.Duration{44 * time.Millisecond, 0, 1500 * time.Microsecond}},
			[]string{"tls1.3 rsa2048 rtt44ms", "*plain rtt44ms", "tls1.3 rsa2048", "plain", "tls1.3 rsa2048 rtt1.5ms", "plain rtt1.5ms"}},
		{"rtt with resume", Spec{TLS: []string{"off", "1.2"}, Resume: []bool{false, true}, RTT: []time.Duration{0, 500 * time.Microsecond}},
			[]string{"*plain", "tls1.2 rsa2048", "tls1.2 rsa2048 resume", "plain rtt500us", "tls1.2 rsa2048 rtt500us", "tls1.2 rsa2048 resume rtt500us"}},
		{"the seed's tunnel table", Spec{Target: "lab:mariadb", TLS: []string{"off", "1.2"}, Keys: []string{"rsa4096"},
			Via: []string{"direct", "ssh:aes128-cbc", "ssh:aes256-ctr", "stunnel"}},
			[]string{"*plain", "tls1.2 rsa4096", "ssh aes128-cbc", "ssh aes256-ctr", "stunnel rsa4096"}},
		{"tunnels only: the first is the baseline", Spec{Target: "lab:postgres", TLS: []string{"1.3"}, Auth: []string{"trust"},
			Via: []string{"ssh://bench:secret@127.0.0.1:22?cipher=aes128-ctr"}, RTT: []time.Duration{0, 44 * time.Millisecond}},
			[]string{"*ssh aes128-ctr trust", "ssh aes128-ctr trust rtt44ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range s.Variants() {
				id := v.ID
				if v.Baseline {
					id = "*" + id
				}
				got = append(got, id)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("variants %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Target: "ftp://x/"}, `unsupported target scheme "ftp"`},
		{Spec{TLS: []string{"1.4"}}, `tls: unknown mode "1.4"`},
		{Spec{TLS: []string{"1.3"}, Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}, "ciphers applies to TLS 1.2 only"},
		{Spec{TLS: []string{"1.2"}, Keys: []string{"rsa2048"}, Ciphers: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}, "no variant left"},
		{Spec{Target: "https://127.0.0.1/", Keys: []string{"rsa2048"}}, "keys applies to servers tlsbench starts"},
		{Spec{Target: "https://127.0.0.1/", CAFile: "ca.pem", Insecure: true}, "ca_file and insecure exclude each other"},
		{Spec{Concurrency: []int{0}}, "out of range"},
		{Spec{Trials: -1}, "trials"},
		{Spec{RTT: []time.Duration{-time.Millisecond}}, "rtt: -1ms is out of range: use 0 to 10s"},
		{Spec{RTT: []time.Duration{0, 11 * time.Second}}, "rtt: 11s is out of range: use 0 to 10s"},
		{Spec{PredictRTT: []time.Duration{0}}, "predict_rtt: 0s is out of range: use 1µs to 10s"},
		{Spec{PredictRTT: []time.Duration{44 * time.Millisecond, 11 * time.Second}}, "predict_rtt: 11s is out of range: use 1µs to 10s"},
		{Spec{Experiments: []Experiment{Pool}, PredictRTT: []time.Duration{time.Millisecond}}, "predict_rtt predicts connection setup: it needs the connect experiment"},
		{Spec{RTT: []time.Duration{20 * time.Millisecond}, PredictRTT: []time.Duration{time.Millisecond}}, "predict_rtt predicts from the bare link: add 0 to rtt"},
		{Spec{Via: []string{"vpn"}}, "via vpn: unknown way: use direct, ssh, ssh:CIPHER, ssh://user@host:port, stunnel, haproxy, openssh[:CIPHER], pgbouncer[:local] or wireguard"},
		{Spec{Via: []string{"ssh:aes256-cbc"}}, `unknown SSH cipher "aes256-cbc" (golang.org/x/crypto/ssh implements aes128-cbc only)`},
		{Spec{Via: []string{"ssh://u:pw@127.0.0.1?cypher=x"}}, `via ssh://u:xxxxx@127.0.0.1?cypher=x: unknown parameter "cypher"`},
		{Spec{Via: []string{"ssh", "ssh"}}, "via ssh: given twice"},
		{Spec{Target: "https://127.0.0.1/", Via: []string{"stunnel"}}, "via stunnel puts stunnel before a server tlsbench starts"},
		{Spec{Via: []string{"stunnel"}, RTT: []time.Duration{0, time.Millisecond}}, "measure stunnel at rtt 0"},
	}
	for _, tt := range tests {
		_, err := New(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

// TestViaRedacted keeps an SSH password out of the recorded Spec but
// available to the run.
func TestViaRedacted(t *testing.T) {
	s, err := New(Spec{Via: []string{"ssh://bench:hunter2@127.0.0.1:2222?cipher=aes256-ctr"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(s.Via, " "), "hunter2") {
		t.Errorf("Spec.Via holds the password: %q", s.Via)
	}
	rs := s.Routes()
	if len(rs) != 1 {
		t.Fatalf("Routes() = %+v, want the one entry", rs)
	}
	if pw, _ := rs[0].URL.User.Password(); pw != "hunter2" || rs[0].Cipher != "aes256-ctr" {
		t.Errorf("Routes()[0] = %+v, want the URL with its password", rs[0])
	}
}

func TestPredictRTT(t *testing.T) {
	s, err := New(Spec{RTT: []time.Duration{0, 20 * time.Millisecond}, PredictRTT: []time.Duration{time.Microsecond, 20 * time.Millisecond, MaxRTT}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PredictRTT) != 3 {
		t.Errorf("PredictRTT %v", s.PredictRTT)
	}
	if _, err := New(Spec{PredictRTT: []time.Duration{44 * time.Millisecond}}); err != nil {
		t.Errorf("predict_rtt without rtt: %v", err)
	}
}

func TestVariantRTT(t *testing.T) {
	s, err := New(Spec{TLS: []string{"off"}, RTT: []time.Duration{0, 44 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	vs := s.Variants()
	if len(vs) != 2 || vs[0].RTT != 0 || vs[1].RTT != 44*time.Millisecond || !vs[0].Baseline || vs[1].Baseline {
		t.Errorf("variants %+v", vs)
	}
}
