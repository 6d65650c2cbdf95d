// Package labtest starts lab servers for tests outside package lab.
package labtest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
)

// Start starts a lab server of engine for t and stops it when t ends; see
// Check for a start that fails.
func Start(t testing.TB, engine string, o lab.Options) lab.Server {
	t.Helper()
	s, err := lab.Start(context.Background(), engine, o)
	Check(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// Check fails t on err, but skips t if err says a server is not installed,
// except in CI, where every server must be.
func Check(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, lab.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
