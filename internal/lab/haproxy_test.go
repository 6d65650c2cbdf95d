package lab_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestHAProxy terminates TLS 1.3 at HAProxy before a plaintext echo
// server: the bytes come back through the TLS frontend and the plain one.
func TestHAProxy(t *testing.T) {
	labtest.Slow(t)
	dir := t.TempDir()
	ca, err := tlsx.NewCA()
	if err == nil {
		err = tlsx.WriteServerFiles(dir, ca, []string{"ecdsa-p256"})
	}
	if err != nil {
		t.Fatal(err)
	}
	roots := ca.Pool()
	h, err := lab.StartHAProxy(context.Background(), lab.HAProxyOptions{Backend: lab.EchoOn(t, "127.0.0.1"), Keys: []string{"ecdsa-p256"}, CertDir: dir, Plain: true, ALPN: "http/1.1"})
	if errors.Is(err, lab.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	for _, key := range []string{"", "ecdsa-p256"} {
		addr, err := h.Addr(key)
		if err != nil {
			t.Fatal(err)
		}
		var c net.Conn
		if key == "" {
			c, err = net.Dial("tcp", addr)
		} else {
			c, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}})
		}
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		if tc, ok := c.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol != "http/1.1" {
			t.Errorf("ALPN %q", tc.ConnectionState().NegotiatedProtocol)
		}
		c.Write([]byte("ping\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line != "ping\n" {
			t.Errorf("%q: echo %q, %v", key, line, err)
		}
		c.Close()
	}
	if info := h.Info(); info.Software != "HAProxy" || info.Version == "unknown" {
		t.Errorf("info %+v", info)
	}
}
