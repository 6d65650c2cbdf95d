// Package labtest starts lab servers for tests outside package lab, and
// skips them and other slow tests under -short (Slow).
package labtest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
)

// ErrShort stands for a server not started under -short: a package's
// TestMain records it instead of starting its shared server, and Check
// skips the tests that need that server.
var ErrShort = errors.New("real servers are not started under -short")

// Start starts a lab server of engine for t and stops it when t ends; see
// Check for a start that fails. Under -short it skips t: go test -short is
// the unit layer, in milliseconds.
func Start(t testing.TB, engine string, o lab.Options) lab.Server {
	t.Helper()
	Check(t, Short())
	s, err := lab.Start(context.Background(), engine, o)
	Check(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// Slow skips t under -short: t starts a real server, captures packets, runs
// a browser or waits for seconds (a timeout, a trial). go test -short is the
// unit layer, in milliseconds; make test runs everything.
func Slow(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow (a real server, a capture, a browser or seconds of waiting): skipped under -short")
	}
}

// Short is ErrShort under -short, nil otherwise: what a shared server's
// start records in place of starting it.
func Short() error {
	if testing.Short() {
		return ErrShort
	}
	return nil
}

// Check fails t on err, but skips t if err says a server is not installed,
// except in CI, where every server must be, or that it was not started
// under -short (ErrShort).
func Check(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrShort) {
		t.Skip(err)
	}
	if errors.Is(err, lab.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
