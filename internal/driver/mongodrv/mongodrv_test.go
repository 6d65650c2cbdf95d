package mongodrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// The tests share one lab server (FerretDB) with every key the tests
// present and testRecords documents in ycsb.usertable.
var (
	srv      lab.Server
	startErr error
	testKeys = []string{"rsa2048", "ecdsa-p256"}
)

const testRecords = 1000

func TestMain(m *testing.M) {
	srv, startErr = lab.Start(context.Background(), "mongodb", lab.Options{Keys: testKeys})
	if startErr == nil {
		d, err := New(configOf(nil, srv, plan.Variant{TLS: "off"}, "", WorkloadFindOneID))
		if err == nil {
			err = d.(driver.Preparer).Prepare(context.Background(), 1, testRecords, func(int64, int64) {})
		}
		if err != nil {
			srv.Stop()
			fmt.Fprintln(os.Stderr, "preparing the test data:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

// needServer skips or fails the test if the shared server did not start
// (see labtest.Check).
func needServer(t *testing.T) {
	t.Helper()
	labtest.Check(t, startErr)
}

// configOf is the driver config of variant v against s, with auth method
// auth; t may be nil (TestMain).
func configOf(t *testing.T, s lab.Server, v plan.Variant, auth, workload string) driver.Config {
	fail := func(err error) {
		if t == nil {
			panic(err)
		}
		t.Helper()
		t.Fatal(err)
	}
	raw, err := s.URL(auth, !v.Plain())
	if err != nil {
		fail(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		fail(err)
	}
	cfg := driver.Config{
		Variant: v, Addr: u.Host, Host: u.Hostname(), Dialer: &netx.Dialer{}, Timeout: 10 * time.Second, URL: u,
		Workload: driver.Workload{Name: workload, Rows: testRecords},
	}
	if !v.Plain() {
		o := tlsx.ClientOptions{RootCAs: s.RootCAs(), ServerName: "127.0.0.1"}
		if v.Resume {
			o.Sessions = tls.NewLRUClientSessionCache(8)
		}
		if cfg.TLS, err = tlsx.ClientConfig(v, o); err != nil {
			fail(err)
		}
	}
	return cfg
}

func newDriver(t *testing.T, cfg driver.Config) driver.Driver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func useKey(t *testing.T, key string) {
	t.Helper()
	if _, err := srv.UseKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// connectOnce opens a session, runs one operation, closes it and returns
// its trace and TLS state.
func connectOnce(t *testing.T, d driver.Driver) (netx.Trace, tls.ConnectionState) {
	t.Helper()
	ctx := context.Background()
	s, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	state, _ := s.TLS()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Conn().Finish(), state
}

type phaseTrips struct {
	name  string
	trips int
}

func tripsOf(tr netx.Trace) []phaseTrips {
	var out []phaseTrips
	for _, p := range tr.Phases {
		out = append(out, phaseTrips{p.Name, p.RoundTrips})
	}
	return out
}

// TestRoundTrips checks the operation connection's phases and round trips,
// which are exact: tcp 1; TLS 1.3 1, TLS 1.2 2 (resumed 1); the hello 1
// (it carries SCRAM's first message); auth 2 (FerretDB's SCRAM wants a
// second, empty saslContinue); the first find 1; close 1 (endSessions).
// The client's monitor connection is in none of them. With resumption the
// operation connection resumes from its first session on: the monitor's
// handshake, earlier, left a ticket in the session cache.
func TestRoundTrips(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	plain := []phaseTrips{{"tcp", 1}, {"hello", 1}, {"auth", 2}, {"query", 1}, {"close", 1}}
	secure := func(hs int) []phaseTrips {
		return []phaseTrips{{"tcp", 1}, {"tls-handshake", hs}, {"hello", 1}, {"auth", 2}, {"query", 1}, {"close", 1}}
	}
	tests := []struct {
		name     string
		variant  plan.Variant
		auth     string
		workload string
		want     []phaseTrips
	}{
		{"plain", plan.Variant{TLS: "off"}, "", WorkloadFindOneID, plain},
		{"plain scram-sha-1", plan.Variant{TLS: "off"}, "scram-sha-1", WorkloadFindOneID, plain},
		{"plain find-one", plan.Variant{TLS: "off"}, "", WorkloadFindOne, plain},
		{"tls1.2", plan.Variant{TLS: "1.2", Key: "rsa2048"}, "", WorkloadFindOneID, secure(2)},
		{"tls1.3", plan.Variant{TLS: "1.3", Key: "rsa2048"}, "", WorkloadFindOneID, secure(1)},
		{"tls1.2 resume", plan.Variant{TLS: "1.2", Key: "rsa2048", Resume: true}, "", WorkloadFindOneID, secure(1)},
		{"tls1.3 resume", plan.Variant{TLS: "1.3", Key: "rsa2048", Resume: true}, "", WorkloadFindOneID, secure(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, configOf(t, srv, tc.variant, tc.auth, tc.workload))
			for i := range 3 {
				tr, state := connectOnce(t, d)
				if got := tripsOf(tr); !slices.Equal(got, tc.want) {
					t.Errorf("connection %d: phases %v, want %v", i, got, tc.want)
				}
				if !tc.variant.Plain() && state.DidResume != tc.variant.Resume {
					t.Errorf("connection %d: resumed %v", i, state.DidResume)
				}
			}
		})
	}
}

// TestNegotiated checks that what a session negotiated is what its
// variant asked for: version, the server's key, resumption.
func TestNegotiated(t *testing.T) {
	needServer(t)
	for _, key := range testKeys {
		useKey(t, key)
		for _, v := range []plan.Variant{{TLS: "1.2", Key: key}, {TLS: "1.3", Key: key}, {TLS: "auto", Key: key}} {
			_, state := connectOnce(t, newDriver(t, configOf(t, srv, v, "", WorkloadFindOneID)))
			n := tlsx.Describe(state)
			want := map[string]string{"1.2": "TLS 1.2", "1.3": "TLS 1.3", "auto": "TLS 1.3"}[v.TLS]
			if n.Version != want || tlsx.KeyTypeOf(n.PeerKey) != key || state.DidResume || n.HelloRetry {
				t.Errorf("%s %s: negotiated %+v, resumed %v", v.TLS, key, n, state.DidResume)
			}
		}
	}
	useKey(t, "rsa2048")
}

// TestSeedClient checks the seed's new-client iteration: both connections
// and where their round trips fall, and a reused client.
func TestSeedClient(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	ctx := context.Background()
	for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3", Key: "rsa2048"}} {
		s, err := NewSeed(configOf(t, srv, v, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		smp, err := s.NewClient(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hs := []phaseTrips{}
		if !v.Plain() {
			hs = []phaseTrips{{"tls-handshake", 1}}
		}
		wantOp := slices.Concat([]phaseTrips{{"tcp", 1}}, hs, []phaseTrips{{"hello", 1}, {"auth", 2}, {"query", 1}})
		wantMon := slices.Concat([]phaseTrips{{"tcp", 1}}, hs, []phaseTrips{{"hello", 1}})
		if got := tripsOf(smp.Op); !slices.Equal(got, wantOp) {
			t.Errorf("%s: operation connection %v, want %v", v.TLS, got, wantOp)
		}
		if got := tripsOf(smp.Monitor); !slices.Equal(got, wantMon) {
			t.Errorf("%s: monitor connection %v, want %v", v.TLS, got, wantMon)
		}
		if smp.Connect <= 0 || smp.Secure == v.Plain() || smp.RoundTrips() != 7+2*len(hs) {
			t.Errorf("%s: sample %+v, %d round trips", v.TLS, smp, smp.RoundTrips())
		}
		// The first query waited for the operation connection, which
		// waited for the monitor's.
		if smp.FirstQuery < smp.Op.Total() || smp.Op.Start.Before(smp.Monitor.End) {
			t.Errorf("%s: first query %v, operation connection %v from %v, monitor's until %v", v.TLS,
				smp.FirstQuery, smp.Op.Total(), smp.Op.Start, smp.Monitor.End)
		}
		r, err := s.OpenReused(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn, _ := r.Conn()
		sent0, _ := conn.Counters()
		for range 5 {
			if el, err := r.FindOne(ctx); err != nil || el <= 0 {
				t.Errorf("%s: reused find_one: %v, %v", v.TLS, el, err)
			}
		}
		if sent, _ := conn.Counters(); sent <= sent0 {
			t.Errorf("%s: the reused client's finds did not go over its connection", v.TLS)
		}
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestWorkloads runs each workload on a persistent session; stream reads
// every document, about 1 KiB each.
func TestWorkloads(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	for _, w := range []string{WorkloadFindOneID, WorkloadFindOne, WorkloadStream} {
		s, err := newDriver(t, configOf(t, srv, plan.Variant{TLS: "off"}, "", w)).Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, recv0 := s.Conn().Counters()
		for range 3 {
			if err := s.Do(ctx); err != nil {
				t.Errorf("%s: %v", w, err)
			}
		}
		_, recv := s.Conn().Counters()
		if w == WorkloadStream && recv-recv0 < 3*testRecords*fieldCount*fieldSize {
			t.Errorf("stream: received %d bytes for 3 reads of %d records", recv-recv0, testRecords)
		}
		s.Close()
	}
	if _, err := New(configOf(t, srv, plan.Variant{TLS: "off"}, "", "update")); err == nil || !strings.Contains(err.Error(), "find-one-id") {
		t.Errorf("an unknown workload: %v", err)
	}
}

func TestKey(t *testing.T) {
	// YCSB's first keys (hashed inserts, as in its load phase's output).
	for n, want := range map[int]string{0: "user6284781860667377211", 1: "user8517097267634966620", 2: "user1820151046732198393"} {
		if got := Key(n); got != want {
			t.Errorf("Key(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestCommandName(t *testing.T) {
	doc := func(name string) []byte {
		// {name: 1} as BSON: length, int32 element, terminator.
		b := []byte{0, 0, 0, 0, 0x10}
		b = append(append(b, name...), 0, 1, 0, 0, 0, 0)
		b[0] = byte(len(b))
		return b
	}
	header := func(op byte) []byte { return []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, op & 0xff, 0x07, 0, 0} }
	opMsg := func(name string) []byte {
		return append(append(header(0xdd), 0, 0, 0, 0, 0), doc(name)...)
	}
	opQuery := func(name string) []byte {
		m := append(header(0xd4), 0, 0, 0, 0)
		m = append(append(m, "admin.$cmd"...), 0)
		m = append(m, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
		return append(m, doc(name)...)
	}
	tests := []struct {
		name string
		msg  []byte
		want string
	}{
		{"OP_MSG", opMsg("saslContinue"), "saslContinue"},
		{"OP_QUERY hello", opQuery("isMaster"), "isMaster"},
		{"short", []byte{1, 2, 3}, ""},
		{"document sequence", append(append(header(0xdd), 0, 0, 0, 0, 1), doc("find")...), ""},
		{"other op code", append(header(0x01), doc("x")...), ""},
		{"truncated query", opQuery("find")[:24], ""},
	}
	for _, tc := range tests {
		if got := commandName(tc.msg); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPrepare loads a server of its own: exact counts, a second run that
// keeps the data, one that continues a cut load, and a smaller load after
// a larger one.
func TestPrepare(t *testing.T) {
	s := labtest.Start(t, "mongodb", lab.Options{PlainOnly: true})
	ctx := context.Background()
	cfg := configOf(t, s, plan.Variant{TLS: "off"}, "", WorkloadStream)
	prepare := func(records int) (calls int, last int64) {
		t.Helper()
		cfg.Workload.Rows = records
		d := newDriver(t, cfg)
		err := d.(driver.Preparer).Prepare(ctx, 8, records, func(done, total int64) {
			calls++
			last = done
			if total != int64(records) || done > total {
				t.Errorf("progress %d of %d for %d records", done, total, records)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return calls, last
	}
	count := func(records int) {
		t.Helper()
		cfg.Workload.Rows = records
		sess, err := newDriver(t, cfg).Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		// The stream workload counts every document and checks the count.
		if err := sess.Do(ctx); err != nil {
			t.Errorf("after preparing %d records: %v", records, err)
		}
	}
	if calls, last := prepare(2500); calls != 4 || last != 2500 {
		t.Errorf("first load: %d progress calls, last at %d: want one per batch of 1000 and the start", calls, last)
	}
	count(2500)
	if calls, last := prepare(2500); calls != 1 || last != 2500 {
		t.Errorf("second run: %d progress calls, last at %d: want the data kept", calls, last)
	}
	// A load cut short leaves a prefix: remove the last 700 records.
	sess, err := newDriver(t, cfg).Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	coll := sess.(*session).coll
	var keys []any
	for n := 1800; n < 2500; n++ {
		keys = append(keys, Key(n))
	}
	if _, err := coll.DeleteMany(ctx, map[string]any{"_id": map[string]any{"$in": keys}}); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	if calls, _ := prepare(2500); calls != 2 {
		t.Errorf("continuing a cut load: %d progress calls, want 2 (from 1800, one batch)", calls)
	}
	count(2500)
	prepare(1200)
	count(1200)
}

// TestErrors: each way of getting the connection wrong is one clear
// error, named by its phase.
func TestErrors(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	ctx := context.Background()
	plainURL, _ := srv.URL("", false)
	tlsURL, _ := srv.URL("", true)
	plainAddr, tlsAddr := host(plainURL), host(tlsURL)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name   string
		cfg    func(driver.Config) driver.Config
		v      plan.Variant
		phase  string
		substr string
	}{
		{"wrong password", func(c driver.Config) driver.Config {
			u := *c.URL
			u.User = url.UserPassword("bench", "wrong")
			c.URL = &u
			return c
		}, plan.Variant{TLS: "off"}, "auth", "Authentication failed"},
		{"tls to the plaintext port", func(c driver.Config) driver.Config { c.Addr = plainAddr; return c },
			plan.Variant{TLS: "1.3", Key: "rsa2048"}, "tls-handshake", "is it a plaintext port?"},
		{"plain to the TLS port", func(c driver.Config) driver.Config { c.Addr = tlsAddr; return c },
			plan.Variant{TLS: "off"}, "hello", "is it a TLS port?"},
		{"nothing listens", func(c driver.Config) driver.Config { c.Addr = closedAddr; return c },
			plan.Variant{TLS: "off"}, "tcp", "connection refused"},
		{"wrong name", func(c driver.Config) driver.Config { c.TLS = c.TLS.Clone(); c.TLS.ServerName = "db.example"; return c },
			plan.Variant{TLS: "1.3", Key: "rsa2048"}, "tls-handshake", "not db.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(configOf(t, srv, tc.v, "", WorkloadFindOne))
			cfg.Timeout = 5 * time.Second
			start := time.Now()
			_, err := newDriver(t, cfg).Open(ctx)
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != tc.phase || !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("error %v (phase %v), want phase %s and %q", err, oe, tc.phase, tc.substr)
			}
			if el := time.Since(start); el > 4*time.Second {
				t.Errorf("the error took %v: the driver waited for its timeouts", el)
			}
			if strings.Contains(fmt.Sprint(err), srv.PasswordFile()) {
				t.Error("the error names the password file")
			}
		})
	}

	// tlsAllowInvalidHostnames=true keeps verifying the chain, not the name.
	cfg := configOf(t, srv, plan.Variant{TLS: "1.3", Key: "rsa2048"}, "", WorkloadFindOne)
	cfg.TLS = cfg.TLS.Clone()
	cfg.TLS.ServerName = "db.example"
	u := *cfg.URL
	q := u.Query()
	q.Set("tlsAllowInvalidHostnames", "true")
	u.RawQuery = q.Encode()
	cfg.URL = &u
	connectOnce(t, newDriver(t, cfg))
	cfg.TLS.RootCAs = nil
	if _, err := newDriver(t, cfg).Open(ctx); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("an unknown CA with tlsAllowInvalidHostnames: %v", err)
	}

	// A wrong URL option is the driver's clear error, without the password.
	bad := configOf(t, srv, plan.Variant{TLS: "off"}, "", WorkloadFindOne)
	bu := *bad.URL
	bu.RawQuery = "authMechanism=NOPE"
	bad.URL = &bu
	pw, _ := bu.User.Password()
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "NOPE") || strings.Contains(err.Error(), pw) {
		t.Errorf("a bad authMechanism: %v", err)
	}
}

func host(raw string) string {
	u, _ := url.Parse(raw)
	return u.Host
}

// TestServerStopped stops a server under an open session: the next
// operation fails and names its phase, and a new session cannot connect.
func TestServerStopped(t *testing.T) {
	s := labtest.Start(t, "mongodb", lab.Options{PlainOnly: true})
	ctx := context.Background()
	d := newDriver(t, configOf(t, s, plan.Variant{TLS: "off"}, "", WorkloadFindOne))
	sess, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	var oe *driver.OpError
	if err := sess.Do(ctx); !errors.As(err, &oe) || oe.Phase != PhaseQuery {
		t.Errorf("a query to a stopped server: %v", err)
	}
	if _, err := d.Open(ctx); !errors.As(err, &oe) || oe.Phase != netx.PhaseTCP || driver.Kind(err) != "tcp: refused" {
		t.Errorf("connecting to a stopped server: %v (%s)", err, driver.Kind(err))
	}
}
