package lab

import (
	"crypto/x509"
	"path/filepath"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
)

// labBase is what the lab database servers (PostgreSQL, MariaDB, Redis,
// FerretDB) hold alike, and the Server methods they share: a 0700 dir
// with their keys, password and log, the CA that signed their
// certificates, their process, and a Stop that runs once. A server
// whose process changes (FerretDB's restarts) guards proc itself and
// has methods of its own that read it.
type labBase struct {
	dir      string
	opts     Options
	password string
	roots    *x509.CertPool
	proc     *process

	stopping sync.Once
	stopErr  error
}

// PasswordFile implements Server: a file holding the password alone.
func (b *labBase) PasswordFile() string { return filepath.Join(b.dir, "password") }

// CAFile implements Server.
func (b *labBase) CAFile() string { return filepath.Join(b.dir, "ca.crt") }

// RootCAs implements Server.
func (b *labBase) RootCAs() *x509.CertPool { return b.roots }

// CPU implements Server: the CPU time of the server's process and its
// descendants (PostgreSQL's backends; mariadbd is one process with a
// thread per connection).
func (b *labBase) CPU() (time.Duration, error) { return b.proc.cpu() }

// Memory implements Server.
func (b *labBase) Memory() (host.Memory, error) { return b.proc.memory() }

// Alive reports why the server is gone, if it is.
func (b *labBase) Alive() error { return b.proc.alive() }

// Stop implements Server: SIGTERM to the server's process group, SIGKILL
// after a grace period, then its dir with the keys removed; safe to call
// more than once.
func (b *labBase) Stop() error {
	return b.stopOnce(func() error { return stopAndRemove(b.proc, b.dir) })
}

// stopOnce runs stop the first time it is called, and returns its error
// every time.
func (b *labBase) stopOnce(stop func() error) error {
	b.stopping.Do(func() { b.stopErr = stop() })
	return b.stopErr
}
