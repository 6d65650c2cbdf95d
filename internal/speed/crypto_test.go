package speed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/speed"
)

// figures indexes primitives by library, kind, name and size.
type figures map[string]result.Primitive

func index(ps []result.Primitive) figures {
	f := figures{}
	for _, p := range ps {
		f[key(p.Library, p.Kind, p.Name, p.Size)] = p
	}
	return f
}

func key(lib, kind, name string, size int) string {
	return fmt.Sprintf("%s/%s/%s/%d", lib, kind, name, size)
}

// options are the options of a crypto run, as plan.NewCrypto makes them.
func options(t *testing.T, raw plan.Crypto) plan.Crypto {
	t.Helper()
	o, err := plan.NewCrypto(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestCryptoGo measures every Go primitive briefly and checks what must
// hold whatever the machine: every row there with positive figures, and
// the orderings no CPU reverses.
func TestCryptoGo(t *testing.T) {
	labtest.Slow(t)
	ps, err := speed.MeasureGo(context.Background(), options(t, plan.Crypto{Duration: 30 * time.Millisecond}), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := index(ps)
	go_ := speed.GoLibrary()
	var want []string
	for _, k := range plan.KeyTypes {
		want = append(want, key(go_, result.KindSign, k, 0), key(go_, result.KindVerify, k, 0))
	}
	for _, k := range plan.KeyAgreements {
		want = append(want, key(go_, result.KindKeyAgreement, k, 0), key(go_, result.KindKexClient, k, 0), key(go_, result.KindKexServer, k, 0))
	}
	want = append(want, key(go_, result.KindKeyGen, "mlkem768", 0), key(go_, result.KindEncapsulate, "mlkem768", 0), key(go_, result.KindDecapsulate, "mlkem768", 0),
		key(go_, result.KindKexClient, "x25519mlkem768", 0), key(go_, result.KindKexServer, "x25519mlkem768", 0))
	for _, c := range plan.RecordCiphers {
		for _, size := range plan.RecordSizes {
			want = append(want, key(go_, result.KindCipher, c, size))
		}
	}
	if len(ps) != len(want) {
		t.Errorf("%d primitives, want %d", len(ps), len(want))
	}
	for _, k := range want {
		p, ok := f[k]
		switch {
		case !ok:
			t.Errorf("no figure %s", k)
		case p.PerCore <= 0 || p.AllCores <= 0:
			t.Errorf("%s: per core %g, all cores %g: want positive figures", k, p.PerCore, p.AllCores)
		}
	}
	sign := func(k string) float64 { return f[key(go_, result.KindSign, k, 0)].PerCore }
	if !(sign("rsa1024") > sign("rsa2048") && sign("rsa2048") > sign("rsa4096")) {
		t.Errorf("RSA signatures/s: 1024 %.0f, 2048 %.0f, 4096 %.0f: want falling with key size", sign("rsa1024"), sign("rsa2048"), sign("rsa4096"))
	}
	if v := f[key(go_, result.KindVerify, "rsa2048", 0)].PerCore; v <= sign("rsa2048") {
		t.Errorf("rsa2048 verify %.0f/s <= sign %.0f/s: want verify faster", v, sign("rsa2048"))
	}
	// The key shares each side sends: 32-byte X25519 keys, uncompressed
	// P-256 points, and the hybrid's ML-KEM-768 encapsulation key (1184)
	// or ciphertext (1088) followed by an X25519 key.
	for _, tt := range []struct {
		name           string
		client, server int
	}{{"x25519", 32, 32}, {"ecdh-p256", 65, 65}, {"x25519mlkem768", 1216, 1120}} {
		c, s := f[key(go_, result.KindKexClient, tt.name, 0)], f[key(go_, result.KindKexServer, tt.name, 0)]
		if c.KeyShare != tt.client || s.KeyShare != tt.server {
			t.Errorf("%s key shares: client %d, server %d bytes; want %d, %d", tt.name, c.KeyShare, s.KeyShare, tt.client, tt.server)
		}
	}
	// Which group is faster is a figure, not an invariant: the hybrid's
	// server side is only about 1.7x X25519's work, which a loaded machine
	// can hide in one short measurement (it did). Each side was measured.
	for _, kind := range []string{result.KindKexClient, result.KindKexServer} {
		for _, g := range []string{"x25519", "ecdh-p256", "x25519mlkem768"} {
			if r := f[key(go_, kind, g, 0)].PerCore; !(r > 0) {
				t.Errorf("%s %s: %v/s, want a rate", kind, g, r)
			}
		}
	}
	for _, c := range plan.RecordCiphers {
		small, large := f[key(go_, result.KindCipher, c, 16)].PerCore, f[key(go_, result.KindCipher, c, 16384)].PerCore
		if large <= small {
			t.Errorf("%s: %.0f B/s at 16384 bytes <= %.0f B/s at 16: want larger records cheaper per byte", c, large, small)
		}
	}
}

// TestCryptoCount checks that a count bounds a figure: with a bound of a
// few operations and a long duration, measuring ends at once.
func TestCryptoCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ps, err := speed.MeasureGo(ctx, options(t, plan.Crypto{Duration: 5 * time.Minute, Count: 3, Only: []string{"ed25519", "aes-128-gcm"}, Sizes: []int{64}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d figures, want ed25519 sign and verify and aes-128-gcm at 64 bytes: %+v", len(ps), ps)
	}
	for _, p := range ps {
		if p.PerCore <= 0 || p.AllCores <= 0 {
			t.Errorf("%+v: want positive figures", p)
		}
	}
}

// TestRun checks the order of a crypto run: Go's figures, then OpenSSL's,
// each announced to the progress display, and Go's figures kept when
// openssl fails.
func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openssl")
	script := `#!/bin/sh
case "$1" in
version) echo "OpenSSL 3.0.19 27 Jan 2026";;
*) echo "speed: out of luck" >&2; exit 1;;
esac
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ossl, err := speed.FindOpenSSL(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, plan.Crypto{Duration: time.Millisecond, Only: []string{"x25519"}})
	for _, tt := range []struct {
		ossl   *speed.OpenSSL
		stages []string
		err    string
	}{
		{nil, []string{"go"}, ""},
		{ossl, []string{"go", "openssl speed"}, "out of luck"},
	} {
		var stages []string
		var done int
		ps, notes, err := speed.Run(ctx, o, tt.ossl, func(stage string) func(int, int) {
			stages = append(stages, stage)
			return func(d, _ int) { done = d }
		})
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("error %v, want %q", err, tt.err)
		}
		if !slices.Equal(stages, tt.stages) || done == 0 {
			t.Errorf("stages %q (last done %d), want %q", stages, done, tt.stages)
		}
		if len(ps) != 3 || ps[0].Library != speed.GoLibrary() || len(notes) < len(speed.GoCryptoNotes) || !slices.Equal(notes[:len(speed.GoCryptoNotes)], speed.GoCryptoNotes) {
			t.Errorf("figures %+v, notes %q: want Go's x25519 and Go's notes first", ps, notes)
		}
	}
}

// TestCryptoOpenSSL parses the figures of a real openssl speed run, on one
// core and on all, and a real signature rate as the lab's ceilings take it
// (TestParseSpeed has every line format, from stored real output).
func TestCryptoOpenSSL(t *testing.T) {
	labtest.Slow(t)
	ctx := context.Background()
	o, err := speed.FindOpenSSL(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(o.Library, "OpenSSL 3.") {
		t.Errorf("library %q, want OpenSSL 3.x", o.Library)
	}
	ps, notes, err := o.Measure(ctx, options(t, plan.Crypto{Duration: time.Nanosecond, Only: []string{"x25519", "chacha20-poly1305"}, Sizes: []int{16, 16384}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := index(ps)
	multi := runtime.NumCPU() > 1
	for _, tt := range []struct {
		kind, name string
		size       int
		allCores   bool
	}{
		{result.KindKeyAgreement, "x25519", 0, multi},
		{result.KindCipher, "chacha20-poly1305", 16, false},
		{result.KindCipher, "chacha20-poly1305", 16384, multi},
	} {
		p, ok := f[key(o.Library, tt.kind, tt.name, tt.size)]
		switch {
		case !ok:
			t.Errorf("no openssl figure %s %s %d in %+v", tt.kind, tt.name, tt.size, ps)
		case p.PerCore <= 0:
			t.Errorf("%+v: want a positive figure", p)
		case tt.allCores != (p.AllCores > 0):
			t.Errorf("%+v: all-cores figure present %v, want %v", p, p.AllCores > 0, tt.allCores)
		}
	}
	if len(ps) != 3 {
		t.Errorf("%d figures, want 3: %+v", len(ps), ps)
	}
	if c := f[key(o.Library, result.KindCipher, "chacha20-poly1305", 16384)]; c.PerCore <= f[key(o.Library, result.KindCipher, "chacha20-poly1305", 16)].PerCore {
		t.Errorf("openssl chacha20-poly1305 not faster per byte at 16384 bytes: %+v", ps)
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "-seconds 1") }) {
		t.Errorf("notes %q do not say how openssl measured", notes)
	}
	// OpenSSL 3.0 has no ML-KEM: no figures, a note that says so.
	ps, notes, err = o.Measure(ctx, options(t, plan.Crypto{Duration: time.Nanosecond, Only: []string{"mlkem768", "x25519mlkem768"}}), nil)
	if err != nil || len(ps) != 0 || !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, o.Library+" has no ML-KEM") && strings.Contains(n, "Go's figures only")
	}) {
		t.Errorf("openssl with ML-KEM only: figures %+v, notes %q, error %v; want none and a note that %s has no ML-KEM", ps, notes, err, o.Library)
	}
	sign, err := o.SignRate(ctx, "rsa1024", time.Millisecond)
	if err != nil || sign <= 0 {
		t.Errorf("openssl rsa1024 signatures/s %g, %v", sign, err)
	}
}

// TestCryptoOpenSSLMissing runs an openssl that knows no
// aes-256-cbc-hmac-sha1 (as on machines without AES-NI): the cipher is left
// out and the notes say so.
func TestCryptoOpenSSLMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openssl")
	script := `#!/bin/sh
case "$1" in
version) echo "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)";;
*) echo "speed: aes-256-cbc-hmac-sha1 is an unknown cipher or digest" >&2; exit 1;;
esac
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := speed.FindOpenSSL(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ps, notes, err := o.Measure(context.Background(), options(t, plan.Crypto{Duration: plan.DefaultCryptoDuration, Only: []string{"aes-256-cbc-hmac-sha1"}}), nil)
	if err != nil || len(ps) != 0 {
		t.Fatalf("figures %+v, error %v; want none and no error", ps, err)
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "does not offer aes-256-cbc-hmac-sha1 here") && strings.Contains(n, "left out")
	}) {
		t.Errorf("notes %q do not say the cipher is left out", notes)
	}
}

// TestCeilings measures one ceiling per key of the TLS variants.
func TestCeilings(t *testing.T) {
	vs := []plan.Variant{
		{ID: "plain", TLS: "off"},
		{ID: "tls1.2 rsa2048", TLS: "1.2", Key: "rsa2048"},
		{ID: "tls1.3 ecdsa-p256", TLS: "1.3", Key: "ecdsa-p256"},
		{ID: "tls1.3 rsa2048", TLS: "1.3", Key: "rsa2048"},
	}
	cs, err := speed.Ceilings(context.Background(), speed.GoSigner(), vs, 20*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range cs {
		keys = append(keys, c.Key)
		if c.Library != runtime.Version() || c.Cores != runtime.NumCPU() || c.SignPerSec <= 0 || c.ConnPerSec() != c.SignPerSec*float64(c.Cores) {
			t.Errorf("ceiling %+v", c)
		}
	}
	if !slices.Equal(keys, []string{"rsa2048", "ecdsa-p256"}) {
		t.Errorf("ceilings for %v, want rsa2048, ecdsa-p256", keys)
	}
}
