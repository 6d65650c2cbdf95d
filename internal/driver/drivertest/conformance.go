package drivertest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Engine describes one engine and its test server to Conformance: how to
// reach the server for a variant, and what a session there must show.
type Engine struct {
	// New is the engine's driver constructor.
	New func(driver.Config) (driver.Driver, error)
	// Config is the driver config of variant v (TLS mode, resumption,
	// cipher, key; v.Auth is c.Auth) and case c against the test server,
	// as a run makes it (see LabConfig): a config that resumes has a
	// session cache of its own. With UseKey nil, v.Key chooses the
	// server's certificate (the built-in server has an endpoint a key).
	Config func(t testing.TB, v plan.Variant, c Case) driver.Config
	// Cases are the ways of using the engine (auth methods, query modes,
	// workloads) that the round-trip check crosses with every TLS variant;
	// the first is the default of the other checks.
	Cases []Case
	// Phases are the phases of one connect operation (Open, one Do,
	// Close) of v and c against the test server, in order, each with its
	// exact round trips; handshake is what the TLS handshake takes (see
	// Conformance), for the tls-handshake phase.
	Phases func(v plan.Variant, c Case, handshake int) []Trips
	// QueryPhase is the phase a session's first Do starts.
	QueryPhase string
	// StallPhase, if set, is the phase every cancelled Open reports whose
	// server stopped answering; by default it is the first phase that
	// waits for the server after the last one it answered (see Phases).
	StallPhase string
	// HelloRetry says that the server supports none of the key shares Go
	// sends in a TLS 1.3 ClientHello and asks for another (PostgreSQL 15
	// accepts only P-256): every TLS 1.3 handshake takes a round trip
	// more, unless the client offers P-256 first.
	HelloRetry bool
	// Resumes says that the server resumes TLS sessions. PrimedResume says
	// that even a driver's first session resumes, because Open makes a
	// connection of its own before the session's (MongoDB's monitor),
	// whose handshake leaves a ticket in the cache.
	Resumes, PrimedResume bool
	// Server is what the server can say about a session's encryption.
	Server ServerView
	// Keys are the key types the server has certificates for, the default
	// first.
	Keys []string
	// UseKey makes the server present its certificate of key type key to
	// new connections (lab.Server.UseKey); nil if Config chooses by v.Key.
	UseKey func(ctx context.Context, key string) (string, error)
	// Retry, if set, says that an error of Open is a known flaw of the
	// client library that strikes at random (see mysqldrv's ed25519Flaw):
	// the suite tries again, up to 5 times, so that its checks do not fail
	// by chance.
	Retry func(error) bool
	// Workloads are run on a persistent TLS 1.3 session, three operations
	// each; an engine with named workloads refuses a name it does not know.
	Workloads []Workload
	// Login describes the engine's password login; nil if it has none.
	Login *Login
}

// Case is one way of using an engine.
type Case struct {
	Name     string // for the subtest's name, e.g. "scram-sha-256 prepared"
	Auth     string // the test server's auth method, "" for its default
	Workload driver.Workload
	Option   string // the engine's own, e.g. Redis's database
}

// Trips is a phase and its exact round trips.
type Trips struct {
	Phase      string
	RoundTrips int
}

// Trip is Trips{phase, roundTrips}, for Engine.Phases.
func Trip(phase string, roundTrips int) Trips { return Trips{phase, roundTrips} }

func (t Trips) String() string { return fmt.Sprintf("%s:%d", t.Phase, t.RoundTrips) }

// TripsOf lists a trace's phases with their round trips.
func TripsOf(tr netx.Trace) []Trips {
	var out []Trips
	for _, p := range tr.Phases {
		out = append(out, Trips{p.Name, p.RoundTrips})
	}
	return out
}

// ServerView is what a server can say about a session's encryption
// through driver.ServerChecker.
type ServerView int

const (
	// ServerSeesNothing: sessions are no driver.ServerChecker.
	ServerSeesNothing ServerView = iota
	// ServerSeesTLS: the server says whether a session is TLS, and
	// neither version nor cipher (Redis).
	ServerSeesTLS
	// ServerSeesSuite: the server names the version and the cipher suite
	// too (pg_stat_ssl, Ssl_version and Ssl_cipher).
	ServerSeesSuite
)

// Workload is a workload for Conformance to run, and what it must show.
type Workload struct {
	Case
	Statements int   // what the driver's Counter says, if not 0
	MinBytes   int64 // received by each operation at least
}

// Login is an engine's password login.
type Login struct {
	Auths        []string // the test server's auth methods that check a password
	Phase        string   // the phase a wrong password fails in
	Refused      string   // what that error says
	PasswordFile string   // the test server's, for a passfile= parameter
}

// Bounds a loaded machine meets.
const (
	cancelAfter = 100 * time.Millisecond
	// prompt bounds how long a cancelled step may take in all, when
	// nothing but the cancel can end it.
	prompt = 2 * time.Second
	// keyCostRatio is how much slower the median RSA-4096 handshake must
	// be than the RSA-2048 one: the signature costs several times more.
	keyCostRatio  = 1.3
	keyCostRounds = 20
	keyCostBlock  = 5
	tlsCostRounds = 31
)

// Conformance runs the checks every driver must pass against a real
// server, as subtests:
//
//   - round-trips: every phase of a connect operation (Open, one Do,
//     Close) has exactly the round trips e.Phases says, for every case and
//     plain, TLS 1.2, TLS 1.3 and TLS 1.3 offering P-256 first, on three
//     connections of one driver; a TLS 1.3 handshake takes 1 round trip (2
//     with e.HelloRetry, whose HelloRetryRequest the state shows), TLS 1.2
//     2; phases are contiguous and add up to the total.
//   - resumption: with a session cache, TLS 1.2 and 1.3 sessions resume
//     from the second on (the first with e.PrimedResume) in 1 round trip
//     and still know the server's key if e.Resumes; never otherwise.
//   - negotiated: plain, TLS 1.2, 1.3, auto and a TLS 1.2 suite chosen
//     for the key negotiate what they ask (version, suite, a key exchange
//     group, the default key, no resumption), as the client sees it and,
//     as far as e.Server says it can, as the server says.
//   - keys: the server presents each of e.Keys to TLS 1.2, 1.3 and auto,
//     which negotiate what they ask as above.
//   - key-cost: interleaved in blocks, the median TLS 1.3 handshake with
//     rsa4096 is at least 1.3 times that with rsa2048 (if e.Keys has both).
//   - tls-cost: interleaved, the median connect operation with TLS 1.3
//     takes longer than a plain one.
//   - cancel: cancelling the context ends, within 2 s, an Open to a server
//     that stalls from the start (plain and TLS 1.3) or once the client's
//     TLS 1.3 handshake is done, and a Do on a session whose server stalls
//     after Open (plain and TLS 1.3), with a context error named by the
//     phase that waited (Kind "phase: canceled"). The server stalls behind
//     a Proxy.
//   - workloads: each of e.Workloads runs three operations, each receiving
//     at least its bytes, with its statement count; with named workloads,
//     New refuses an unknown name, and names it and the known ones.
//   - login: a wrong password fails in e.Login.Phase with e.Login.Refused
//     and shows no password, plain and TLS 1.3, for every auth method;
//     passfile= logs in.
func Conformance(t *testing.T, e Engine) {
	if len(e.Cases) == 0 || len(e.Keys) == 0 {
		t.Fatal("the engine has no cases or no keys")
	}
	t.Run("round-trips", e.testRoundTrips)
	t.Run("resumption", e.testResumption)
	t.Run("negotiated", e.testNegotiated)
	t.Run("keys", e.testKeys)
	t.Run("key-cost", e.testKeyCost)
	t.Run("tls-cost", e.testTLSCost)
	t.Run("cancel", e.testCancel)
	t.Run("workloads", e.testWorkloads)
	t.Run("login", e.testLogin)
}

// tlsVariant is one TLS setting of the round-trip check.
type tlsVariant struct {
	name string
	v    plan.Variant
	p256 bool // offer P-256 first
}

var roundTripVariants = []tlsVariant{
	{"plain", plan.Variant{TLS: "off"}, false},
	{"tls1.2", plan.Variant{TLS: "1.2"}, false},
	{"tls1.3", plan.Variant{TLS: "1.3"}, false},
	{"tls1.3 p256", plan.Variant{TLS: "1.3"}, true},
}

// helloRetry says whether a TLS 1.3 handshake of v asks for another key
// share.
func (e Engine) helloRetry(v plan.Variant, p256 bool) bool {
	return e.HelloRetry && !v.Plain() && v.TLS != "1.2" && !p256
}

// handshake is the round trips of v's TLS handshake: TLS 1.3 1, TLS 1.2
// 2, resumed 1, and one more after a HelloRetryRequest.
func (e Engine) handshake(v plan.Variant, resumed, p256 bool) int {
	switch {
	case v.Plain():
		return 0
	case v.TLS == "1.2" && !resumed:
		return 2
	case e.helloRetry(v, p256):
		return 2
	}
	return 1
}

func (e Engine) config(t testing.TB, v plan.Variant, c Case) driver.Config {
	t.Helper()
	v.Auth = c.Auth
	if v.Key == "" && !v.Plain() {
		v.Key = e.Keys[0]
	}
	return e.Config(t, v, c)
}

func (e Engine) driver(t testing.TB, cfg driver.Config) driver.Driver {
	t.Helper()
	d, err := e.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (e Engine) useKey(t testing.TB, key string) {
	t.Helper()
	if e.UseKey == nil {
		return
	}
	if _, err := e.UseKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// open is d.Open with e.Retry.
func (e Engine) open(ctx context.Context, d driver.Driver) (driver.Session, error) {
	for range 4 {
		s, err := d.Open(ctx)
		if err == nil || e.Retry == nil || !e.Retry(err) {
			return s, err
		}
	}
	return d.Open(ctx)
}

// connectOnce is ConnectOnce with e.Retry.
func (e Engine) connectOnce(t testing.TB, d driver.Driver) (netx.Trace, tls.ConnectionState, bool) {
	t.Helper()
	s, err := e.open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return finish(t, s)
}

// ConnectOnce is one operation of the connect experiment: Open, one Do,
// Close. It returns the session's trace and TLS state (ok false for a
// plain session).
func ConnectOnce(t testing.TB, d driver.Driver) (tr netx.Trace, state tls.ConnectionState, ok bool) {
	t.Helper()
	s, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return finish(t, s)
}

func finish(t testing.TB, s driver.Session) (netx.Trace, tls.ConnectionState, bool) {
	t.Helper()
	if err := s.Do(context.Background()); err != nil {
		s.Close()
		t.Fatal(err)
	}
	state, ok := s.TLS()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Conn().Finish(), state, ok
}

// checkTrace checks tr's phases and round trips against want, and that
// the phases are contiguous and add up to the total.
func checkTrace(t testing.TB, what string, tr netx.Trace, want []Trips) {
	t.Helper()
	if got := TripsOf(tr); !slices.Equal(got, want) {
		t.Errorf("%s: phases %v\nwant %v", what, got, want)
	}
	var sum time.Duration
	at := tr.Start
	for _, p := range tr.Phases {
		if !p.Start.Equal(at) || p.Duration < 0 {
			t.Errorf("%s: phase %s starts at %v after the last ended, lasts %v", what, p.Name, p.Start.Sub(at), p.Duration)
		}
		at = p.Start.Add(p.Duration)
		sum += p.Duration
	}
	if sum != tr.Total() {
		t.Errorf("%s: phases add up to %v of %v", what, sum, tr.Total())
	}
}

func (e Engine) testRoundTrips(t *testing.T) {
	e.useKey(t, e.Keys[0])
	for _, c := range e.Cases {
		for _, tv := range roundTripVariants {
			name := strings.TrimSpace(c.Name + " " + tv.name)
			t.Run(name, func(t *testing.T) {
				cfg := e.config(t, tv.v, c)
				if tv.p256 {
					cfg.TLS.CurvePreferences = []tls.CurveID{tls.CurveP256}
				}
				d := e.driver(t, cfg)
				want := e.Phases(cfg.Variant, c, e.handshake(tv.v, false, tv.p256))
				for i := range 3 {
					tr, state, ok := e.connectOnce(t, d)
					checkTrace(t, fmt.Sprintf("connection %d", i), tr, want)
					if ok == tv.v.Plain() {
						t.Errorf("connection %d: TLS %v for a variant of TLS %s", i, ok, tv.v.TLS)
					}
					if hrr := e.helloRetry(tv.v, tv.p256); state.HelloRetryRequest != hrr || state.DidResume {
						t.Errorf("connection %d: HelloRetryRequest %v (want %v), resumed %v without a session cache",
							i, state.HelloRetryRequest, hrr, state.DidResume)
					}
				}
			})
		}
	}
}

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

// stallPhase is the phase a cancelled Open of v reports when the server
// stops answering after phase after: e.StallPhase, or the first phase
// after it that waits for the server.
func (e Engine) stallPhase(v plan.Variant, after string) string {
	if e.StallPhase != "" {
		return e.StallPhase
	}
	phases := e.Phases(v, e.Cases[0], e.handshake(v, false, false))
	i := slices.IndexFunc(phases, func(p Trips) bool { return p.Phase == after })
	for _, p := range phases[i+1:] {
		if p.RoundTrips > 0 {
			return p.Phase
		}
	}
	return "none"
}

// cancelSteps are where the cancel check stalls the server: from the
// start; from the end of the client's TLS handshake on (TLS 1.3: its
// Finished, after which it goes on as if answered); after Open.
var cancelSteps = []struct {
	name string
	v    plan.Variant
}{
	{"open", plan.Variant{TLS: "off"}},
	{"open", plan.Variant{TLS: "1.3"}},
	{"after-handshake", plan.Variant{TLS: "1.3"}},
	{"do", plan.Variant{TLS: "off"}},
	{"do", plan.Variant{TLS: "1.3"}},
}

func (e Engine) testCancel(t *testing.T) {
	e.useKey(t, e.Keys[0])
	for _, step := range cancelSteps {
		t.Run("tls-"+step.v.TLS+" "+step.name, func(t *testing.T) {
			cfg := e.config(t, step.v, e.Cases[0])
			p := NewProxy(t, cfg.Addr)
			cfg.Addr = p.Addr
			// Only the cancel can end the step in time; a driver that
			// missed it fails at its timeout.
			cfg.Timeout = 10 * prompt
			var want string
			switch step.name {
			case "open":
				want = e.stallPhase(step.v, netx.PhaseTCP)
				p.Stall()
			case "after-handshake":
				want = e.stallPhase(step.v, netx.PhaseTLSHandshake)
				cfg.TLS = cfg.TLS.Clone()
				check := cfg.TLS.VerifyConnection
				cfg.TLS.VerifyConnection = func(cs tls.ConnectionState) error {
					p.StallClient()
					if check != nil {
						return check(cs)
					}
					return nil
				}
			case "do":
				want = e.QueryPhase
			}
			d := e.driver(t, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var s driver.Session
			if step.name == "do" {
				var err error
				if s, err = e.open(ctx, d); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				p.Stall()
			}
			time.AfterFunc(cancelAfter, cancel)
			start := time.Now()
			var err error
			if step.name == "do" {
				err = s.Do(ctx)
			} else if s, err = d.Open(ctx); err == nil {
				// A driver whose Open waits for nothing more (HTTP)
				// stalls in its first Do.
				err = s.Do(ctx)
				s.Close()
			}
			took := time.Since(start)
			if !errors.Is(err, context.Canceled) || driver.Kind(err) != want+": canceled" {
				t.Errorf("%v (%s), want a cancelled %s", err, driver.Kind(err), want)
			}
			if took > prompt {
				t.Errorf("the step returned %v after its start, the cancel came at %v", took, cancelAfter)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
		})
	}
}

func (e Engine) testWorkloads(t *testing.T) {
	if len(e.Workloads) == 0 {
		t.Skip("the engine has no workloads")
	}
	e.useKey(t, e.Keys[0])
	for _, w := range e.Workloads {
		t.Run(w.Name, func(t *testing.T) {
			d := e.driver(t, e.config(t, plan.Variant{TLS: "1.3"}, w.Case))
			if w.Statements != 0 {
				if c, ok := d.(driver.MultiStatement); !ok || c.Statements() != w.Statements {
					t.Errorf("the driver is a Counter: %v; want one of %d statements", ok, w.Statements)
				}
			}
			ctx := context.Background()
			s, err := e.open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 3 {
				_, before := s.Conn().Counters()
				if err := s.Do(ctx); err != nil {
					t.Fatalf("operation %d: %v", i, err)
				}
				if _, after := s.Conn().Counters(); after-before < w.MinBytes {
					t.Errorf("operation %d received %d bytes, want at least %d", i, after-before, w.MinBytes)
				}
			}
		})
	}
	known := e.Workloads[0].Workload.Name
	if known == "" {
		return // the engine's one workload has no name
	}
	t.Run("unknown", func(t *testing.T) {
		c := e.Workloads[0].Case
		c.Workload.Name = "no-such-workload"
		if _, err := e.New(e.config(t, plan.Variant{TLS: "off"}, c)); err == nil || !strings.Contains(err.Error(), `"no-such-workload"`) || !strings.Contains(err.Error(), known) {
			t.Errorf("New: %v, want an error that names the unknown workload and the known ones (%s)", err, known)
		}
	})
}

func (e Engine) testLogin(t *testing.T) {
	l := e.Login
	if l == nil {
		t.Skip("the engine has no login")
	}
	e.useKey(t, e.Keys[0])
	for _, auth := range l.Auths {
		for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3"}} {
			t.Run(auth+" tls-"+v.TLS, func(t *testing.T) {
				c := e.Cases[0]
				c.Auth = auth
				cfg := e.config(t, v, c)
				password, _ := cfg.URL.User.Password()
				if password == "" {
					t.Fatal("the URL has no password")
				}
				wrong := *cfg.URL
				wrong.User = url.UserPassword(cfg.URL.User.Username(), password+"x")
				bad := cfg
				bad.URL = &wrong
				s, err := e.open(context.Background(), e.driver(t, bad))
				if err == nil {
					s.Close()
				}
				var oe *driver.OpError
				if !errors.As(err, &oe) || oe.Phase != l.Phase || !strings.Contains(err.Error(), l.Refused) {
					t.Errorf("a wrong password: %v, want a %s error with %q", err, l.Phase, l.Refused)
				}
				if err != nil && strings.Contains(err.Error(), password) {
					t.Errorf("the error shows the password: %v", err)
				}
				t.Log(err)

				// The password from a passfile= parameter.
				fromFile := *cfg.URL
				fromFile.User = url.User(cfg.URL.User.Username())
				q := fromFile.Query()
				q.Set("passfile", l.PasswordFile)
				fromFile.RawQuery = q.Encode()
				good := cfg
				good.URL = &fromFile
				e.connectOnce(t, e.driver(t, good))
			})
		}
	}
}
