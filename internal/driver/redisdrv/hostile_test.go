package redisdrv

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// hostileConfig is a plain session of the get workload with addr.
func hostileConfig(addr string, timeout time.Duration) driver.Config {
	u, _ := url.Parse("redis://" + addr + "/0")
	return driver.Config{Variant: plan.Variant{TLS: "off"}, Addr: addr, Host: "127.0.0.1", Dialer: &netx.Dialer{},
		Timeout: timeout, URL: u, Workload: driver.Workload{Name: WorkloadGet, Rows: testRows}}
}

// TestHostileReplies: a reply line without end, a value or an array of
// 2^31-1, sent at full speed or not at all, or bytes that are no reply,
// fail the operation at once with one line, the heap bounded.
func TestHostileReplies(t *testing.T) {
	const timeout = 2 * time.Second
	for _, tc := range []struct {
		name, head string
		endless    []byte
		want       string
	}{
		{"endless line", "+", []byte(strings.Repeat("a", 64<<10)), "sent a reply line longer than 64 KiB"},
		{"endless error", "-ERR ", []byte(strings.Repeat("a", 64<<10)), "sent a reply line longer than 64 KiB"},
		{"huge value, nothing after", "$2147483647\r\n", nil, "announced a value of 2147483647 bytes, more than the 1048576 the workload reads"},
		{"huge value, bytes after", "$2147483647\r\n", []byte(strings.Repeat("a", 64<<10)), "announced a value of 2147483647 bytes"},
		{"huge array", "*2147483647\r\n", nil, "announced an aggregate of 2147483647 elements"},
		{"padded length", "$" + strings.Repeat("0", 30) + "2147483647\r\n", nil, "sent a value length of 43 bytes"},
		{"not RESP", "\x93\x14d\xa0 garbage\r\n", nil, "sent a byte that begins no Redis reply (0x93): is it a Redis server?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := drivertest.Listen(t, func(c net.Conn) {
				go drivertest.Drain(c)
				c.Write([]byte(tc.head))
				if tc.endless != nil {
					drivertest.Endless(c, tc.endless, 0, 8<<30)
				}
			})
			err, took, growth := drivertest.OpenDo(newDriver(t, hostileConfig(addr, timeout)))
			drivertest.CheckFailure(t, err, took, growth, timeout, tc.want)
			if took > timeout/2 {
				t.Errorf("took %v: the bound should stop the read, not the timeout", took)
			}
		})
	}
}

// TestSlowDrip: a server that sends its reply one byte every 100 ms does
// not hold a GET past the timeout, however many reads it takes.
func TestSlowDrip(t *testing.T) {
	labtest.Slow(t)
	const timeout = time.Second
	for _, tc := range []struct{ name, head, drip string }{
		{"line", "+", "a"},
		{"value", "$100\r\n", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := drivertest.Listen(t, func(c net.Conn) {
				go drivertest.Drain(c)
				c.Write([]byte(tc.head))
				drivertest.Endless(c, []byte(tc.drip), 100*time.Millisecond, 1000)
			})
			err, took, growth := drivertest.OpenDo(newDriver(t, hostileConfig(addr, timeout)))
			drivertest.CheckFailure(t, err, took, growth, timeout, "did not answer within --timeout 1s")
			if took < timeout-100*time.Millisecond {
				t.Errorf("failed after %v, before the timeout", took)
			}
		})
	}
}

// TestWrongPorts: the causes of a failed session are named: nothing
// listening, a server that accepts and says nothing (stopped), a TLS port
// that closes on a plaintext request (crypto/tls; the lab's Redis resets
// it), and a server that resets or closes connections after it answered
// the check.
func TestWrongPorts(t *testing.T) {
	needServer(t)
	const timeout = time.Second
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	// A listener that never accepts: the kernel completes the connect
	// and queues the connection, as it does for a stopped (SIGSTOP)
	// server.
	stopped, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close()
	goTLS := drivertest.TLSListener(t)
	labTLS := configOf(t, srv, plan.Variant{TLS: "1.3"}, "/0", WorkloadGet)
	tlsTo := func(addr string) driver.Config {
		cfg := hostileConfig(addr, timeout)
		cfg.Variant, cfg.TLS = labTLS.Variant, labTLS.TLS
		return cfg
	}
	// A server that resets every connection, once it has answered one
	// (a run's check), is not a TLS port.
	resetting := drivertest.NewProxy(t, configOf(t, srv, plan.Variant{TLS: "off"}, "/0", WorkloadGet).Addr)
	resetting.Turn(drivertest.Reset)
	halfAnswering := drivertest.NewProxy(t, configOf(t, srv, plan.Variant{TLS: "off"}, "/0", WorkloadGet).Addr)
	halfAnswering.Turn(drivertest.CloseMidAnswer)
	answered := func(addr string, yes bool) driver.Config {
		cfg := hostileConfig(addr, timeout)
		cfg.Answered = new(atomic.Bool)
		cfg.Answered.Store(yes)
		return cfg
	}
	garbling := drivertest.NewProxy(t, labTLS.Addr)
	garbling.Turn(drivertest.Garbage)
	tlsAnswered := func(addr string) driver.Config {
		cfg := tlsTo(addr)
		cfg.Answered = new(atomic.Bool)
		cfg.Answered.Store(true)
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  driver.Config
		want string
	}{
		{"reset, never answered", answered(resetting.Addr, false), "closed the connection on the plaintext request: is it a TLS port? use rediss://"},
		{"reset after a check", answered(resetting.Addr, true), "reset the connection before answering, though it answered the check on that port: did it restart, or did something in between drop the connection?"},
		{"garbage for TLS after a check", tlsAnswered(garbling.Addr), "sent something that is not TLS, though it answered the check on that port over TLS"},
		{"stopped, TLS, after a check", tlsAnswered(stopped.Addr().String()), "accepted the connection but sent nothing within --timeout 1s: it is overloaded or stopped; if it is only slow (many clients at once), raise --timeout or use fewer clients (-c, --clients)"},
		{"closed mid-answer after a check", answered(halfAnswering.Addr, true), "closed the connection in mid-operation, though it answered the check on that port"},
		{"refused", hostileConfig(closedAddr, timeout), "nothing is listening at " + closedAddr + " (connection refused)"},
		{"stopped, plain", hostileConfig(stopped.Addr().String(), timeout), "accepted the connection but sent nothing within --timeout 1s: it is overloaded or stopped"},
		{"stopped, TLS", tlsTo(stopped.Addr().String()), "accepted the connection but sent nothing within --timeout 1s: it is overloaded or stopped"},
		{"plain to a Go TLS port", hostileConfig(goTLS, timeout), "closed the connection on the plaintext request: is it a TLS port? use rediss://"},
		{"plain to the lab's TLS port", hostileConfig(labTLS.Addr, timeout), "closed the connection on the plaintext request: is it a TLS port? use rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, took, growth := drivertest.OpenDo(newDriver(t, tc.cfg))
			drivertest.CheckFailure(t, err, took, growth, timeout, tc.want)
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
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "is not a regular file") || time.Since(start) > drivertest.Margin {
			t.Errorf("passfile %s: %v after %v", path, err, time.Since(start))
		}
		t.Log(err)
	}
}
