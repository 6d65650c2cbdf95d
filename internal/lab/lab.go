// Package lab starts throw-away real servers for a run (PostgreSQL, MariaDB,
// Redis, FerretDB for MongoDB, the built-in server) and what stands between
// client and server (sshd, OpenSSH's client, stunnel, PgBouncer, HAProxy,
// wireguard-go in network namespaces) with keys made for them, says who
// signs for each, and always cleans them up, also after a run that was
// killed (see SweepStale).
package lab

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// ErrNotInstalled is wrapped by a start error whose server binary is missing.
var ErrNotInstalled = errors.New("server not installed")

// Server is a throw-away database server started by tlsbench from the
// system's binaries: in a temp dir, on a free loopback port, with a
// certificate per key type, TLS on and plaintext allowed.
type Server interface {
	// Engine is "postgres", "mariadb", "redis", "mongodb" or "builtin".
	Engine() string
	// URL is how a client logging in with auth method auth ("" for the
	// default, Auths()[0]) reaches the server, with TLS (tls) or without.
	// It holds the password: print it only through plan.Redact.
	URL(auth string, tls bool) (string, error)
	// Auths lists the auth methods the server has a user for, default first.
	Auths() []string
	// PasswordFile is a 0600 file holding the users' password, for URLs
	// printed without it (a passfile=... parameter).
	PasswordFile() string
	// CAFile and RootCAs are the CA that signed every server certificate.
	CAFile() string
	RootCAs() *x509.CertPool
	// UseKey makes the server present its certificate of key type key, one
	// of Options.Keys, to new connections, and returns how it switched
	// (e.g. "reloaded with pg_reload_conf()").
	UseKey(ctx context.Context, key string) (string, error)
	// CPU is the CPU time all the server's processes have used so far.
	CPU() (time.Duration, error)
	// Memory is what all the server's processes hold in memory now.
	Memory() (host.Memory, error)
	// Alive reports why the server is gone, if it is (its process exited),
	// quoting its log.
	Alive() error
	// Info describes the server for the result: software, version, TLS
	// settings, endpoints.
	Info() result.Server
	// Notes are facts a reader of the figures needs, e.g. how RSA-1024
	// was made to work, or that the server refuses session resumption.
	Notes() []string
	// Stop stops the server and removes its directory and keys; safe to
	// call more than once.
	Stop() error
}

// Options configure a lab server.
type Options struct {
	// Keys are the key types to make certificates for; the server starts
	// with the first.
	Keys []string
	// PlainOnly starts the server without TLS at all, for testing what a
	// client that asks for TLS is told.
	PlainOnly bool
	// TLSOnly refuses plaintext clients, as a server configured to
	// demand TLS does: PostgreSQL's pg_hba.conf with hostssl lines only,
	// MariaDB's require_secure_transport=ON (other engines ignore it).
	TLSOnly bool
	// LocalhostOnly lets clients in from 127.0.0.1 only, as Debian's stock
	// pg_hba.conf and a user@'127.0.0.1' grant do (PostgreSQL, MariaDB),
	// instead of all of 127.0.0.0/8.
	LocalhostOnly bool
	// IPv6 makes a server that listens on one address (FerretDB) listen
	// on ::1 instead of 127.0.0.1, its URLs naming [::1]. PostgreSQL,
	// MariaDB and Redis always listen on both.
	IPv6 bool
	// ClientCerts are key types of client certificates for the lab CA to
	// issue (see ClientCertServer); none: the server never asks for one,
	// but MariaDB, which asks every TLS client.
	ClientCerts []string
	// Tunnel, when valid, is a VPN's subnet (10.213.N.0/24) whose .2 is
	// the server's tunnel address: the server listens there too and lets
	// its clients in from the subnet (see WireGuard).
	Tunnel netip.Prefix
	// Version is the server's major version ("18"), for engines that the
	// lab has in more than one ("postgres:18"); "" is the default one.
	Version string
	// Connections is how many client connections the server must take at
	// once (a storm's clients): its connection limits and listen backlog
	// are raised above it where their defaults are lower (see
	// connectionLimit); 0 keeps the lab's defaults.
	Connections int
	// Replication lets a replica in (PostgreSQL: a REPLICATION user and
	// its pg_hba.conf lines): the primary of a lab cluster (cluster.go).
	Replication bool
}

// tunnelListen is the address the server listens on in o.Tunnel, "" for
// none.
func (o Options) tunnelListen() string {
	if !o.Tunnel.IsValid() {
		return ""
	}
	a := o.Tunnel.Masked().Addr().As4()
	a[3] = 2
	return netip.AddrFrom4(a).String()
}

// certHosts are the addresses the server's certificates name besides
// loopback's: its address in o.Tunnel, which a client there verifies.
func (o Options) certHosts() []string {
	if a := o.tunnelListen(); a != "" {
		return []string{a}
	}
	return nil
}

// connectionLimit is a server's connection limit for o: def, or
// o.Connections with room for the lab's own connections (the check, the
// administrator's, PostgreSQL's reserved superuser slots) when that is
// more.
func (o Options) connectionLimit(def int) int {
	return max(def, o.Connections+20)
}

// starters holds each engine's start function; engines add themselves.
var starters = map[string]func(context.Context, Options) (Server, error){}

// Engines lists the engines the lab can start.
func Engines() []string {
	var out []string
	for e := range starters {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Start starts a lab server of engine, "ENGINE" or "ENGINE:VERSION"
// ("postgres:18").
func Start(ctx context.Context, engine string, o Options) (Server, error) {
	engine, version, versioned := strings.Cut(engine, ":")
	if versioned {
		if engine != "postgres" {
			return nil, fmt.Errorf("lab %s: only postgres comes in versions (postgres:15, postgres:18)", engine)
		}
		o.Version = version
	}
	start, ok := starters[engine]
	if !ok {
		return nil, fmt.Errorf("no lab server %q: use one of %s", engine, strings.Join(Engines(), ", "))
	}
	if len(o.Keys) == 0 {
		o.Keys = []string{plan.DefaultKey}
	}
	return start(ctx, o)
}

// newLabDir makes a lab dir (see makeLabDir) holding a new CA (ca.crt),
// a certificate per key and a client certificate per clientKeys, and
// returns the dir and a pool with the CA; it removes the dir again if that
// fails.
func newLabDir(prefix string, keys []string, clientKeys ...string) (dir string, roots *x509.CertPool, err error) {
	return newLabDirNaming(prefix, keys, nil, clientKeys...)
}

// newLabDirNaming is newLabDir with hosts, addresses its certificates name
// besides loopback's: a delay link's server address (certHosts).
func newLabDirNaming(prefix string, keys, hosts []string, clientKeys ...string) (dir string, roots *x509.CertPool, err error) {
	if dir, err = makeLabDir(prefix); err != nil {
		return "", nil, err
	}
	ca, err := tlsx.NewCA()
	if err == nil {
		err = tlsx.WriteServerFiles(dir, ca, keys, hosts...)
	}
	if err == nil && len(clientKeys) > 0 {
		err = tlsx.WriteClientFiles(dir, ca, clientKeys, ClientCertUser)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, ca.Pool(), nil
}

// maxSocketPath is the longest path a Unix socket can have on Linux:
// sun_path holds 108 bytes, the last one a NUL.
const maxSocketPath = 107

// checkSocketPath fails, before anything is made, if the Unix socket named
// socket in a lab dir made with prefix would have a path longer than
// maxSocketPath: the server would fail to start, with a message about a
// path the user did not choose. It counts os.MkdirTemp's longest random
// suffix (10 digits), so that the answer does not depend on chance.
func checkSocketPath(server, prefix, socket string) error {
	tmp := labTempDir()
	fixed := len(filepath.Join(tmp, prefix+"4294967295", socket)) - len(tmp)
	if len(tmp)+fixed <= maxSocketPath {
		return nil
	}
	return fmt.Errorf("%s lab server: TMPDIR is %d bytes long: the lab's Unix socket path would pass %d bytes: set TMPDIR to a shorter directory (at most %d bytes), e.g. TMPDIR=/tmp",
		server, len(tmp), maxSocketPath, maxSocketPath-fixed)
}

// confirmPresented makes one TLS handshake with a lab server's TLS port and
// checks that it presents its certificate of key type key: a certificate
// the server loaded but cannot use shows here, not in the first trial.
func confirmPresented(ctx context.Context, engine, addr string, roots *x509.CertPool, key string, timeout time.Duration) error {
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := d.DialContext(cctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s lab server: TLS handshake to check the %s certificate: %w", engine, key, err)
	}
	defer c.Close()
	peer := c.(*tls.Conn).ConnectionState().PeerCertificates
	if len(peer) == 0 {
		return fmt.Errorf("%s lab server: the TLS port presented no certificate", engine)
	}
	if got := tlsx.PeerKey(peer[0]); tlsx.KeyTypeOf(got) != key {
		return fmt.Errorf("%s lab server: asked to present %s, it presents %s", engine, key, got)
	}
	return nil
}

// newPassword is a lab server's users' password: 128 random bits in hex,
// so that it needs no quoting or escaping in SQL, a URL, a Redis ACL rule or
// a passfile. (crypto/rand.Read does not fail since Go 1.24.)
func newPassword() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// loopback is the loopback address a server that listens on one address
// listens on.
func loopback(ipv6 bool) string {
	if ipv6 {
		return "::1"
	}
	return "127.0.0.1"
}

// nonEmpty is {s}, or none for "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
