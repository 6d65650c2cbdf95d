package driver_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
)

// TestExplainSilence: a server that says nothing says nothing of its
// port's protocol. Closing at once on the first bytes is a port of
// another protocol (is it a plaintext port? a TLS port?), and so is an
// answer in the wrong protocol; closing after a wait (an overloaded
// server's own handshake timeout, as Go's net/http has, hit by a
// 10,000-client storm) and silence until --timeout are an overloaded
// server, with the fix: fewer clients, or a longer --timeout.
func TestExplainSilence(t *testing.T) {
	labtest.Slow(t)
	const timeout = 2 * time.Second
	tests := []struct {
		name   string
		tls    bool
		server func(c net.Conn)
		want   string
		not    string
	}{
		{"TLS, closed at once", true, closeAfter(0), "closed the connection at the TLS handshake: is it a plaintext port?", ""},
		{"plain, closed at once", false, closeAfter(0), "closed the connection on the plaintext request: is it a TLS port? use https://", ""},
		{"TLS, answered in plain HTTP", true, func(c net.Conn) {
			c.Read(make([]byte, 4096))
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			time.Sleep(100 * time.Millisecond)
			c.Close()
		}, "is it a plaintext port?", ""},
		{"TLS, closed after a wait", true, closeAfter(1200 * time.Millisecond),
			"accepted the connection and closed it 1.2", "plaintext"},
		{"plain, closed after a wait", false, closeAfter(1200 * time.Millisecond),
			"later without a word: it is overloaded and gave up on it (its own timeout); use fewer clients at once (-c, --clients)", "TLS port"},
		{"TLS, silent", true, closeAfter(timeout + time.Second),
			"accepted the connection but sent nothing within --timeout 2s: it is overloaded or stopped; if it is only slow (many clients at once), raise --timeout or use fewer clients (-c, --clients)", "plaintext"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tt.server(c)
			}()
			cfg := driver.Config{Addr: ln.Addr().String(), Timeout: timeout}
			if tt.tls {
				cfg.TLS = &tls.Config{InsecureSkipVerify: true}
			}
			ctx := context.Background()
			c, err := (&netx.Dialer{}).Dial(ctx, cfg.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(timeout))
			if tt.tls {
				_, err = netx.Handshake(ctx, c, cfg.TLS)
			} else {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				_, err = c.Read(make([]byte, 1))
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := driver.Explain(err, cfg, c, "use https://").Error()
			if !strings.Contains(msg, tt.want) || tt.not != "" && strings.Contains(msg, tt.not) {
				t.Errorf("%q\nwant %q, without %q", msg, tt.want, tt.not)
			}
		})
	}
}

// closeAfter is a server that reads the client's first bytes and closes
// the connection d after it was accepted.
func closeAfter(d time.Duration) func(net.Conn) {
	return func(c net.Conn) {
		start := time.Now()
		c.Read(make([]byte, 4096))
		time.Sleep(time.Until(start.Add(d)))
		c.Close()
	}
}
