package netx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Phases of an SSH connection's setup.
const (
	PhaseSSHKex  = "ssh-kex"  // version exchange and key exchange, to the host key check
	PhaseSSHAuth = "ssh-auth" // new keys, service request and user authentication
)

// SSHConfig says how to reach and log in to an SSH server.
type SSHConfig struct {
	Addr    string // host:port
	User    string
	Auth    []ssh.AuthMethod
	HostKey ssh.HostKeyCallback
	// Cipher, when set, is the only cipher offered.
	Cipher string
}

// SSHTunnel is one SSH connection that opens a direct-tcpip channel per
// connection, exactly what `ssh -L` does for each client of its port.
type SSHTunnel struct {
	addr      string
	client    *ssh.Client
	transport *Conn
	setup     Trace
	algos     ssh.NegotiatedAlgorithms
	server    string

	mu     sync.Mutex
	closed error         // why the SSH connection ended, once it has
	done   chan struct{} // closed once closed is set
}

// DialSSH opens the SSH connection through d (so an emulated RTT applies to
// it) and times its setup: tcp, key exchange, authentication.
func DialSSH(ctx context.Context, d *Dialer, cfg SSHConfig) (*SSHTunnel, error) {
	c, err := d.Dial(ctx, cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", cfg.Addr, err)
	}
	c.Mark(PhaseSSHKex)
	conf := &ssh.ClientConfig{
		User: cfg.User,
		Auth: cfg.Auth,
		// The host key is checked at the end of the key exchange: what
		// follows is authentication.
		HostKeyCallback: func(host string, remote net.Addr, key ssh.PublicKey) error {
			c.Mark(PhaseSSHAuth)
			return cfg.HostKey(host, remote, key)
		},
	}
	if cfg.Cipher != "" {
		conf.Ciphers = []string{cfg.Cipher}
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	sc, chans, reqs, err := ssh.NewClientConn(c, cfg.Addr, conf)
	stop()
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("ssh %s@%s: %w", cfg.User, cfg.Addr, err)
	}
	// OpenSSH follows a login with messages of its own (hostkeys-00):
	// one request answered drains them, so that a channel open's round
	// trips are its own.
	t0 := ssh.NewClient(sc, chans, reqs)
	if _, _, err := t0.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t0.Close()
		return nil, fmt.Errorf("ssh %s: %w", cfg.Addr, err)
	}
	c.SetDeadline(time.Time{})
	setup := c.Finish()
	setup.Phases = slices.Clone(setup.Phases) // the Conn goes on counting
	t := &SSHTunnel{addr: cfg.Addr, client: t0, transport: c, setup: setup, server: string(sc.ServerVersion()), done: make(chan struct{})}
	if am, ok := sc.(ssh.AlgorithmsConnMetadata); ok {
		t.algos = am.Algorithms()
	}
	go func() {
		err := t.client.Wait()
		if err == nil {
			err = errors.New("closed by the server")
		}
		t.mu.Lock()
		t.closed = err
		t.mu.Unlock()
		close(t.done)
	}()
	return t, nil
}

// Open opens a direct-tcpip channel to addr, as seen from the SSH server:
// one round trip, a CHANNEL_OPEN and its confirmation. (Counting client
// turns on the SSH connection cannot tell: a read may carry the reply to
// the last channel's close together with this confirmation.)
func (t *SSHTunnel) Open(ctx context.Context, addr string) (net.Conn, int, error) {
	if err := t.Err(); err != nil {
		return nil, 0, err
	}
	ch, err := t.client.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, io.EOF) {
			// The SSH connection ended under the open: Wait returns
			// right after, with why.
			select {
			case <-t.done:
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		if gone := t.Err(); gone != nil {
			return nil, 0, gone
		}
		return nil, 0, fmt.Errorf("ssh tunnel %s to %s: %w", t.addr, addr, err)
	}
	return &deadlineConn{Conn: ch}, 1, nil
}

// Turns is the client turns begun on the SSH connection so far (see
// Conn.Turns): exact per channel open only while nothing else is in flight.
func (t *SSHTunnel) Turns() int64 { return t.transport.Turns() }

// Quiet reports whether nothing sent on the SSH connection waits for an
// answer (a channel's close, a window adjust), so that the turns of what
// is sent next are its own.
func (t *SSHTunnel) Quiet() bool { return !t.transport.Waiting() }

// Err says why the tunnel is gone, or nil while it is up.
func (t *SSHTunnel) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed == nil {
		return nil
	}
	return fmt.Errorf("the SSH tunnel to %s is gone (%v): is its sshd still running?", t.addr, t.closed)
}

// Addr is the SSH server's address.
func (t *SSHTunnel) Addr() string { return t.addr }

// Setup is the SSH connection's setup: tcp, ssh-kex, ssh-auth.
func (t *SSHTunnel) Setup() Trace { return t.setup }

// Algorithms are what the key exchange settled on.
func (t *SSHTunnel) Algorithms() ssh.NegotiatedAlgorithms { return t.algos }

// ServerVersion is the server's identification string.
func (t *SSHTunnel) ServerVersion() string { return t.server }

// Counters returns the bytes the SSH connection moved each way: channel
// payload plus SSH's framing, MACs and window messages.
func (t *SSHTunnel) Counters() (sent, received int64) { return t.transport.Counters() }

// Close closes the SSH connection and every channel on it.
func (t *SSHTunnel) Close() error { return t.client.Close() }

// deadlineConn gives an SSH channel the deadlines drivers use to abandon
// an operation (x/crypto/ssh channels have none): when one passes, the
// channel is closed, which ends a blocked Read or Write; the connection
// cannot be used after that, which is all a benchmark needs.
type deadlineConn struct {
	net.Conn
	mu          sync.Mutex
	read, write *time.Timer
	expired     bool
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error  { return c.arm(&c.read, t) }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error { return c.arm(&c.write, t) }

func (c *deadlineConn) arm(timer **time.Timer, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *timer != nil {
		(*timer).Stop()
		*timer = nil
	}
	if !t.IsZero() {
		*timer = time.AfterFunc(time.Until(t), func() {
			c.mu.Lock()
			c.expired = true
			c.mu.Unlock()
			c.Conn.Close()
		})
	}
	return nil
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, c.timeout(err)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.timeout(err)
}

// timeout reports a failure after an expired deadline as the deadline error
// callers test for.
func (c *deadlineConn) timeout(err error) error {
	if err == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expired {
		return os.ErrDeadlineExceeded
	}
	return err
}

func (c *deadlineConn) Close() error {
	c.arm(&c.read, time.Time{})
	c.arm(&c.write, time.Time{})
	return c.Conn.Close()
}

// SSHURLError is an SSH URL that cannot be used as it is (a key file that
// cannot be read, no way to log in, no known_hosts file): its writer's to
// fix, not a failure of the server.
type SSHURLError struct{ Err error }

func (e *SSHURLError) Error() string { return e.Err.Error() }
func (e *SSHURLError) Unwrap() error { return e.Err }

// ErrNoSSHAuth is an SSH URL with no password and no key to log in with.
var ErrNoSSHAuth = errors.New("no password and no key: add ?identity=FILE")

// SSHConfigFromURL is how to log in to the SSH server ssh://[USER[:PASSWORD]@]HOST[:PORT]
// names, offering only cipher (if set): the URL's password or its identity
// files (?identity=FILE; by default ~/.ssh/id_ed25519, id_ecdsa, id_rsa),
// the host key checked against ?known_hosts=FILE (default
// ~/.ssh/known_hosts) unless insecure. The user defaults to the current one.
func SSHConfigFromURL(u *url.URL, cipher string, insecure bool) (SSHConfig, error) {
	cfg := SSHConfig{Addr: u.Host, Cipher: cipher}
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "22")
	}
	home, _ := os.UserHomeDir()
	if u.User != nil {
		cfg.User = u.User.Username()
	}
	if cfg.User == "" {
		me, err := user.Current()
		if err != nil {
			return cfg, err
		}
		cfg.User = me.Username
	}
	if pw, ok := u.User.Password(); ok {
		cfg.Auth = append(cfg.Auth, ssh.Password(pw))
	}
	identities := []string{u.Query().Get("identity")}
	if identities[0] == "" {
		identities = []string{filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, ".ssh", "id_ecdsa"), filepath.Join(home, ".ssh", "id_rsa")}
	}
	var signers []ssh.Signer
	for _, path := range identities {
		data, err := os.ReadFile(path)
		if err != nil {
			if len(identities) == 1 { // named by ?identity=
				return cfg, &SSHURLError{fmt.Errorf("identity file: %w", err)}
			}
			continue
		}
		signer, err := ssh.ParsePrivateKey(data)
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			return cfg, &SSHURLError{fmt.Errorf("%s is protected by a passphrase: give an unprotected key with ?identity=FILE", path)}
		}
		if err != nil {
			return cfg, &SSHURLError{fmt.Errorf("%s: %v", path, err)}
		}
		signers = append(signers, signer)
	}
	if len(signers) > 0 {
		cfg.Auth = append(cfg.Auth, ssh.PublicKeys(signers...))
	}
	if len(cfg.Auth) == 0 {
		return cfg, &SSHURLError{ErrNoSSHAuth}
	}
	if insecure {
		cfg.HostKey = ssh.InsecureIgnoreHostKey()
		return cfg, nil
	}
	known := u.Query().Get("known_hosts")
	if known == "" {
		known = filepath.Join(home, ".ssh", "known_hosts")
	}
	check, err := knownhosts.New(known)
	if err != nil {
		return cfg, &SSHURLError{fmt.Errorf("known hosts: %v: give ?known_hosts=FILE or --insecure", err)}
	}
	cfg.HostKey = func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) && len(ke.Want) == 0 {
			return fmt.Errorf("the host key of %s is not in %s: add it (ssh-keyscan -p PORT HOST >> %s) or pass --insecure", host, known, known)
		}
		return err
	}
	return cfg, nil
}

// SSHAEAD reports whether an SSH cipher authenticates by itself (then no
// MAC is used).
func SSHAEAD(cipher string) bool {
	return cipher == ssh.CipherAES128GCM || cipher == ssh.CipherAES256GCM || cipher == ssh.CipherChaCha20Poly1305
}
