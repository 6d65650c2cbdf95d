package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// connectOf builds a connect run at c=1 of the named variants of spec,
// from figures per variant, with the cases' drift and noise.
func connectOf(spec plan.Spec, figs map[string]figure) *result.Result {
	spec.Experiments = []plan.Experiment{plan.Connect}
	s, err := plan.New(spec)
	if err != nil {
		panic(err)
	}
	var ids []string
	for _, v := range s.Variants() {
		if _, ok := figs[v.ID]; ok {
			ids = append(ids, v.ID)
		}
	}
	return run(spec, ids, map[plan.Experiment]map[int]map[string]figure{plan.Connect: {1: figs}}, -1)
}

// like is connect figure f with other phases: its latency their sum, its
// rate what one connection at a time makes of it.
func like(f figure, phases ...phase) figure {
	f.phases = phases
	f.lat.Mean = 0
	for _, p := range phases {
		f.lat.Mean += p.ms
	}
	f.rate = 900 / f.lat.Mean
	return f
}

// pgPhases are PostgreSQL's connection phases with the given TLS and auth times.
func pgPhases(tls, auth float64) []phase {
	ps := []phase{{"tcp", 0.08, 1}}
	if tls > 0 {
		ps = append(ps, phase{"tls-negotiation", 0.2, 1}, phase{"tls-handshake", tls, 1})
	}
	return append(ps, phase{"auth", auth, 2}, phase{"query", 0.3, 1}, phase{"close", 0.02, 0})
}

func kinds(fs []Finding, k Kind) []string {
	var out []string
	for _, f := range fs {
		if f.Kind == k {
			out = append(out, f.Text)
		}
	}
	return out
}

// TestFindings checks what the findings of stored and built results say,
// and what they must not say.
func TestFindings(t *testing.T) {
	plain := connectFigures["plain"]
	tests := []struct {
		name string
		r    func(t *testing.T) *result.Result
		// want are substrings of some finding of a kind; never substrings
		// of no finding at all.
		want  map[Kind][]string
		never []string
		// recs is how many recommendations there must be (-1: any).
		recs int
	}{
		{
			name: "measured connect: keys, versions, resumption",
			r:    file("measured-connect.json"),
			want: map[Kind][]string{
				KindFinding: {
					"At c=1, a new connection costs 2.45 ms more with tls1.3 rsa2048 than plain (1 more round trip;",
					"91% fewer connections per second",
					"The cheapest TLS variant measured, tls1.2 ecdsa-p256, costs 0.670 ms more",
					"TLS 1.3 instead of 1.2 takes 1 round trip fewer per new connection: no measurable difference",
					"Server key ecdsa-p256 instead of rsa2048: 2.4× the connections per second with TLS 1.2, 2.1× with TLS 1.3",
					"Resuming TLS sessions instead of full handshakes: 4.8× the connections per second with TLS 1.2 rsa2048",
					"no measurable difference (+17.9% ±34.4) with TLS 1.3 ecdsa-p256",
				},
				KindRecommendation: {
					"Prefer TLS 1.3 to TLS 1.2: it saves 1 round trip",
					"Use ecdsa-p256 server keys rather than rsa2048",
					"Let clients resume TLS sessions",
					"Pool connections",
				},
			},
			never: []string{"tunnel", "HelloRetryRequest"},
			recs:  4,
		},
		{
			name: "measured postgres: HelloRetryRequest, RSA sizes, auth outweighs TLS",
			r:    file("measured-postgres-connect.json"),
			want: map[Kind][]string{
				KindFinding: {
					"costs 8.69 ms more with tls1.3 rsa4096 than plain (3 more round trips;",
					"HelloRetryRequest for P-256: the TLS handshake took 2 round trips",
					"Authentication takes 4.49 ms of a plain connection's 6.42 ms, more than TLS adds",
					"Server key rsa1024 instead of rsa2048: no measurable difference",
					"Server key rsa4096 instead of rsa2048: 35% fewer connections per second",
				},
				KindRecommendation: {"offer P-256 as their first key share", "Use rsa2048 server keys rather than rsa4096", "Pool connections"},
			},
			// 1024-bit RSA is never recommended, however fast.
			never: []string{"Use rsa1024", "resume"},
			recs:  3,
		},
		{
			name: "measured rtt: the model at 20ms and 60ms, measure a tunnel where pooling cannot help",
			r:    file("measured-rtt.json"),
			want: map[Kind][]string{
				KindFinding: {
					"At 20ms RTT (emulated), TLS added 42.5 ms with tls1.2 ecdsa-p256 (2 more round trips; predicted 40.8 ms) and 22.5 ms with tls1.3 ecdsa-p256",
					"within 4% of every setup time measured there",
					"At 60ms RTT, the round-trip model predicts that TLS adds 121 ms with tls1.2 ecdsa-p256",
					"31% more with ecdsa-p256 at 20ms RTT",
				},
				KindRecommendation: {
					"wherever the round trip between client and server exceeds 0.189 ms",
					"at 20ms RTT, TLS added up to 42.5 ms to every new connection here (tls1.2 ecdsa-p256). Measure whether paying it once per tunnel is cheaper for you (--via ssh,stunnel): this run measured no tunnel",
				},
			},
			recs: 3,
		},
		{
			name: "measured pool: nothing measurable, nothing to recommend",
			r:    file("measured-pool.json"),
			want: map[Kind][]string{
				KindFinding: {"On persistent connections (pool), TLS made no measurable difference in requests per second (tls1.3 rsa2048 against plain at c=1, c=2 and c=4"},
			},
			never: []string{"fewer", "more requests"},
			recs:  0,
		},
		{
			name: "ceilings",
			r:    file("measured-ceilings.json"),
			want: map[Kind][]string{
				KindFinding: {
					"With rsa2048 keys the server made at most 714.6 new TLS connections per second (tls1.2 rsa2048 c=2), 40% of the 1766 its 2 cores can sign for",
					"With ecdsa-p256 keys the server made at most 1277 new TLS connections per second (tls1.2 ecdsa-p256 c=2), 2.5% of the 51408",
					"signing alone does not limit new connections here",
				},
			},
			recs: -1,
		},
		{
			name: "one variant",
			r:    file("failed.json"),
			want: map[Kind][]string{
				KindCaveat: {"The run stopped on an error after 1 trial", "Only one variant was measured (plain): there is nothing to compare"},
			},
			recs: 0,
		},
		{
			name: "interrupted",
			r:    file("interrupted.json"),
			want: map[Kind][]string{KindCaveat: {"The run was interrupted after 7 of 12 trials"}},
			recs: -1,
		},
		{
			name: "empty",
			r:    func(*testing.T) *result.Result { return result.New() },
			want: map[Kind][]string{KindCaveat: {"No trial finished"}},
			recs: 0,
		},
		{
			name: "within the noise: no finding, no recommendation",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}}, map[string]figure{
					"plain":             like(plain, phase{"tcp", 0.041, 1}, phase{"request", 0.048, 1}, phase{"response", 0.004, 0}),
					"tls1.3 ecdsa-p256": like(plain, phase{"tcp", 0.041, 1}, phase{"tls-handshake", 0.0005, 1}, phase{"request", 0.048, 1}, phase{"response", 0.004, 0}),
				})
			},
			want:  map[Kind][]string{KindFinding: {"a new connection with tls1.3 ecdsa-p256 and one with plain: no measurable difference in connections per second ("}},
			never: []string{"fewer", "costs"},
			recs:  0,
		},
		{
			name: "refused resumption",
			r: func(*testing.T) *result.Result {
				r := connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Resume: []bool{false, true}}, map[string]figure{
					"plain":                 plain,
					"tls1.3 rsa2048":        connectFigures["tls1.3 rsa2048"],
					"tls1.3 rsa2048 resume": connectFigures["tls1.3 rsa2048"],
				})
				return r // no trial resumed anything
			},
			want: map[Kind][]string{
				KindFinding: {"The server did not resume TLS sessions (tls1.3 rsa2048 resume: 0.0% resumed)"},
			},
			never: []string{"Let clients resume"},
			recs:  1, // pooling only
		},
		{
			name: "no plain variant",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{TLS: []string{"1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"}}, map[string]figure{
					"tls1.3 rsa2048":    connectFigures["tls1.3 rsa2048"],
					"tls1.3 ecdsa-p256": connectFigures["tls1.3 ecdsa-p256"],
				})
			},
			want: map[Kind][]string{
				KindCaveat:         {"No plain variant was measured"},
				KindFinding:        {"Server key ecdsa-p256 instead of rsa2048: 3.0× the connections per second with TLS 1.3"},
				KindRecommendation: {"Use ecdsa-p256 server keys rather than rsa2048"},
			},
			never: []string{"than plain", "Pool connections"},
			recs:  1,
		},
		{
			name: "authentication outweighs TLS",
			r: func(*testing.T) *result.Result {
				return connectOf(plan.Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Auth: []string{"md5", "scram-sha-256"}}, map[string]figure{
					"plain md5":                    like(plain, pgPhases(0, 0.4)...),
					"plain scram-sha-256":          like(plain, pgPhases(0, 4.2)...),
					"tls1.3 rsa2048 md5":           like(plain, pgPhases(1.9, 0.4)...),
					"tls1.3 rsa2048 scram-sha-256": like(plain, pgPhases(1.9, 4.2)...),
				})
			},
			want: map[Kind][]string{
				KindFinding: {
					"Authentication with scram-sha-256 instead of md5: without TLS it takes 4.2",
					"costs 2.11 ms more with tls1.3 rsa2048 md5 than plain md5",
					"it costs a new connection more than TLS does",
				},
			},
			recs: -1,
		},
		{
			name: "an SSH tunnel against TLS",
			r: func(*testing.T) *result.Result {
				r := connectOf(plan.Spec{TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Via: []string{"direct", "ssh:aes128-ctr"}}, map[string]figure{
					"plain":          plain,
					"tls1.3 rsa2048": connectFigures["tls1.3 rsa2048"],
					"ssh aes128-ctr": like(plain, phase{"tcp", 0.09, 1}, phase{"request", 0.15, 1}, phase{"response", 0.004, 0}),
				})
				r.Tunnels = []result.Tunnel{{Via: "ssh aes128-ctr", Setup: []result.SetupPhase{{Name: "tcp", Duration: 100 * time.Microsecond}, {Name: "ssh-kex", Duration: 2 * time.Millisecond}}}}
				return r
			},
			want: map[Kind][]string{
				KindFinding:        {"Through ssh aes128-ctr, a new connection costs", "against tls1.3 rsa2048, 4.6× the connections per second", "(the tunnel itself was set up once, in 2.10 ms)"},
				KindRecommendation: {"carry them through a long-lived tunnel (ssh aes128-ctr): it made 4.6× the connections per second of tls1.3 rsa2048"},
			},
			never: []string{"this run measured no tunnel"},
			recs:  -1,
		},
		{
			name: "crypto primitives",
			r:    func(*testing.T) *result.Result { return cryptoRun() },
			want: map[Kind][]string{
				KindFinding: {
					"go1.26.8 signs per second on one core: ecdsa-p256 41250, rsa2048 1184, rsa4096 181.7",
					"can complete 227× the full handshakes",
					"encrypts on one core, 16384-byte records: aes-128-gcm 4350 MB/s",
				},
				KindRecommendation: {"give servers ecdsa-p256 keys rather than rsa4096: with go1.26.8 one core signs 227× as many"},
			},
			recs: 1,
		},
	}
	// The wording of every case is golden.
	var words bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Findings(tt.r(t))
			fmt.Fprintf(&words, "== %s\n", tt.name)
			for _, f := range fs {
				fmt.Fprintf(&words, "%s: %s\n", f.Kind, f.Text)
			}
			words.WriteString("\n")
			var all []string
			for _, f := range fs {
				all = append(all, string(f.Kind)+": "+f.Text)
			}
			dump := strings.Join(all, "\n")
			for k, subs := range tt.want {
				for _, s := range subs {
					if !strings.Contains(strings.Join(kinds(fs, k), "\n"), s) {
						t.Errorf("no %s says %q; findings:\n%s", k, s, dump)
					}
				}
			}
			for _, s := range tt.never {
				if strings.Contains(dump, s) {
					t.Errorf("a finding says %q; findings:\n%s", s, dump)
				}
			}
			if n := len(kinds(fs, KindRecommendation)); tt.recs >= 0 && n != tt.recs {
				t.Errorf("%d recommendations, want %d; findings:\n%s", n, tt.recs, dump)
			}
			// Caveats come first and recommendations last.
			rank := map[Kind]int{KindCaveat: 0, KindFinding: 1, KindRecommendation: 2}
			for i := 1; i < len(fs); i++ {
				if rank[fs[i].Kind] < rank[fs[i-1].Kind] {
					t.Errorf("%s after %s", fs[i].Kind, fs[i-1].Kind)
				}
			}
		})
	}
	golden(t, filepath.Join("testdata", "findings.golden"), words.Bytes())
}

// file reads a stored result of testdata.
func file(name string) func(t *testing.T) *result.Result {
	return func(t *testing.T) *result.Result {
		t.Helper()
		r, err := result.Read("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// cryptoRun is a `tlsbench crypto` result: primitives, no trials.
func cryptoRun() *result.Result {
	r := result.New()
	r.Tool = result.Tool{Name: "tlsbench", Version: "0.1.0", Go: "go1.26.8", TLSLibrary: "crypto/tls (Go 1.26.8)"}
	r.Env = result.Env{OS: "linux", Arch: "amd64", Kernel: "6.1.0-40-cloud-amd64", CPUModel: "AMD EPYC 7B13", Cores: 2, AESNI: true}
	r.Command = []string{"tlsbench", "crypto"}
	r.Started = started
	r.Spec = plan.Spec{Duration: time.Second}
	lib := "go1.26.8"
	for _, p := range []result.Primitive{
		{Kind: result.KindSign, Name: "rsa2048", PerCore: 1184.3, AllCores: 2301},
		{Kind: result.KindVerify, Name: "rsa2048", PerCore: 38120, AllCores: 74100},
		{Kind: result.KindSign, Name: "rsa4096", PerCore: 181.7, AllCores: 352},
		{Kind: result.KindVerify, Name: "rsa4096", PerCore: 10230, AllCores: 19900},
		{Kind: result.KindSign, Name: "ecdsa-p256", PerCore: 41250, AllCores: 80110},
		{Kind: result.KindVerify, Name: "ecdsa-p256", PerCore: 14020, AllCores: 27300},
		{Kind: result.KindKeyAgreement, Name: "x25519", PerCore: 21800, AllCores: 42500},
		{Kind: result.KindCipher, Name: "aes-128-gcm", Size: 1024, PerCore: 2.41e9, AllCores: 4.7e9},
		{Kind: result.KindCipher, Name: "aes-128-gcm", Size: 16384, PerCore: 4.35e9, AllCores: 8.5e9},
		{Kind: result.KindCipher, Name: "chacha20-poly1305", Size: 1024, PerCore: 0.91e9, AllCores: 1.8e9},
		{Kind: result.KindCipher, Name: "chacha20-poly1305", Size: 16384, PerCore: 1.32e9, AllCores: 2.6e9},
	} {
		p.Library = lib
		r.Crypto = append(r.Crypto, p)
	}
	r.Ended = started.Add(12 * time.Second)
	return r
}
