package clientstack

import (
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestSysbench: sysbench's oltp_point_select drives libmariadb against a
// lab MariaDB, plain and TLS 1.3 (mutual, with the lab's client
// certificate in sysbench's fixed file names): the events it reports are
// the statements the server executed, on as many connections as threads,
// each over TLS where asked; a wrong password's run fails with the
// server's words and without the password, a missing table's with the
// table's name; connect is refused.
func TestSysbench(t *testing.T) {
	labtest.Slow(t)
	s := labtest.Start(t, "mariadb", lab.Options{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256"}})
	base := labConfig(t, s, "mysql", "libmariadb", "", "off")
	base.Workload, base.Verify = "point-select", "ca"
	db, err := sql.Open("mysql", base.User+":"+base.Password+"@tcp("+net.JoinHostPort(base.Host, strconv.Itoa(base.Port))+")/"+base.Database)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{"DROP TABLE IF EXISTS sbtest1",
		"CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
		"INSERT INTO sbtest1 SELECT seq, seq, 'c', 'pad' FROM seq_1_to_100"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) int64 {
		var k string
		var v int64
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	dir := filepath.Dir(s.CAFile())
	ctx := context.Background()
	for _, tc := range []struct {
		tls, mode, counter string
	}{
		{"off", "prepared", "Com_stmt_execute"},
		{"1.3", "prepared", "Com_stmt_execute"},
		{"1.3", "simple", "Com_select"},
	} {
		t.Run(tc.tls+"-"+tc.mode, func(t *testing.T) {
			cfg := base
			cfg.QueryMode = tc.mode
			if tc.tls != "off" {
				cfg.TLS, cfg.Port = tc.tls, labConfig(t, s, "mysql", "libmariadb", "", tc.tls).Port
				cfg.Cert, cfg.Key = tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
			}
			c := startNativeT(t, cfg)
			if h := c.Hello(); h.Stack != "libmariadb" || !strings.HasPrefix(h.Driver, "libmariadb/3.") || h.Model != "threads" {
				t.Errorf("hello %+v", h)
			}
			stmts, conns, accepts := status(tc.counter), status("Connections"), status("Ssl_accepts")
			const n = 300
			rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, MaxOps: n, Duration: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			tot := rep.Totals
			if tot == nil || tot.Ops != n || tot.Errors != 0 || rep.Ops != nil || rep.CPU <= 0 || rep.TLS != nil {
				t.Fatalf("report %+v, totals %+v", rep, tot)
			}
			if !(tot.P50 > 0 && tot.P50 <= tot.P95 && tot.P95 <= tot.P99 && tot.P99 <= tot.Max && tot.Mean > 0) {
				t.Errorf("latencies %+v", tot)
			}
			// The counters' own SHOW STATUS is not a statement of either.
			if got := status(tc.counter) - stmts; got != n {
				t.Errorf("the server counted %d %s, want %d", got, tc.counter, n)
			}
			wantTLS := int64(2)
			if tc.tls == "off" {
				wantTLS = 0
			}
			if c, a := status("Connections")-conns, status("Ssl_accepts")-accepts; c != 2 || a != wantTLS {
				t.Errorf("the server counted %d connections, %d TLS accepts; want 2, %d", c, a, wantTLS)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		c := startNativeT(t, base)
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Second, Warmup: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Totals == nil || rep.Totals.Ops < 10 || rep.Elapsed < time.Second || rep.Elapsed > 20*time.Second {
			t.Errorf("a 1 s run: %+v in %v", rep.Totals, rep.Elapsed)
		}
	})
	t.Run("wrong-password", func(t *testing.T) {
		cfg := base
		cfg.Password += "-wrong"
		c := startNativeT(t, cfg)
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "Access denied for user '"+cfg.User+"'@'127.0.0.1' (using password: YES) (error 1045)") || strings.Contains(err.Error(), cfg.Password) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no-table", func(t *testing.T) {
		cfg := base
		cfg.Tables = 2
		c := startNativeT(t, cfg)
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		if err == nil || !strings.HasSuffix(err.Error(), "Table '"+cfg.Database+".sbtest2' doesn't exist (error 1146)") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("connect", func(t *testing.T) {
		c := startNativeT(t, base)
		_, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		var r *Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "has no reconnect option") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		c := startNativeT(t, base)
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		began := time.Now()
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Minute})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 20*time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(began))
		}
		if kids := children(t, "sysbench"); len(kids) > 0 {
			t.Errorf("sysbench processes left: %v", kids)
		}
	})
}

func TestSysbenchRefusals(t *testing.T) {
	st := Stack{Name: "libmariadb", Engine: "mysql", Lang: "native"}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Stack: st, Workload: "ping", TLS: "off"}, "workload ping: sysbench here runs oltp_point_select (point-select)"},
		{Config{Stack: st, Workload: "point-select", TLS: "1.3", Verify: "full", CA: "ca.pem", Cert: "c", Key: "k"},
			"verify full: sysbench's --mysql-ssl=on checks the server's chain against cacert.pem in its directory, never its name (use --verify ca with a CA file)"},
		{Config{Stack: st, Workload: "point-select", TLS: "1.3", Verify: "ca", CA: "ca.pem"},
			"TLS without a client certificate: sysbench's --mysql-ssl=on always presents client-cert.pem and client-key.pem from its directory (mutual TLS): give one the server's CA signed"},
		{Config{Stack: st, Workload: "point-select", TLS: "off", Password: "a\nb"},
			"a password with a line break: sysbench's --config-file holds one option a line"},
	} {
		_, err := Start(context.Background(), tc.cfg)
		var r *Refused
		if !errors.As(err, &r) || err.Error() != "client libmariadb cannot run this variant: "+tc.want {
			t.Errorf("%+v: err = %v", tc.cfg, err)
		}
	}
}

// TestCurlSysbenchPins: what curl and libmariadb offer when a variant
// pins the TLS version and the group: curl by its flags (--tlsv1.x
// --tls-max, --curves), libmariadb under sysbench, which has none, by the
// OPENSSL_CONF file (after a MySQL greeting that offers TLS).
func TestCurlSysbenchPins(t *testing.T) {
	labtest.Slow(t)
	// Any certificate and key serve sysbench: the handshake never gets
	// that far.
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tlsx.WriteClientFiles(dir, ca, []string{"ecdsa-p256"}, "probe"); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		engine, stack string
		prelude       func(net.Conn) error
		tls, group    string
		version       uint16
		curve         tls.CurveID
	}{
		{"http", "curl", nil, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"http", "curl", nil, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
		{"mysql", "libmariadb", mysqlGreeting, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"mysql", "libmariadb", mysqlGreeting, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
	} {
		t.Run(tc.stack+"-"+tc.tls, func(t *testing.T) {
			st, err := Lookup(tc.engine, tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			port, hello := tlsProbe(t, tc.prelude)
			cfg := Config{Stack: st, Host: "127.0.0.1", Port: port, TLS: tc.tls, Verify: "none", Group: tc.group,
				Workload: "request", Path: "/", Timeout: 5 * time.Second}
			if tc.stack == "libmariadb" {
				cfg.User, cfg.Database, cfg.Verify, cfg.CA, cfg.Workload = "u", "d", "ca", caFile, "point-select"
				cfg.Cert, cfg.Key = tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
			}
			c := startNativeT(t, cfg)
			// curl's transfer fails (its one operation); sysbench's run.
			rep, err := c.Run(context.Background(), Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
			if err == nil && (len(rep.Ops) != 1 || rep.Ops[0].Phase != "tls-handshake") {
				t.Errorf("a run against a probe: ops %+v", rep.Ops)
			}
			select {
			case h := <-hello:
				checkHello(t, h, tc.version, tc.curve)
			case <-time.After(10 * time.Second):
				t.Fatal("no ClientHello")
			}
		})
	}
}

// mysqlGreeting plays a MySQL server up to TLS: a protocol 10 greeting
// that offers it, then the client's SSL request read.
func mysqlGreeting(c net.Conn) error {
	const caps = 1 | 8 | 0x200 | 0x800 | 0x2000 | 0x8000 | 0x80000 // long password, db, 4.1, SSL, transactions, secure, plugin auth
	p := []byte{10}
	p = append(p, "5.7.0-probe\x00"...)
	p = binary.LittleEndian.AppendUint32(p, 1)
	p = append(p, "abcdefgh\x00"...)
	p = binary.LittleEndian.AppendUint16(p, caps&0xffff)
	p = append(p, 0x21, 2, 0)
	p = binary.LittleEndian.AppendUint16(p, caps>>16)
	p = append(p, 21)
	p = append(p, make([]byte, 10)...)
	p = append(p, "ijklmnopqrst\x00"...)
	p = append(p, "mysql_native_password\x00"...)
	hdr := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}
	if _, err := c.Write(append(hdr, p...)); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, hdr); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16))
	return err
}

// tlsProbe listens on loopback for one TLS connection, after prelude (if
// any) on the raw connection, and returns what its ClientHello offered; the
// handshake is then refused.
func tlsProbe(t *testing.T, prelude func(net.Conn) error) (port int, hello <-chan *tls.ClientHelloInfo) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan *tls.ClientHelloInfo, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if prelude != nil && prelude(c) != nil {
			return
		}
		tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			ch <- h
			return nil, errors.New("seen")
		}}).Handshake()
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}
