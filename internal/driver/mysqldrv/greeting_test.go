package mysqldrv

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
)

// TestClosedAtGreeting: a server that closes the connection before its
// greeting, or in the middle of it, as a MySQL server at its connection
// limit or blocking this host may, or a port that is no MySQL server, is
// one line that names those causes and their fixes, not "unexpected EOF";
// in plain and TLS variants alike, at once.
func TestClosedAtGreeting(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(net.Conn)
	}{
		{"at once", func(c net.Conn) { c.Close() }},
		{"reset", func(c net.Conn) {
			time.Sleep(50 * time.Millisecond) // the client waits for the greeting
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}},
		{"mid-greeting", func(c net.Conn) {
			c.Write([]byte{80, 0, 0, 0, 10, '1', '0'}) // a greeting header of 80 bytes, 3 of them
			c.Close()
		}},
	} {
		for _, tlsMode := range []string{"off", "1.3"} {
			t.Run(tc.name+" tls "+tlsMode, func(t *testing.T) {
				addr := drivertest.Listen(t, tc.serve)
				cfg := hostileConfig(addr, 5*time.Second)
				if tlsMode != "off" {
					cfg.Variant.TLS = tlsMode
					cfg.TLS = &tls.Config{InsecureSkipVerify: true} // never reached: no greeting
				}
				d, err := driver.New("mysql", cfg)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = d.Open(context.Background())
				took := time.Since(start)
				t.Logf("%v after %v", err, took.Round(time.Millisecond))
				var oe *driver.OpError
				if !errors.As(err, &oe) || oe.Phase != PhaseGreeting {
					t.Fatalf("Open: %v, want a greeting error", err)
				}
				for _, want := range []string{"closed the connection before its greeting", "max_connections", "FLUSH HOSTS", "max_connect_errors", "not a MySQL", "TLS"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q: want %q in it", err, want)
					}
				}
				if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
					t.Errorf("%q: a password or more than one line", err)
				}
				if took > 3*time.Second {
					t.Errorf("Open took %v", took)
				}
			})
		}
	}
}

// TestMaxConnections: a lab MariaDB at max_connections refuses the next
// connection at its greeting with one line that names max_connections and
// the fix.
func TestMaxConnections(t *testing.T) {
	srv := server(t)
	d, err := driver.New("mysql", config(t, srv, "off", "", "point-select", "simple"))
	if err != nil {
		t.Fatal(err)
	}
	var open []driver.Session
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	// The lab's limit is 300; the bound only keeps a wrong one finite.
	for len(open) < 600 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := d.Open(ctx)
		cancel()
		if err == nil {
			open = append(open, s)
			continue
		}
		t.Logf("after %d sessions: %v", len(open), err)
		var oe *driver.OpError
		if !errors.As(err, &oe) || oe.Phase != PhaseGreeting || !strings.Contains(err.Error(), "max_connections") || !strings.Contains(err.Error(), "-c") {
			t.Errorf("Open at the limit: %v, want a greeting error naming max_connections and -c", err)
		}
		return
	}
	t.Errorf("%d sessions opened: no limit reached", len(open))
}
