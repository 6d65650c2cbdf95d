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
	t.Run("writer-on-time", e.roundTrips)
	// A writer descheduled after its system call (a busy machine) must
	// not lose a turn when the driver reads the answer in the background
	// meanwhile, as pgx does once a write has taken 15 ms.
	t.Run("writer-delayed", func(t *testing.T) {
		netx.DelayWrites(20 * time.Millisecond)
		t.Cleanup(func() { netx.DelayWrites(0) })
		e.roundTrips(t)
	})
}

func (e Engine) roundTrips(t *testing.T) {
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
