package mysqldrv

import (
	"context"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func hostileConfig(addr string, timeout time.Duration) driver.Config {
	u, _ := url.Parse("mysql://bench:secret@" + addr + "/sbtest")
	return driver.Config{Variant: plan.Variant{TLS: "off"}, Addr: addr, Host: addr, Dialer: &netx.Dialer{},
		Timeout: timeout, URL: u, Workload: driver.Workload{Tables: 1, Rows: 1}}
}

// TestSilentAndSlowServers: a server that accepts and never greets, and
// one that drips its greeting a byte every 100 ms, end Open at the
// timeout with one line that says which.
func TestSilentAndSlowServers(t *testing.T) {
	labtest.Slow(t)
	const timeout = time.Second
	for _, tc := range []struct {
		name  string
		serve func(net.Conn)
		want  string
	}{
		{"silent", drivertest.Drain, "accepted the connection but sent nothing within --timeout 1s: it is overloaded or stopped"},
		{"slow", func(c net.Conn) {
			// A greeting header of 80 bytes, then its body slowly.
			c.Write([]byte{80, 0, 0, 0})
			drivertest.Endless(c, []byte{10}, 100*time.Millisecond, 1000)
		}, "did not answer within --timeout 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := drivertest.Listen(t, tc.serve)
			d, err := driver.New("mysql", hostileConfig(addr, timeout))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = d.Open(context.Background())
			took := time.Since(start)
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != PhaseGreeting || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("Open: %v, want a greeting error with %q", err, tc.want)
			}
			if took > timeout+time.Second {
				t.Errorf("Open took %v", took)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
		})
	}
}

// TestPassfileNotAFile: passfile=/dev/zero or a FIFO is one line from New,
// at once.
func TestPassfileNotAFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pass")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", fifo} {
		cfg := hostileConfig("127.0.0.1:1", time.Second)
		cfg.URL.RawQuery = url.Values{"passfile": {path}}.Encode()
		start := time.Now()
		_, err := driver.New("mysql", cfg)
		if err == nil || !strings.Contains(err.Error(), "is not a regular file") || time.Since(start) > time.Second {
			t.Errorf("passfile %s: %v after %v", path, err, time.Since(start))
		}
		t.Log(err)
	}
}
