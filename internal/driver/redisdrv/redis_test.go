package redisdrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// The tests share one lab server with every key the tests present and
// testRows keys of data in database 0.
var (
	srv      lab.Server
	startErr error
	testKeys = []string{"rsa2048", "rsa1024", "rsa4096", "ecdsa-p256"}
)

const testRows = 1000

func TestMain(m *testing.M) {
	srv, startErr = lab.Start(context.Background(), "redis", lab.Options{Keys: testKeys})
	if startErr == nil {
		d, err := New(config(nil, plan.Variant{TLS: "off"}, "/0", WorkloadGet))
		if err == nil {
			err = d.(driver.Preparer).Prepare(context.Background(), 1, testRows, func(int64, int64) {})
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

// config is the driver config of variant v against the shared server, with
// the URL's database path db; t may be nil (TestMain).
func config(t *testing.T, v plan.Variant, db, workload string) driver.Config {
	return configOf(t, srv, v, db, workload)
}

func configOf(t *testing.T, s lab.Server, v plan.Variant, db, workload string) driver.Config {
	fail := func(err error) {
		if t == nil {
			panic(err)
		}
		t.Helper()
		t.Fatal(err)
	}
	raw, err := s.URL("", !v.Plain())
	if err != nil {
		fail(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		fail(err)
	}
	u.Path = db
	cfg := driver.Config{
		Variant: v, Addr: u.Host, Host: u.Hostname(), Dialer: &netx.Dialer{}, Timeout: 10 * time.Second, URL: u,
		Workload: driver.Workload{Name: workload, Rows: testRows},
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

// TestRoundTrips checks every phase's round trips, which are exact: AUTH is
// one round trip (with SELECT pipelined for a database other than 0), the
// first GET one, close none; a resumed TLS 1.2 handshake takes one round
// trip instead of two.
func TestRoundTrips(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	plain := []phaseTrips{{"tcp", 1}, {"auth", 1}, {"query", 1}, {"close", 0}}
	full := func(hs int) []phaseTrips {
		return []phaseTrips{{"tcp", 1}, {"tls-handshake", hs}, {"auth", 1}, {"query", 1}, {"close", 0}}
	}
	tests := []struct {
		name    string
		variant plan.Variant
		db      string
		// first and later connections of one driver (later ones resume
		// when the variant does)
		first, later []phaseTrips
	}{
		{"plain", plan.Variant{TLS: "off"}, "/0", plain, plain},
		{"plain db 1", plan.Variant{TLS: "off"}, "/1", plain, plain},
		{"tls1.2", plan.Variant{TLS: "1.2"}, "/0", full(2), full(2)},
		{"tls1.3", plan.Variant{TLS: "1.3"}, "/0", full(1), full(1)},
		{"tls1.3 db 1", plan.Variant{TLS: "1.3"}, "/1", full(1), full(1)},
		{"tls1.2 resume", plan.Variant{TLS: "1.2", Resume: true}, "/0", full(2), full(1)},
		{"tls1.3 resume", plan.Variant{TLS: "1.3", Resume: true}, "/0", full(1), full(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, config(t, tc.variant, tc.db, WorkloadGet))
			for i, want := range [][]phaseTrips{tc.first, tc.later, tc.later} {
				tr, state := connectOnceTolerant(t, d, tc.db != "/0")
				if got := tripsOf(tr); !slices.Equal(got, want) {
					t.Errorf("connection %d: phases %v, want %v", i, got, want)
				}
				if tc.variant.Resume && state.DidResume != (i > 0) {
					t.Errorf("connection %d: resumed %v", i, state.DidResume)
				}
			}
		})
	}
}

// connectOnceTolerant is connectOnce that, in an empty database, accepts the
// "no such key" the operation gets, which still took its round trip (and
// shows that SELECT took effect: database 0 has the key).
func connectOnceTolerant(t *testing.T, d driver.Driver, empty bool) (netx.Trace, tls.ConnectionState) {
	t.Helper()
	if !empty {
		return connectOnce(t, d)
	}
	ctx := context.Background()
	s, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx); err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Errorf("GET in an empty database: %v, want no such key", err)
	}
	state, _ := s.TLS()
	s.Close()
	return s.Conn().Finish(), state
}

// TestPhaseTimes logs the median of each phase, plain and with TLS and
// rsa2048, over interleaved connections, for the record; TLS must cost
// something.
func TestPhaseTimes(t *testing.T) {
	needServer(t)
	useKey(t, "rsa2048")
	variants := []plan.Variant{{TLS: "off"}, {TLS: "1.3"}, {TLS: "1.2"}}
	names := []string{"plain", "tls1.3 rsa2048", "tls1.2 rsa2048"}
	drivers := make([]driver.Driver, len(variants))
	for i, v := range variants {
		drivers[i] = newDriver(t, config(t, v, "/0", WorkloadGet))
	}
	const n = 101
	times := make([]map[string][]time.Duration, len(variants))
	totals := make([][]time.Duration, len(variants))
	for i := range times {
		times[i] = map[string][]time.Duration{}
	}
	for range n {
		for i, d := range drivers {
			tr, _ := connectOnce(t, d)
			for _, p := range tr.Phases {
				times[i][p.Name] = append(times[i][p.Name], p.Duration)
			}
			totals[i] = append(totals[i], tr.Total())
		}
	}
	for i := range variants {
		var parts []string
		for _, name := range []string{"tcp", "tls-handshake", "auth", "query", "close"} {
			if ds := times[i][name]; len(ds) > 0 {
				parts = append(parts, fmt.Sprintf("%s %v", name, median(ds)))
			}
		}
		t.Logf("%-14s %s; total %v (medians of %d)", names[i], strings.Join(parts, ", "), median(totals[i]), n)
	}
	if median(totals[1]) <= median(totals[0]) {
		t.Errorf("a TLS 1.3 connection (%v) is not slower than a plain one (%v)", median(totals[1]), median(totals[0]))
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestServerTLS checks that the server's view agrees with the client's.
func TestServerTLS(t *testing.T) {
	needServer(t)
	for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.2"}, {TLS: "1.3"}} {
		t.Run(v.TLS, func(t *testing.T) {
			ctx := context.Background()
			s, err := newDriver(t, config(t, v, "/0", WorkloadGet)).Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			view, err := s.(driver.ServerChecker).ServerTLS(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, clientTLS := s.TLS()
			if view.TLS != !v.Plain() || clientTLS != !v.Plain() {
				t.Errorf("server says TLS %v, client %v; want %v", view.TLS, clientTLS, !v.Plain())
			}
			if view.Version != "" || view.Cipher != "" {
				t.Errorf("server view %+v: Redis reports no version or cipher", view)
			}
		})
	}
}

// TestKeys presents every key type and connects with TLS 1.2 and 1.3.
func TestKeys(t *testing.T) {
	needServer(t)
	for _, key := range testKeys {
		useKey(t, key)
		for _, version := range []string{"1.2", "1.3"} {
			t.Run(key+" tls"+version, func(t *testing.T) {
				_, state := connectOnce(t, newDriver(t, config(t, plan.Variant{TLS: version, Key: key}, "/0", WorkloadGet)))
				if got := tlsx.KeyTypeOf(tlsx.PeerKey(state.PeerCertificates[0])); got != key {
					t.Errorf("presented %s, want %s", got, key)
				}
				if want := map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[version]; state.Version != want {
					t.Errorf("negotiated %s", tls.VersionName(state.Version))
				}
			})
		}
	}
}

// TestKeyCost checks that the key's size shows where it should: an
// rsa4096 handshake is slower than an rsa2048 one.
func TestKeyCost(t *testing.T) {
	needServer(t)
	keys := []string{"rsa2048", "rsa4096"}
	d := newDriver(t, config(t, plan.Variant{TLS: "1.3"}, "/0", WorkloadGet))
	hs := map[string][]time.Duration{}
	for range 21 {
		for _, key := range keys {
			useKey(t, key)
			tr, _ := connectOnce(t, d)
			p, _ := tr.Phase(netx.PhaseTLSHandshake)
			hs[key] = append(hs[key], p.Duration)
		}
	}
	small, large := median(hs["rsa2048"]), median(hs["rsa4096"])
	t.Logf("TLS 1.3 handshake medians: rsa2048 %v, rsa4096 %v (%.1fx)", small, large, float64(large)/float64(small))
	if float64(large) < 1.3*float64(small) {
		t.Errorf("rsa4096 handshake %v is not 1.3x slower than rsa2048's %v", large, small)
	}
	useKey(t, "rsa2048")
}

// TestWorkloads runs both workloads and checks what they read.
func TestWorkloads(t *testing.T) {
	needServer(t)
	tests := []struct {
		workload string
		minRead  int64
	}{
		{WorkloadGet, valueSize},
		{WorkloadStream, int64(StreamSize(testRows))},
	}
	for _, tc := range tests {
		t.Run(tc.workload, func(t *testing.T) {
			ctx := context.Background()
			s, err := newDriver(t, config(t, plan.Variant{TLS: "1.3"}, "/0", tc.workload)).Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for range 3 {
				_, before := s.Conn().Counters()
				if err := s.Do(ctx); err != nil {
					t.Fatal(err)
				}
				if _, after := s.Conn().Counters(); after-before < tc.minRead {
					t.Errorf("read %d bytes, want at least %d", after-before, tc.minRead)
				}
			}
		})
	}
	if _, err := New(config(t, plan.Variant{TLS: "off"}, "/0", "point-select")); err == nil {
		t.Error("an unknown workload was accepted")
	}
}

// TestPrepare checks that Prepare writes the data once, skips it when it is
// there and trims a larger run's keys, in database 2.
func TestPrepare(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	cfg := config(t, plan.Variant{TLS: "off"}, "/2", WorkloadGet)
	p := newDriver(t, cfg).(driver.Preparer)
	admin := adminClient(t, cfg)
	dbsize := func() int64 {
		n, err := admin.DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	prepare := func(rows int) (calls int, last int64) {
		start := time.Now()
		err := p.Prepare(ctx, 8, rows, func(done, total int64) {
			calls++
			if done > total {
				t.Errorf("progress %d of %d", done, total)
			}
			last = total - done
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("prepare %d rows: %d progress calls, %v", rows, calls, time.Since(start))
		return calls, last
	}
	admin.FlushDB(ctx)
	if calls, left := prepare(2500); calls != 4 || left != 0 {
		t.Errorf("first prepare: %d progress calls, %d left; want 4 (3 batches and the stream), 0", calls, left)
	}
	if n := dbsize(); n != 2501 {
		t.Errorf("DBSIZE %d, want 2501", n)
	}
	// A value of the right size but changed content shows whether the
	// second run wrote again.
	marker := strings.Repeat("m", valueSize)
	admin.Set(ctx, "key:7", marker, 0)
	if calls, _ := prepare(2500); calls != 1 {
		t.Errorf("second prepare: %d progress calls, want 1 (nothing to do)", calls)
	}
	if v := admin.Get(ctx, "key:7").Val(); v != marker {
		t.Error("the second prepare wrote the data again")
	}
	prepare(1200)
	if n := dbsize(); n != 1201 {
		t.Errorf("DBSIZE after preparing fewer rows %d, want 1201", n)
	}
	if l := admin.StrLen(ctx, streamKey).Val(); l != int64(StreamSize(1200)) {
		t.Errorf("%s is %d bytes, want %d", streamKey, l, StreamSize(1200))
	}
	admin.FlushDB(ctx)
}

// adminClient is a plain go-redis client of cfg's server and database, to
// look at the data from outside the driver.
func adminClient(t *testing.T, cfg driver.Config) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(cfg.URL.String())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPassword checks the passfile= form and that a wrong password is a
// clear auth error that shows no password.
func TestPassword(t *testing.T) {
	needServer(t)
	data, err := os.ReadFile(srv.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(data))
	const wrong = "not-the-password-4711"
	tests := []struct {
		name    string
		user    *url.Userinfo
		query   string
		wantErr string
	}{
		{"passfile", url.User("bench"), "passfile=" + url.QueryEscape(srv.PasswordFile()), ""},
		{"wrong password", url.UserPassword("bench", wrong), "", "WRONGPASS"},
		{"wrong user", url.UserPassword("nobody", password), "", "WRONGPASS"},
		{"no password", url.User("bench"), "", "NOAUTH"},
	}
	for _, tc := range tests {
		for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3"}} {
			t.Run(tc.name+" tls "+v.TLS, func(t *testing.T) {
				cfg := config(t, v, "/0", WorkloadGet)
				cfg.URL.User, cfg.URL.RawQuery = tc.user, tc.query
				ctx := context.Background()
				d := newDriver(t, cfg)
				s, err := d.Open(ctx)
				if err == nil {
					err = s.Do(ctx)
					s.Close()
				}
				if tc.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				var oe *driver.OpError
				switch {
				case err == nil:
					t.Fatal("no error")
				case !errors.As(err, &oe) || oe.Phase == "" || !strings.Contains(err.Error(), tc.wantErr):
					t.Errorf("error %q, want a phase and %s", err, tc.wantErr)
				case strings.Contains(err.Error(), password) || strings.Contains(err.Error(), wrong):
					t.Errorf("error %q shows a password", err)
				}
				t.Logf("%v", err)
			})
		}
	}
}

// TestTLSToPlainPort asks for TLS where the server has none: its plaintext
// port, and a server started without TLS. Redis stays silent (or answers
// -ERR), so the handshake ends with its timeout.
func TestTLSToPlainPort(t *testing.T) {
	needServer(t)
	plainOnly := labtest.Start(t, "redis", lab.Options{Keys: []string{"ecdsa-p256"}, PlainOnly: true})
	for _, s := range []lab.Server{srv, plainOnly} {
		cfg := configOf(t, s, plan.Variant{TLS: "off"}, "/0", WorkloadGet)
		cfg.TLS = config(t, plan.Variant{TLS: "1.3"}, "/0", WorkloadGet).TLS
		cfg.Timeout = 500 * time.Millisecond
		_, err := newDriver(t, cfg).Open(context.Background())
		var oe *driver.OpError
		if !errors.As(err, &oe) || oe.Phase != netx.PhaseTLSHandshake || !strings.Contains(err.Error(), "plaintext port") {
			t.Errorf("TLS to %s: %v, want a tls-handshake error that names the plaintext port", cfg.Addr, err)
		}
		t.Logf("%v", err)
	}
	if _, err := plainOnly.URL("", true); err == nil {
		t.Error("a PlainOnly server gave a TLS URL")
	}
}

// TestCancel checks that cancelling the context ends at once a step the
// server does not answer (CLIENT PAUSE): logging in, or an operation.
func TestCancel(t *testing.T) {
	needServer(t)
	const pause, cancelAfter = time.Second, 100 * time.Millisecond
	admin := adminClient(t, config(t, plan.Variant{TLS: "off"}, "/0", WorkloadGet))
	for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3"}} {
		for _, step := range []string{"open", "do"} {
			t.Run(v.TLS+" "+step, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				d := newDriver(t, config(t, v, "/0", WorkloadGet))
				var s driver.Session
				if step == "do" {
					var err error
					if s, err = d.Open(ctx); err != nil {
						t.Fatal(err)
					}
					defer s.Close()
				}
				if err := admin.ClientPause(ctx, pause).Err(); err != nil {
					t.Fatal(err)
				}
				defer time.Sleep(pause) // let the pause end before the next test
				time.AfterFunc(cancelAfter, cancel)
				start := time.Now()
				var err error
				if step == "do" {
					err = s.Do(ctx)
				} else {
					s, err = d.Open(ctx)
					if err == nil {
						s.Close()
					}
				}
				took := time.Since(start)
				if err == nil || took > pause/2 {
					t.Errorf("%s returned %v after %v, want an error soon after the cancel at %v", step, err, took, cancelAfter)
				}
				if want := map[string]string{"open": "auth: canceled", "do": "query: canceled"}[step]; driver.Kind(err) != want {
					t.Errorf("error kind %q, want %q", driver.Kind(err), want)
				}
				t.Logf("cancelled %s: %v after %v", step, err, took)
			})
		}
	}
}
