package redisdrv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The tests share one lab server with every key the tests present and
// testRows keys of data in databases 0 and 1.
var (
	srv      lab.Server
	startErr error
	testKeys = []string{"rsa2048", "rsa1024", "rsa4096", "ecdsa-p256"}
)

const testRows = 1000

func TestMain(m *testing.M) {
	flag.Parse()
	if startErr = labtest.Short(); startErr == nil {
		srv, startErr = lab.Start(context.Background(), "redis", lab.Options{Keys: testKeys})
	}
	if startErr == nil {
		var err error
		for _, db := range []string{"/0", "/1"} {
			var d driver.Driver
			if d, err = New(config(nil, plan.Variant{TLS: "off"}, db, WorkloadGet)); err == nil {
				err = d.(driver.Preparer).Prepare(context.Background(), 1, testRows, func(int64, int64) {})
			}
			if err != nil {
				break
			}
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
func config(t testing.TB, v plan.Variant, db, workload string) driver.Config {
	return configOf(t, srv, v, db, workload)
}

func configOf(t testing.TB, s lab.Server, v plan.Variant, db, workload string) driver.Config {
	cfg, err := drivertest.LabConfig(s, v, driver.Workload{Name: workload, Rows: testRows})
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Helper()
		t.Fatal(err)
	}
	cfg.URL.Path = db
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

// TestConformance runs the drivers' shared checks (drivertest.Conformance).
// AUTH is one round trip, with SELECT pipelined for a database other than
// 0; the first GET one; close none (no QUIT). Redis resumes TLS 1.2 and
// 1.3 sessions, and says whether a session came to its TLS port, not what
// it negotiated.
func TestConformance(t *testing.T) {
	needServer(t)
	drivertest.Conformance(t, drivertest.Engine{
		New: New,
		Config: func(t testing.TB, v plan.Variant, c drivertest.Case) driver.Config {
			return configOf(t, srv, v, c.Option, c.Workload.Name)
		},
		Cases: []drivertest.Case{{Name: "db 0", Option: "/0"}, {Name: "db 1", Option: "/1"},
			{Name: "db 0 ping", Option: "/0", Workload: driver.Workload{Name: plan.WorkloadPing}}},
		Phases: func(v plan.Variant, _ drivertest.Case, handshake int) []drivertest.Trips {
			p := []drivertest.Trips{drivertest.Trip(netx.PhaseTCP, 1)}
			if !v.Plain() {
				p = append(p, drivertest.Trip(netx.PhaseTLSHandshake, handshake))
			}
			return append(p, drivertest.Trip(PhaseAuth, 1), drivertest.Trip(PhaseQuery, 1), drivertest.Trip(netx.PhaseClose, 0))
		},
		QueryPhase: PhaseQuery,
		Resumes:    true,
		Server:     drivertest.ServerSeesTLS,
		Keys:       testKeys,
		UseKey:     srv.UseKey,
		Workloads: []drivertest.Workload{
			{Case: drivertest.Case{Name: WorkloadGet, Option: "/0", Workload: driver.Workload{Name: WorkloadGet}}, Statements: 1, MinBytes: valueSize},
			{Case: drivertest.Case{Name: WorkloadStream, Option: "/0", Workload: driver.Workload{Name: WorkloadStream}}, Statements: 1, MinBytes: int64(StreamSize(testRows))},
			{Case: drivertest.Case{Name: plan.WorkloadPing, Option: "/0", Workload: driver.Workload{Name: plan.WorkloadPing}}, Statements: 1, MinBytes: int64(len("+PONG\r\n"))},
		},
		Login: &drivertest.Login{Auths: []string{"password"}, Phase: PhaseAuth, Refused: "WRONGPASS", PasswordFile: srv.PasswordFile()},
	})
}

// TestSelect: a session of a database other than 0 reads that database:
// GET in an empty one finds no key (database 0 has it).
func TestSelect(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	s, err := newDriver(t, config(t, plan.Variant{TLS: "off"}, "/3", WorkloadGet)).Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Do(ctx); err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Errorf("GET in an empty database: %v, want no such key", err)
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

// TestPassword: a wrong user (at AUTH), and no password (at the first
// GET), are clear errors that show no password (the wrong password and
// passfile= are TestConformance's).
func TestPassword(t *testing.T) {
	needServer(t)
	data, err := os.ReadFile(srv.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(data))
	tests := []struct {
		name    string
		user    *url.Userinfo
		phase   string
		wantErr string
	}{
		{"wrong user", url.UserPassword("nobody", password), PhaseAuth, "WRONGPASS"},
		{"no password", url.User("bench"), PhaseQuery, "NOAUTH"},
	}
	for _, tc := range tests {
		for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3"}} {
			t.Run(tc.name+" tls "+v.TLS, func(t *testing.T) {
				cfg := config(t, v, "/0", WorkloadGet)
				cfg.URL.User = tc.user
				ctx := context.Background()
				s, err := newDriver(t, cfg).Open(ctx)
				if err == nil {
					err = s.Do(ctx)
					s.Close()
				}
				var oe *driver.OpError
				switch {
				case err == nil:
					t.Fatal("no error")
				case !errors.As(err, &oe) || oe.Phase != tc.phase || !strings.Contains(err.Error(), tc.wantErr):
					t.Errorf("error %q, want a %s error with %s", err, tc.phase, tc.wantErr)
				case strings.Contains(err.Error(), password):
					t.Errorf("error %q shows the password", err)
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
