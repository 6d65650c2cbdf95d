package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRTTVia: --rtt-via crosses the RTTs with the way each is made, the
// link's variants named with "link" and paired with their own plain
// variant; what the link cannot carry is refused, naming the fix.
func TestRTTVia(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name string
		spec Spec
		ids  []string // the variants, or
		err  string   // the refusal
	}{
		{"default", Spec{Target: "lab:postgres", TLS: []string{"1.3"}, RTT: []time.Duration{ms(10)}},
			[]string{"tls1.3 rsa2048 rtt10ms"}, ""},
		{"both", Spec{Target: "lab:postgres", TLS: []string{"off", "1.3"}, RTT: []time.Duration{0, ms(44)}, RTTVia: []string{"dialer", "link"}},
			[]string{"plain", "tls1.3 rsa2048", "plain link", "tls1.3 rsa2048 link",
				"plain rtt44ms", "tls1.3 rsa2048 rtt44ms", "plain rtt44ms link", "tls1.3 rsa2048 rtt44ms link"}, ""},
		{"link alone", Spec{Target: "builtin", TLS: []string{"1.3"}, RTT: []time.Duration{ms(10)}, RTTVia: []string{"link"}},
			[]string{"tls1.3 rsa2048 rtt10ms link"}, ""},
		{"mariadb", Spec{Target: "lab:mariadb", TLS: []string{"1.3"}, RTTVia: []string{"link"}}, []string{"tls1.3 rsa2048 link"}, ""},
		{"unknown", Spec{Target: "lab:postgres", RTTVia: []string{"netem"}}, nil, "rtt_via netem: unknown way: use dialer"},
		{"secret-looking", Spec{Target: "lab:postgres", RTTVia: []string{"a:b@c"}}, nil, "rtt_via: unknown way"},
		{"twice", Spec{Target: "lab:postgres", RTTVia: []string{"link", "link"}}, nil, "rtt_via"},
		{"URL", Spec{Target: "postgres://u@db:5432/app", RTTVia: []string{"link"}}, nil, "rtt_via link puts the server behind a delay link tlsbench builds"},
		{"mongodb", Spec{Target: "lab:mongodb", RTTVia: []string{"link"}}, nil, "rtt_via link is built for the lab PostgreSQL, MariaDB and Redis"},
		{"two labs", Spec{Target: "lab:postgres:15,postgres:18", RTTVia: []string{"link"}}, nil, "rtt_via link is built for one lab server"},
		{"source", Spec{Target: "lab:postgres", Source: "127.0.1.5", RTTVia: []string{"link"}}, nil, "rtt_via link with source set to an address"},
		{"tunnel", Spec{Target: "lab:postgres", Via: []string{"direct", "ssh"}, RTTVia: []string{"link"}}, nil, "rtt_via link with via ssh: the link carries direct connections only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("New: %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "a:b@c") {
					t.Errorf("the error echoes what may be a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, v := range s.Variants() {
				ids = append(ids, v.ID)
				if (v.RTTVia == RTTViaLink) != strings.HasSuffix(v.ID, " link") {
					t.Errorf("%s: RTTVia %q", v.ID, v.RTTVia)
				}
			}
			if !slices.Equal(ids, tt.ids) {
				t.Errorf("variants %q, want %q", ids, tt.ids)
			}
		})
	}
}
