package mysqldrv

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The lab server the tests share, started on first use, with the sbtest
// tables every test reads.
var (
	labOnce sync.Once
	labSrv  lab.Server
	labErr  error
)

const (
	testTables = 2
	testRows   = 200
)

var testKeys = []string{"rsa2048", "rsa1024", "rsa4096", "ecdsa-p256"}

func TestMain(m *testing.M) {
	code := m.Run()
	if labSrv != nil {
		labSrv.Stop()
	}
	os.Exit(code)
}

// server returns the shared lab MariaDB. Without its binaries the test is
// skipped, except in CI, where that is a failure.
func server(t testing.TB) lab.Server {
	t.Helper()
	labOnce.Do(func() {
		if labErr = labtest.Short(); labErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		labSrv, labErr = lab.Start(ctx, "mariadb", lab.Options{Keys: testKeys})
		if labErr != nil {
			return
		}
		d, err := driver.New("mysql", config(t, labSrv, "off", "", "point-select", "simple"))
		if err == nil {
			err = d.(driver.Preparer).Prepare(ctx, testTables, testRows, nil)
		}
		labErr = err
	})
	labtest.Check(t, labErr)
	return labSrv
}

// config is the driver config of one variant: tlsMode off, 1.2 or 1.3.
func config(t testing.TB, srv lab.Server, tlsMode, auth, workload, mode string) driver.Config {
	t.Helper()
	return variantConfig(t, srv, plan.Variant{TLS: tlsMode, Auth: auth}, workload, mode)
}

func variantConfig(t testing.TB, srv lab.Server, v plan.Variant, workload, mode string) driver.Config {
	t.Helper()
	cfg, err := drivertest.LabConfig(srv, v, driver.Workload{Name: workload, QueryMode: mode, Tables: testTables, Rows: testRows})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serverView asks the server about a fresh session's encryption.
func serverView(t *testing.T, cfg driver.Config) driver.ServerView {
	t.Helper()
	d, err := driver.New("mysql", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, d)
	defer s.Close()
	v, err := s.(driver.ServerChecker).ServerTLS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// open opens a session. An ed25519 login that meets the driver's flaw
// (ed25519Flaw, 1 in 256) is tried again, so that tests of other things do
// not fail by chance; TestEd25519Flaw is about the flaw.
func open(t testing.TB, d driver.Driver) driver.Session {
	t.Helper()
	for range 5 {
		s, err := d.Open(context.Background())
		if errors.Is(err, mysql.ErrMalformPkt) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Fatal("5 logins in a row failed with a malformed packet")
	return nil
}

// TestEd25519Flaw: about 1 ed25519 login in 256 fails in go-sql-driver/mysql
// v1.10.1; the error says why. When the driver is fixed, this test only
// logs that no login failed.
func TestEd25519Flaw(t *testing.T) {
	srv := server(t)
	d, err := driver.New("mysql", config(t, srv, "off", "ed25519", "point-select", "simple"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		s, err := d.Open(context.Background())
		if err == nil {
			s.Close()
			continue
		}
		var oe *driver.OpError
		if !errors.As(err, &oe) || oe.Phase != PhaseAuth || !errors.Is(err, mysql.ErrMalformPkt) || !strings.Contains(err.Error(), "whose last random byte is 0") {
			t.Fatalf("login %d: %v", i, err)
		}
		t.Logf("login %d failed as the driver's flaw makes it: %v", i, err)
		return
	}
	t.Log("3000 ed25519 logins succeeded: has go-sql-driver/mysql been fixed? Then drop ed25519Flaw")
}

// TestConformance runs the drivers' shared checks (drivertest.Conformance):
// the greeting is one round trip (the server speaks first), the SSL request
// none, a native login one and an ed25519 login two (the server switches
// the client from mysql_native_password to client_ed25519), a first query
// one in text mode and two prepared (COM_STMT_PREPARE, then
// COM_STMT_EXECUTE), close none. MariaDB resumes TLS 1.2 and 1.3 sessions
// and names version and cipher (Ssl_version, Ssl_cipher).
func TestConformance(t *testing.T) {
	drivertest.Conformance(t, engine(t))
}

// engine describes MariaDB and the shared server to drivertest.
func engine(t testing.TB) drivertest.Engine {
	srv := server(t)
	authTrips := map[string]int{"mysql_native_password": 1, "ed25519": 2}
	queryTrips := map[string]int{"simple": 1, "prepared": 2}
	var cases []drivertest.Case
	for _, auth := range []string{"mysql_native_password", "ed25519"} {
		for _, mode := range []string{"prepared", "simple"} {
			cases = append(cases, drivertest.Case{Name: auth + " " + mode, Auth: auth, Workload: driver.Workload{Name: "point-select", QueryMode: mode}})
		}
	}
	// A URL target's connect pings: SELECT 1 as text, whatever the mode.
	cases = append(cases, drivertest.Case{Name: "mysql_native_password ping", Auth: "mysql_native_password", Workload: driver.Workload{Name: plan.WorkloadPing}})
	queryTrips[""] = 1
	var workloads []drivertest.Workload
	for _, w := range []struct {
		name       string
		statements int
		minBytes   int64 // the server's answers at least
	}{
		{"point-select", 1, 120},
		{"read-only", 16, pointSelects * 120}, // ranges may pass the last id
		{"stream", 1, testRows * (4 + 120 + 60)},
	} {
		for _, mode := range []string{"simple", "prepared"} {
			workloads = append(workloads, drivertest.Workload{
				Case:       drivertest.Case{Name: w.name + " " + mode, Workload: driver.Workload{Name: w.name, QueryMode: mode}},
				Statements: w.statements, MinBytes: w.minBytes,
			})
		}
	}
	workloads = append(workloads, drivertest.Workload{Case: drivertest.Case{Name: plan.WorkloadPing, Workload: driver.Workload{Name: plan.WorkloadPing}}, Statements: 1, MinBytes: 1})
	return drivertest.Engine{
		New: New,
		Config: func(t testing.TB, v plan.Variant, c drivertest.Case) driver.Config {
			return variantConfig(t, srv, v, c.Workload.Name, c.Workload.QueryMode)
		},
		Cases: cases,
		Phases: func(v plan.Variant, c drivertest.Case, handshake int) []drivertest.Trips {
			p := []drivertest.Trips{drivertest.Trip(netx.PhaseTCP, 1), drivertest.Trip(PhaseGreeting, 1)}
			if !v.Plain() {
				p = append(p, drivertest.Trip(netx.PhaseTLSHandshake, handshake))
			}
			return append(p, drivertest.Trip(PhaseAuth, authTrips[cmp.Or(c.Auth, srv.Auths()[0])]),
				drivertest.Trip(PhaseQuery, queryTrips[c.Workload.QueryMode]), drivertest.Trip(netx.PhaseClose, 0))
		},
		QueryPhase: PhaseQuery,
		Resumes:    true,
		Server:     drivertest.ServerSeesSuite,
		Keys:       testKeys,
		UseKey:     srv.UseKey,
		Retry:      func(err error) bool { return errors.Is(err, mysql.ErrMalformPkt) },
		Workloads:  workloads,
		Login: &drivertest.Login{Auths: []string{"mysql_native_password", "ed25519"}, Phase: PhaseAuth,
			Refused: "Access denied for user 'bench_", PasswordFile: srv.PasswordFile()},
	}
}

// BenchmarkPhaseTimes prints the median time of each connection phase
// per auth method, with and without TLS, in ms: figures, not invariants
// (the round-trip tests hold those).
func BenchmarkPhaseTimes(b *testing.B) {
	drivertest.PhaseTimes(b, engine(b), 30, []plan.Variant{
		{TLS: "off", Auth: "mysql_native_password"}, {TLS: "1.3", Auth: "mysql_native_password"}, {TLS: "off", Auth: "ed25519"}, {TLS: "1.3", Auth: "ed25519"}})
}

// TestErrors: failures name their phase and say what went wrong, and
// never show the password (a wrong one, and passfile=, are
// TestConformance's).
func TestErrors(t *testing.T) {
	srv := server(t)
	good := config(t, srv, "1.3", "", "point-select", "simple")
	password, _ := good.URL.User.Password()

	noFile := good
	noFile.URL = cloneURL(good.URL)
	noFile.URL.User = url.User(good.URL.User.Username())
	noFile.URL.RawQuery = "passfile=/nonexistent/passfile"
	refused := good
	refused.Addr = closedPort(t)
	unknownCA := good
	unknownCA.TLS = &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}

	for _, tc := range []struct {
		name    string
		cfg     driver.Config
		phase   string
		want    string
		newFail bool // New fails, not Open
	}{
		{"missing password file", noFile, "", "reading the password file", true},
		{"refused", refused, netx.PhaseTCP, "connection refused", false},
		{"unknown CA", unknownCA, netx.PhaseTLSHandshake, "is signed by an unknown authority: pass --ca FILE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := driver.New("mysql", tc.cfg)
			if tc.newFail {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("New: %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Open(context.Background())
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != tc.phase || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want a %s error with %q", err, tc.phase, tc.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Error("the error shows the password")
			}
		})
	}

	u := cloneURL(good.URL)
	u.RawQuery = "parseTime=true"
	bad := good
	bad.URL = u
	if _, err := driver.New("mysql", bad); err == nil || !strings.Contains(err.Error(), `"parseTime" is not supported`) {
		t.Errorf("unknown URL parameter: %v", err)
	}
}

// TestTLSOfPlainServer: a client that asks for TLS is told clearly that a
// server without TLS has none, and does not fall back to plaintext.
func TestTLSOfPlainServer(t *testing.T) {
	server(t)
	plain := labtest.Start(t, "mariadb", lab.Options{Keys: []string{"rsa2048"}, PlainOnly: true})
	cfg := config(t, plain, "1.3", "", "point-select", "simple")
	cfg.TLS = &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	d, err := driver.New("mysql", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(context.Background())
	if err == nil {
		s.Close()
		t.Fatal("TLS session with a plain-only server opened")
	}
	var oe *driver.OpError
	if !errors.As(err, &oe) || oe.Phase != PhaseGreeting || !errors.Is(err, mysql.ErrNoTLS) || !strings.Contains(err.Error(), "does not offer TLS") {
		t.Errorf("got %v", err)
	}
	if v := serverView(t, config(t, plain, "off", "", "point-select", "simple")); v.TLS {
		t.Errorf("plain session: the server says %+v", v)
	}
}

func cloneURL(u *url.URL) *url.URL {
	c := *u
	return &c
}

func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
