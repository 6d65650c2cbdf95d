package lab

import (
	"context"
	"errors"
	"os"
	"testing"
)

// needInstalled fails the test on err, but skips it if err says a server
// is not installed, except in CI, where every server must be.
func needInstalled(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// started checks a lab server's start with needInstalled and stops the
// server when the test ends.
func started(t *testing.T, s Server, err error) Server {
	t.Helper()
	needInstalled(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// slow skips t under -short: it starts real servers (labtest.Slow, which
// package lab cannot import).
func slow(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real servers: skipped under -short")
	}
}

// startT starts a lab server of engine for the test (see started).
func startT(t *testing.T, engine string, o Options) Server {
	t.Helper()
	slow(t)
	s, err := Start(context.Background(), engine, o)
	return started(t, s, err)
}

// TestNotInstalled: a missing server binary wraps ErrNotInstalled (Redis's,
// the one that PATH alone finds).
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Start(context.Background(), "redis", Options{}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Redis without redis-server: %v, want ErrNotInstalled", err)
	}
}
