package cli

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// sharedTables and sharedRows are the sbtest data of the shared lab
// servers: tests that use them read at most this much and prepare nothing
// (TestMissingData asks for a third table and for more rows).
const (
	sharedTables = 2
	sharedRows   = 100
)

// sharedServer is one engine's lab server the package's tests share,
// started on first use.
type sharedServer struct {
	once sync.Once
	srv  lab.Server
	url  string // the plain URL of its first user, with the password
	err  error
}

var (
	sharedMu      sync.Mutex
	sharedServers = map[string]*sharedServer{}
)

// sharedLab returns the lab server of engine (postgres or mariadb) that
// tests share where they need *a* server of that engine: an ECDSA P-256
// key, clients let in from 127.0.0.1 only (as Debian ships PostgreSQL),
// sharedTables tables of sharedRows rows. It also returns the plain URL
// of its first user, with the password: pass it to runMain only. TestMain
// stops it. A test that changes a server's configuration or data, kills
// it or needs other options starts its own. Under -short, or without the
// server installed (outside CI), t is skipped.
func sharedLab(t testing.TB, engine string) (lab.Server, string) {
	t.Helper()
	needServer(t, labBinaries[engine])
	return shared(t, engine, true)
}

// bareLab is sharedLab's twin that holds none of tlsbench's data (engine:
// postgres, mariadb, redis or mongodb): for tests of what a run does on a
// stock server. Tests that use it write nothing to it.
func bareLab(t testing.TB, engine string) (lab.Server, string) {
	t.Helper()
	labtest.Slow(t)
	if bin := labBinaries[engine]; bin != "" {
		needServer(t, bin)
	}
	return shared(t, engine, false)
}

// shared is the package's shared server of engine, with data (prepared)
// or without, started on first use.
func shared(t testing.TB, engine string, prepared bool) (lab.Server, string) {
	t.Helper()
	key := engine
	if !prepared {
		key += " bare"
	}
	sharedMu.Lock()
	s := sharedServers[key]
	if s == nil {
		s = &sharedServer{}
		sharedServers[key] = s
	}
	sharedMu.Unlock()
	s.once.Do(func() { s.srv, s.url, s.err = startShared(engine, prepared) })
	labtest.Check(t, s.err)
	return s.srv, s.url
}

func startShared(engine string, prepared bool) (lab.Server, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := lab.Start(ctx, engine, lab.Options{Keys: []string{"ecdsa-p256"}, LocalhostOnly: true})
	if err != nil {
		return nil, "", err
	}
	url, err := srv.URL(srv.Auths()[0], false)
	if err == nil && prepared {
		var out, errb syncBuffer
		if code := Main([]string{"prepare", url, "--tables", fmt.Sprint(sharedTables), "--rows", fmt.Sprint(sharedRows)}, &out, &errb); code != 0 {
			err = fmt.Errorf("shared lab %s: prepare: exit %d: %s", engine, code, errb.String())
		}
	}
	if err != nil {
		srv.Stop()
		return nil, "", err
	}
	onExit(func() { srv.Stop() })
	return srv, url, nil
}
