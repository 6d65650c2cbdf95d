package mongodrv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The tests share one lab server (FerretDB) with every key the tests
// present and testRecords documents in ycsb.usertable.
var (
	srv      lab.Server
	startErr error
	testKeys = []string{"rsa2048", "ecdsa-p256", "rsa4096"}
)

const testRecords = 1000

func TestMain(m *testing.M) {
	flag.Parse()
	if startErr = labtest.Short(); startErr == nil {
		srv, startErr = lab.Start(context.Background(), "mongodb", lab.Options{Keys: testKeys})
	}
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
func configOf(t testing.TB, s lab.Server, v plan.Variant, auth, workload string) driver.Config {
	v.Auth = auth
	cfg, err := drivertest.LabConfig(s, v, driver.Workload{Name: workload, Rows: testRecords})
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Helper()
		t.Fatal(err)
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

// TestConformance runs the drivers' shared checks (drivertest.Conformance)
// on the operation connection, whose phases and round trips are exact:
// tcp 1; the hello 1 (it carries SCRAM's first message); auth 2 (FerretDB's
// SCRAM wants a second, empty saslContinue); the first find 1; close 1
// (endSessions). The client's monitor connection is in none of them, but
// Open waits for it: a server that stops answering stalls Open in the
// hello phase whatever the monitor was doing. With resumption the
// operation connection resumes from its first session on: the monitor's
// handshake, earlier, left a ticket in the session cache. MongoDB says
// nothing of a session's TLS.
func TestConformance(t *testing.T) {
	needServer(t)
	workload := func(name string, minBytes int64) drivertest.Workload {
		return drivertest.Workload{Case: drivertest.Case{Name: name, Workload: driver.Workload{Name: name}}, Statements: 1, MinBytes: minBytes}
	}
	drivertest.Conformance(t, drivertest.Engine{
		New: New,
		Config: func(t testing.TB, v plan.Variant, c drivertest.Case) driver.Config {
			return configOf(t, srv, v, c.Auth, c.Workload.Name)
		},
		Cases: []drivertest.Case{
			{Name: "scram-sha-256 find-one-id", Workload: driver.Workload{Name: WorkloadFindOneID}},
			{Name: "scram-sha-1 find-one-id", Auth: "scram-sha-1", Workload: driver.Workload{Name: WorkloadFindOneID}},
			{Name: "scram-sha-256 find-one", Workload: driver.Workload{Name: WorkloadFindOne}},
			{Name: "scram-sha-256 ping", Workload: driver.Workload{Name: plan.WorkloadPing}},
		},
		Phases: func(v plan.Variant, _ drivertest.Case, handshake int) []drivertest.Trips {
			p := []drivertest.Trips{drivertest.Trip(netx.PhaseTCP, 1)}
			if !v.Plain() {
				p = append(p, drivertest.Trip(netx.PhaseTLSHandshake, handshake))
			}
			return append(p, drivertest.Trip(PhaseHello, 1), drivertest.Trip(PhaseAuth, 2), drivertest.Trip(PhaseQuery, 1), drivertest.Trip(netx.PhaseClose, 1))
		},
		QueryPhase:   PhaseQuery,
		StallPhase:   PhaseHello,
		Resumes:      true,
		PrimedResume: true,
		Keys:         testKeys,
		UseKey:       srv.UseKey,
		Workloads: []drivertest.Workload{
			workload(WorkloadFindOneID, fieldCount*fieldSize),
			workload(WorkloadFindOne, fieldCount*fieldSize),
			workload(WorkloadStream, testRecords*fieldCount*fieldSize),
			workload(plan.WorkloadPing, 1),
		},
		Login: &drivertest.Login{Auths: []string{"scram-sha-256", "scram-sha-1"}, Phase: PhaseAuth,
			Refused: "Authentication failed", PasswordFile: srv.PasswordFile()},
	})
}

// TestSeedClient checks the seed's new-client iteration: both connections
// and where their round trips fall, and a reused client.
func TestSeedClient(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	ctx := context.Background()
	for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3", Key: "rsa2048"}} {
		d, err := New(configOf(t, srv, v, "", WorkloadFindOne))
		if err != nil {
			t.Fatal(err)
		}
		s := d.(driver.ClientLoops)
		smp, err := s.NewClient(ctx)
		if err != nil {
			t.Fatal(err)
		}
		trip := drivertest.Trip
		hs := []drivertest.Trips{}
		if !v.Plain() {
			hs = append(hs, trip(netx.PhaseTLSHandshake, 1))
		}
		wantOp := slices.Concat([]drivertest.Trips{trip(netx.PhaseTCP, 1)}, hs, []drivertest.Trips{trip(PhaseHello, 1), trip(PhaseAuth, 2), trip(PhaseQuery, 1)})
		wantMon := slices.Concat([]drivertest.Trips{trip(netx.PhaseTCP, 1)}, hs, []drivertest.Trips{trip(PhaseHello, 1)})
		if got := drivertest.TripsOf(smp.Op); !slices.Equal(got, wantOp) {
			t.Errorf("%s: operation connection %v, want %v", v.TLS, got, wantOp)
		}
		if got := drivertest.TripsOf(smp.Monitor); !slices.Equal(got, wantMon) {
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
			if el, err := r.Op(ctx); err != nil || el <= 0 {
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
	drivertest.ConnectOnce(t, newDriver(t, cfg))
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
