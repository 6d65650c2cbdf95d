package drivertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

func (e Engine) testResumption(t *testing.T) {
	e.useKey(t, e.Keys[0])
	c := e.Cases[0]
	for _, version := range []string{"1.2", "1.3"} {
		t.Run("tls"+version, func(t *testing.T) {
			v := plan.Variant{TLS: version, Resume: true}
			cfg := e.config(t, v, c)
			if cfg.TLS == nil || cfg.TLS.ClientSessionCache == nil {
				t.Fatal("a config that resumes has no session cache")
			}
			d := e.driver(t, cfg)
			for i := range 3 {
				resumed := e.Resumes && (i > 0 || e.PrimedResume)
				tr, state, _ := e.connectOnce(t, d)
				checkTrace(t, fmt.Sprintf("connection %d", i), tr, e.Phases(cfg.Variant, c, e.handshake(v, resumed, false)))
				if state.DidResume != resumed {
					t.Errorf("connection %d: resumed %v, want %v", i, state.DidResume, resumed)
				}
				// A resumed session still knows the server's certificate.
				if len(state.PeerCertificates) == 0 || tlsx.KeyTypeOf(tlsx.PeerKey(state.PeerCertificates[0])) != e.Keys[0] {
					t.Errorf("connection %d (resumed %v): %d peer certificates, want the server's %s", i, state.DidResume, len(state.PeerCertificates), e.Keys[0])
				}
			}
		})
	}
}

// opensslSuites are OpenSSL's names of the TLS 1.2 suites Go offers, as
// servers report them; TLS 1.3 suites have the same names in both.
var opensslSuites = map[string]string{
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
}

// suiteFor is a TLS 1.2 suite a server with a key of type key can use, ""
// if none is known.
func suiteFor(key string) string {
	switch {
	case strings.HasPrefix(key, "rsa"):
		return "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
	case strings.HasPrefix(key, "ecdsa"):
		return "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	}
	return ""
}

func (e Engine) testNegotiated(t *testing.T) {
	e.useKey(t, e.Keys[0])
	variants := []plan.Variant{{TLS: "off"}, {TLS: "1.2"}, {TLS: "1.3"}, {TLS: "auto"}}
	if s := suiteFor(e.Keys[0]); s != "" {
		variants = append(variants, plan.Variant{TLS: "1.2", Cipher: s})
	}
	for _, v := range variants {
		t.Run(strings.TrimSpace("tls-"+v.TLS+" "+v.Cipher), func(t *testing.T) {
			cfg := e.config(t, v, e.Cases[0])
			ctx := context.Background()
			s, err := e.open(ctx, e.driver(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Do(ctx); err != nil {
				t.Fatal(err)
			}
			state, ok := s.TLS()
			switch {
			case v.Plain() && ok:
				t.Error("a plain session has TLS")
			case !v.Plain():
				e.checkState(t, v, e.Keys[0], state, ok)
			}
			e.checkServer(t, s, v, state)
		})
	}
}

// checkState checks that a session of TLS variant v negotiated what it
// asked, the server presenting key.
func (e Engine) checkState(t *testing.T, v plan.Variant, key string, state tls.ConnectionState, ok bool) {
	t.Helper()
	if !ok {
		t.Fatal("a TLS session has no TLS")
	}
	n := tlsx.Describe(state)
	want := map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13, "auto": tls.VersionTLS13}[v.TLS]
	if state.Version != want || !state.HandshakeComplete || state.CurveID == 0 || state.DidResume {
		t.Errorf("negotiated %+v (complete %v, resumed %v), want %s with a key exchange group", n, state.HandshakeComplete, state.DidResume, tls.VersionName(want))
	}
	if got := tlsx.KeyTypeOf(n.PeerKey); got != key {
		t.Errorf("the server presented %s (%s), want %s", got, n.PeerKey, key)
	}
	if hrr := e.helloRetry(v, false); n.HelloRetry != hrr {
		t.Errorf("HelloRetryRequest %v, want %v", n.HelloRetry, hrr)
	}
	// The suite is one of the version's, the one asked for if any.
	var fits bool
	for _, cs := range tls.CipherSuites() {
		if cs.ID == state.CipherSuite {
			fits = slices.Equal(cs.SupportedVersions, []uint16{tls.VersionTLS13}) == (want == tls.VersionTLS13)
		}
	}
	if !fits || v.Cipher != "" && n.Suite != v.Cipher {
		t.Errorf("suite %s for %s, want %s", n.Suite, n.Version, or(v.Cipher, "one of the version's"))
	}
	t.Logf("%s %s %s %s", n.Version, n.Suite, n.Group, n.PeerKey)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkServer checks what the server says of session s of variant v
// against what the client negotiated, as far as e.Server can.
func (e Engine) checkServer(t *testing.T, s driver.Session, v plan.Variant, state tls.ConnectionState) {
	t.Helper()
	sc, ok := s.(driver.ServerChecker)
	if ok != (e.Server != ServerSeesNothing) {
		t.Fatalf("the session is a ServerChecker: %v; the engine says the server can tell: %v", ok, e.Server != ServerSeesNothing)
	}
	if !ok {
		return
	}
	view, err := sc.ServerTLS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the server says %+v", view)
	if view.TLS == v.Plain() {
		t.Errorf("the server says TLS %v of a session of TLS %s", view.TLS, v.TLS)
	}
	if v.Plain() || e.Server == ServerSeesTLS {
		if view.Version != "" || view.Cipher != "" {
			t.Errorf("the server says %+v: it names no version or cipher of a plain session, or ever", view)
		}
		return
	}
	version := strings.Replace(tls.VersionName(state.Version), "TLS ", "TLSv", 1)
	cipher := or(opensslSuites[view.Cipher], view.Cipher)
	if view.Version != version || cipher != tls.CipherSuiteName(state.CipherSuite) {
		t.Errorf("the server says %s %s, the client negotiated %s %s", view.Version, view.Cipher, version, tls.CipherSuiteName(state.CipherSuite))
	}
}

func (e Engine) testKeys(t *testing.T) {
	t.Cleanup(func() { e.useKey(t, e.Keys[0]) })
	for _, key := range e.Keys {
		e.useKey(t, key)
		for _, version := range []string{"1.2", "1.3", "auto"} {
			t.Run(key+" tls-"+version, func(t *testing.T) {
				v := plan.Variant{TLS: version, Key: key}
				_, state, ok := e.connectOnce(t, e.driver(t, e.config(t, v, e.Cases[0])))
				e.checkState(t, v, key, state, ok)
			})
		}
	}
}

// Median is the median of ds (the upper one of an even count).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func (e Engine) testKeyCost(t *testing.T) {
	keys := []string{"rsa2048", "rsa4096"}
	for _, k := range keys {
		if !slices.Contains(e.Keys, k) {
			t.Skipf("the server has no %s key", k)
		}
	}
	t.Cleanup(func() { e.useKey(t, e.Keys[0]) })
	drivers := map[string]driver.Driver{}
	for _, k := range keys {
		drivers[k] = e.driver(t, e.config(t, plan.Variant{TLS: "1.3", Key: k}, e.Cases[0]))
	}
	// Blocks of connections a key, alternating, so that drift hits both
	// alike and the server switches keys only between blocks.
	hs := map[string][]time.Duration{}
	for range keyCostRounds / keyCostBlock {
		for _, k := range keys {
			e.useKey(t, k)
			for range keyCostBlock {
				tr, _, _ := e.connectOnce(t, drivers[k])
				p, _ := tr.Phase(netx.PhaseTLSHandshake)
				hs[k] = append(hs[k], p.Duration)
			}
		}
	}
	small, large := Median(hs["rsa2048"]), Median(hs["rsa4096"])
	t.Logf("TLS 1.3 handshake medians: rsa2048 %v, rsa4096 %v (%.1fx)", small, large, float64(large)/float64(small))
	if float64(large) < keyCostRatio*float64(small) {
		t.Errorf("the rsa4096 handshake (median %v) is not %.1f times the rsa2048 one (%v)", large, keyCostRatio, small)
	}
}

func (e Engine) testTLSCost(t *testing.T) {
	e.useKey(t, e.Keys[0])
	variants := []plan.Variant{{TLS: "off"}, {TLS: "1.3"}}
	drivers := make([]driver.Driver, len(variants))
	totals := make([][]time.Duration, len(variants))
	for i, v := range variants {
		drivers[i] = e.driver(t, e.config(t, v, e.Cases[0]))
	}
	for range tlsCostRounds {
		for i, d := range drivers {
			tr, _, _ := e.connectOnce(t, d)
			totals[i] = append(totals[i], tr.Total())
		}
	}
	plain, secure := Median(totals[0]), Median(totals[1])
	t.Logf("connect operation medians: plain %v, TLS 1.3 %v", plain, secure)
	if secure <= plain {
		t.Errorf("a TLS 1.3 connect operation (median %v) is not slower than a plain one (%v)", secure, plain)
	}
}
