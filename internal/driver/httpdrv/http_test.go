package httpdrv

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

func plainConfig(addr string, timeout time.Duration) driver.Config {
	return driver.Config{Variant: plan.Variant{TLS: "off"}, Addr: addr, Host: addr, Path: "/",
		Dialer: &netx.Dialer{}, Timeout: timeout}
}

// request opens a session with cfg and runs one GET (see
// drivertest.OpenDo).
func request(t *testing.T, cfg driver.Config) (err error, took time.Duration, growth uint64) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return drivertest.OpenDo(d)
}

// TestEndlessHeader: a server that sends a header line without end, as
// fast as it can, is refused at 64 KiB of headers, at once.
func TestEndlessHeader(t *testing.T) {
	addr := drivertest.Listen(t, func(c net.Conn) {
		go drivertest.Drain(c)
		c.Write([]byte("HTTP/1.1 200 OK\r\nX: "))
		drivertest.Endless(c, []byte(strings.Repeat("a", 64<<10)), 0, 8<<30)
	})
	const timeout = 2 * time.Second
	err, took, growth := request(t, plainConfig(addr, timeout))
	drivertest.CheckFailure(t, err, took, growth, timeout, "response headers exceed 64 KiB")
	if took > timeout/2 {
		t.Errorf("took %v: the bound should stop the read, not the timeout", took)
	}
}

// TestSlowDrip: a server that sends one byte every 100 ms, in the status
// line or in the body, does not hold a request past its timeout, and a
// timeout in mid-status-line says the server did not answer in time (not
// that "HTT" is a malformed response).
func TestSlowDrip(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct{ name, head string }{
		{"status line", ""},
		{"headers", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"},
		{"body", "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := drivertest.Listen(t, func(c net.Conn) {
				go drivertest.Drain(c)
				c.Write([]byte(tc.head))
				drivertest.Endless(c, []byte("H"), 100*time.Millisecond, 1000)
			})
			const timeout = time.Second
			err, took, growth := request(t, plainConfig(addr, timeout))
			drivertest.CheckFailure(t, err, took, growth, timeout, "did not answer within --timeout 1s")
			if took < timeout-100*time.Millisecond {
				t.Errorf("failed after %v, before the timeout", took)
			}
		})
	}
}

// TestPlainToTLSPort: a plaintext request to a TLS port, which closes the
// connection (crypto/tls, OpenSSL) or answers 400 (Go's HTTPS servers),
// asks whether it is a TLS port and says to use https://.
func TestPlainToTLSPort(t *testing.T) {
	cert, _ := drivertest.TLSCert(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	closing := drivertest.TLSListener(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), TLSConfig: cfg, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	// nginx's answer, as it sends it.
	nginx := drivertest.Listen(t, func(c net.Conn) {
		go drivertest.Drain(c)
		body := "<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n</html>\r\n"
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body))
	})
	const timeout = 2 * time.Second
	for _, tc := range []struct{ name, addr, want string }{
		{"closes", closing, "closed the connection on the plaintext request: is it a TLS port? use https://"},
		{"go answers 400", ln.Addr().String(), "is a TLS port: use https://"},
		{"nginx answers 400", nginx, "is a TLS port: use https://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, took, growth := request(t, plainConfig(tc.addr, timeout))
			drivertest.CheckFailure(t, err, took, growth, timeout, strings.ReplaceAll(tc.want, "ADDR", tc.addr))
		})
	}
}

// TestTLSToPlainPort: TLS to a plain HTTP server asks whether it is a
// plaintext port; TLS with a CA that did not sign the server's
// certificate says to pass --ca or --insecure.
func TestTLSToPlainPort(t *testing.T) {
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plainSrv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 5 * time.Second}
	go plainSrv.Serve(plainLn)
	t.Cleanup(func() { plainSrv.Close() })

	tlsAddr := drivertest.TLSListener(t)
	_, other := drivertest.TLSCert(t)
	v := plan.Variant{TLS: "1.3"}
	tc, err := tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: other.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second
	for _, c := range []struct{ name, addr, want string }{
		{"plaintext port", plainLn.Addr().String(), "does not speak TLS (it answered in plain HTTP): is it a plaintext port?"},
		{"unknown CA", tlsAddr, "signed by an unknown authority: pass --ca FILE with the issuing CA certificate, or --insecure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := plainConfig(c.addr, timeout)
			cfg.Variant, cfg.TLS = v, tc
			err, took, growth := request(t, cfg)
			drivertest.CheckFailure(t, err, took, growth, timeout, c.want)
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != netx.PhaseTLSHandshake {
				t.Errorf("phase of %v, want %s", err, netx.PhaseTLSHandshake)
			}
		})
	}
}

// TestRefused: nothing listening is said so, and counted as refused.
func TestRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err, took, growth := request(t, plainConfig(addr, time.Second))
	drivertest.CheckFailure(t, err, took, growth, time.Second, "nothing is listening at "+addr+" (connection refused)")
	if k := driver.Kind(err); k != "tcp: refused" {
		t.Errorf("Kind = %q", k)
	}
}

// TestTooManyFiles lowers this process's limit of open files to what it
// has open, so that the dial fails with EMFILE: the error says how to
// raise the limit, and what it is.
func TestTooManyFiles(t *testing.T) {
	addr := drivertest.Listen(t, drivertest.Drain)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	low := old
	low.Cur = uint64(len(fds))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
		}
	}
	defer restore()
	d, err := New(plainConfig(addr, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var sessions []driver.Session
	for range 8 { // the limit counts a descriptor or two not open yet
		var s driver.Session
		if s, err = d.Open(context.Background()); err != nil {
			break
		}
		sessions = append(sessions, s)
	}
	restore()
	for _, s := range sessions {
		s.Close()
	}
	want := "too many open files: raise the limit with ulimit -n (now " + strconv.FormatUint(low.Cur, 10) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open with no descriptor left: %v, want %q", err, want)
	}
	if k := driver.Kind(err); k != "tcp: too many open files" {
		t.Errorf("Kind = %q", k)
	}
	t.Log(err)
}
