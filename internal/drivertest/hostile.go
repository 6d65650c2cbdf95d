package drivertest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Bounds a loaded machine meets: a failed step returns within its timeout
// plus Margin, the heap grown by less than MaxGrowth.
const (
	Margin    = time.Second
	MaxGrowth = 64 << 20
)

// OpenDo opens a session of d and runs one Do: it returns the first error,
// how long that took and how much the heap grew meanwhile.
func OpenDo(d driver.Driver) (err error, took time.Duration, growth uint64) {
	start := time.Now()
	growth = HeapGrowth(func() {
		var s driver.Session
		if s, err = d.Open(context.Background()); err != nil {
			return
		}
		defer s.Close()
		err = s.Do(context.Background())
	})
	return err, time.Since(start), growth
}

// CheckFailure fails t unless err is one line holding want, returned
// within timeout plus Margin, the heap grown by less than MaxGrowth.
func CheckFailure(t testing.TB, err error, took time.Duration, growth uint64, timeout time.Duration, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n"):
		t.Errorf("error %q, want one line with %q", err, want)
	}
	if took > timeout+Margin {
		t.Errorf("took %v, want at most the timeout %v + %v", took, timeout, Margin)
	}
	if growth > MaxGrowth {
		t.Errorf("the heap grew by %d MiB, want under %d MiB", growth>>20, MaxGrowth>>20)
	}
	t.Logf("%v after %v, heap +%d KiB", err, took.Round(time.Millisecond), growth>>10)
}

// TLSCert is an ecdsa-p256 certificate for 127.0.0.1 from a new CA, and
// that CA.
func TLSCert(t testing.TB) (tls.Certificate, *tlsx.CA) {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert, ca
}

// TLSListener is a new 127.0.0.1 port that runs a crypto/tls server
// handshake with a TLSCert on every connection, then closes it: a TLS port
// that closes on a plaintext client, and that no CA a test has signed.
func TLSListener(t testing.TB) string {
	t.Helper()
	cert, _ := TLSCert(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	return Listen(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		tls.Server(c, cfg).Handshake()
	})
}

// MissingTable runs operations on s, whose workload reads tables that
// tlsbench prepare did not make beside some it did, until one fails: its
// error must be of the kind driver.ErrMissingData, which the driver takes
// from its server's error code.
func MissingTable(t testing.TB, s driver.Session) {
	t.Helper()
	for range 500 {
		err := s.Do(context.Background())
		if err == nil {
			continue
		}
		if !errors.Is(err, driver.ErrMissingData) || errors.Is(err, driver.ErrSourceRefused) {
			t.Fatalf("%v: want the kind ErrMissingData alone", err)
		}
		return
	}
	t.Fatal("500 operations passed, none on a missing table")
}
