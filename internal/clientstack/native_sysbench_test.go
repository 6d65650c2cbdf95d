package clientstack

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestSysbench: sysbench's oltp_point_select drives libmariadb against
// the lab MariaDB, plain and TLS 1.3 (mutual, with the lab's client
// certificate in sysbench's fixed file names): the events it reports are
// the statements the server executed, on as many connections as threads,
// each over TLS where asked; a wrong password's run fails with the
// server's words and without the password, a missing table's with the
// table's name; connect is refused.
func TestSysbench(t *testing.T) {
	labtest.Slow(t)
	srv := sharedLab(t, "mysql")
	// sysbenchConfig is point selects over sbtest1's 100 rows in query
	// mode, the chain checked (sysbench never checks the name).
	sysbenchConfig := func(t *testing.T, tls, mode string) Config {
		cfg := srv.config(t, "libmariadb", tls)
		cfg.Workload, cfg.Verify, cfg.Rows, cfg.QueryMode = "point-select", "ca", 100, mode
		if tls != "off" {
			dir := filepath.Dir(srv.ca)
			cfg.Cert, cfg.Key = tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
		}
		return cfg
	}
	base := sysbenchConfig(t, "off", "prepared")
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
	ctx := context.Background()
	for _, tc := range []struct {
		tls, mode, counter string
	}{
		{"off", "prepared", "Com_stmt_execute"},
		{"1.3", "prepared", "Com_stmt_execute"},
		{"1.3", "simple", "Com_select"},
	} {
		t.Run(tc.tls+"-"+tc.mode, func(t *testing.T) {
			cfg := sysbenchConfig(t, tc.tls, tc.mode)
			c := startStack(t, cfg)
			stmts := srv.counter(t, tc.counter)
			const n = 300
			checkPool(t, c, srv, cfg, Run{Experiment: "pool", Concurrency: 2, MaxOps: n, Duration: time.Minute})
			if got := srv.counter(t, tc.counter) - stmts; got != n {
				t.Errorf("the server counted %d %s, want %d", got, tc.counter, n)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		c := startStack(t, base)
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
		c := startStack(t, cfg)
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "Access denied for user '"+cfg.User+"'@'127.0.0.1' (using password: YES) (error 1045)") || strings.Contains(err.Error(), cfg.Password) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no-table", func(t *testing.T) {
		cfg := base
		cfg.Tables = 2
		c := startStack(t, cfg)
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		if err == nil || !strings.HasSuffix(err.Error(), "Table '"+cfg.Database+".sbtest2' doesn't exist (error 1146)") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("connect", func(t *testing.T) {
		c := startStack(t, base)
		_, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
		var r *Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "has no reconnect option") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) { checkCancel(t, startStack(t, base), "sysbench", time.Second) })
}

func TestSysbenchRefusals(t *testing.T) {
	st := Stack{Name: "libmariadb", Engine: "mysql", Lang: "native"}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Stack: st, Workload: "ping", TLS: "off"}, "workload ping: sysbench here runs oltp_point_select (point-select)"},
		{Config{Stack: st, Workload: "point-select", TLS: "1.3", Verify: "full", CA: "ca.pem", Cert: "c", Key: "k"},
			"verify full: sysbench's --mysql-ssl=on checks the server's chain against cacert.pem in its directory, never its name, and cannot skip it: it runs against a server tlsbench started (--lab mariadb); against yours use --client mysqlclient (libmariadb too, the name checked)"},
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
