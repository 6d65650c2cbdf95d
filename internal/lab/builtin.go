package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/server"
)

// BuiltinOptions configure the built-in server.
type BuiltinOptions struct {
	Keys         []string // key types, one HTTPS listener each
	ResponseSize int
	MaxTLS       string // "" or "1.2"
	// IPv6 listens on ::1 instead of 127.0.0.1.
	IPv6 bool
	// Host, when set, is the one address the server listens on instead
	// of loopback's: a delay link's server address (DelayLink), which the
	// root namespace reaches through its loopback too.
	Host string
	// ClientCerts are key types of client certificates to issue; with
	// any, each key also gets a listener that demands one (MTLSEndpoint).
	ClientCerts []string
	// Exe is the tlsbench binary to run; "" means this one (os.Executable,
	// which also works under `go run`).
	Exe string
}

// host is the address the server listens on.
func (o BuiltinOptions) host() string {
	if o.Host != "" {
		return o.Host
	}
	return loopback(o.IPv6)
}

// Builtin is a running built-in server: a child process `tlsbench serve`.
// It is a Server like the lab's database servers, with an HTTPS listener
// per key (Endpoint) instead of one certificate presented at a time.
type Builtin struct {
	dir      string
	proc     *process
	opts     BuiltinOptions
	ready    server.Ready
	roots    *x509.CertPool
	stopOnce sync.Once
	stopErr  error

	mu  sync.Mutex
	key string // the key URL's HTTPS listener serves (UseKey)
}

var _ Server = (*Builtin)(nil)

// StartBuiltin writes a CA and a certificate per key into a new 0700 temp
// dir and starts `Exe serve --json` on free loopback ports in its own
// process group, killed if this process dies. It returns once the child
// reported its addresses; ctx cancels the start only.
func StartBuiltin(ctx context.Context, o BuiltinOptions) (_ *Builtin, err error) {
	if len(o.Keys) == 0 {
		return nil, errors.New("built-in server: no key type given")
	}
	if o.MaxTLS != "" && o.MaxTLS != "1.2" && o.MaxTLS != "1.3" {
		return nil, fmt.Errorf("built-in server: maximum TLS version %q is not 1.2 or 1.3", o.MaxTLS)
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("built-in server: finding this program: %w", err)
		}
	}
	var hosts []string
	if o.Host != "" {
		hosts = []string{o.Host}
	}
	dir, roots, err := newLabDirNaming("tlsbench-lab-", o.Keys, hosts, o.ClientCerts...)
	if err != nil {
		return nil, err
	}
	b := &Builtin{dir: dir, opts: o, roots: roots, key: o.Keys[0]}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()

	args := []string{"serve", "--json", "--cert-dir", dir, "--key", strings.Join(o.Keys, ","),
		"--size", strconv.Itoa(o.ResponseSize), "--http", net.JoinHostPort(o.host(), "0"), "--https", net.JoinHostPort(o.host(), "0")}
	if o.MaxTLS != "" {
		args = append(args, "--tls-max", o.MaxTLS)
	}
	if len(o.ClientCerts) > 0 {
		args = append(args, "--client-ca", filepath.Join(dir, "ca.crt"))
	}
	// A pipe of our own rather than StdoutPipe, so that reading it never
	// races with Wait.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Stdout = pw
	b.proc, err = startProcess("built-in server", cmd, filepath.Join(dir, "server.log"))
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}

	lines := make(chan readResult, 1)
	go func() {
		// Read the ready line, then drain until the child exits, so that
		// a chatty child never blocks on a full pipe.
		defer pr.Close()
		r := bufio.NewReader(pr)
		line, err := r.ReadBytes('\n')
		lines <- readResult{line, err}
		r.WriteTo(io.Discard)
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case res := <-lines:
		if res.err != nil {
			// The child closed stdout: it is exiting; wait a little to
			// quote its exit status.
			select {
			case <-b.proc.exited:
				return nil, b.proc.failure(fmt.Sprintf("exited before it was ready (%v)", b.proc.exitErr))
			case <-time.After(stopGrace):
				return nil, b.proc.failure("closed its output before it was ready")
			}
		}
		if err := b.parseReady(res.line); err != nil {
			return nil, b.proc.failure(err.Error())
		}
	case <-b.proc.exited:
		return nil, b.proc.failure(fmt.Sprintf("exited before it was ready (%v)", b.proc.exitErr))
	case <-timer.C:
		return nil, b.proc.failure(fmt.Sprintf("was not ready within %v", readyTimeout))
	case <-ctx.Done():
		return nil, fmt.Errorf("built-in server: start cancelled: %w", ctx.Err())
	}
	return b, nil
}

type readResult struct {
	line []byte
	err  error
}

func (b *Builtin) parseReady(line []byte) error {
	if err := json.Unmarshal(line, &b.ready); err != nil {
		return fmt.Errorf("printed %q instead of its addresses", bytes.TrimSpace(line))
	}
	if b.ready.HTTP == "" {
		return errors.New("reported no HTTP address")
	}
	for _, k := range b.opts.Keys {
		if b.ready.HTTPS[k] == "" {
			return fmt.Errorf("reported no HTTPS address for key %s", k)
		}
		if len(b.opts.ClientCerts) > 0 && b.ready.MTLS[k] == "" {
			return fmt.Errorf("reported no client-certificate HTTPS address for key %s", k)
		}
	}
	return nil
}

// Endpoint is the address serving key ("" for plain HTTP), "" if none.
func (b *Builtin) Endpoint(key string) string {
	if key == "" {
		return b.ready.HTTP
	}
	return b.ready.HTTPS[key]
}

// Engine is "builtin".
func (b *Builtin) Engine() string { return "builtin" }

// URL is http://HOST:PORT/ of the plain listener, or https://HOST:PORT/ of
// the HTTPS listener of the key UseKey chose last (the first key at
// start). The server has no users: auth must be "".
func (b *Builtin) URL(auth string, tls bool) (string, error) {
	if auth != "" {
		return "", fmt.Errorf("built-in server: no user for auth method %q: it takes no login", auth)
	}
	if !tls {
		return "http://" + b.ready.HTTP + "/", nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return "https://" + b.ready.HTTPS[b.key] + "/", nil
}

// Auths is empty: the server takes no login.
func (b *Builtin) Auths() []string { return nil }

// PasswordFile is "": the server has no password.
func (b *Builtin) PasswordFile() string { return "" }

// UseKey points URL at key's HTTPS listener. Every key has a listener of
// its own, so the server itself switches nothing.
func (b *Builtin) UseKey(_ context.Context, key string) (string, error) {
	if _, ok := b.ready.HTTPS[key]; !ok {
		return "", fmt.Errorf("built-in server: no listener for key %q: it was started with %s", key, strings.Join(b.opts.Keys, ", "))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.key = key
	return "every key has an HTTPS listener of its own", nil
}

// Notes are none: the result's server settings say what the server does.
func (b *Builtin) Notes() []string { return nil }

// RootCAs is a pool with the CA that signed the server's certificates.
func (b *Builtin) RootCAs() *x509.CertPool { return b.roots }

// CAFile is the PEM file of that CA, for clients given --ca; it is removed
// with the server.
func (b *Builtin) CAFile() string { return filepath.Join(b.dir, "ca.crt") }

// Info describes the server for the result file.
func (b *Builtin) Info() result.Server {
	eps := maps.Clone(b.ready.HTTPS)
	if eps == nil {
		eps = map[string]string{}
	}
	eps[""] = b.ready.HTTP
	tlsMax := b.opts.MaxTLS
	if tlsMax == "" {
		tlsMax = "1.3"
	}
	return result.Server{
		Software:  "tlsbench built-in (net/http, crypto/tls)",
		Version:   runtime.Version(),
		Endpoints: eps,
		Settings: map[string]string{
			"response_size": strconv.Itoa(b.opts.ResponseSize),
			"tls_max":       tlsMax,
			"keys":          strings.Join(b.opts.Keys, ","),
			"protocol":      "HTTP/1.1, keep-alive, session tickets on",
		},
	}
}

// CPU is the server's user+system CPU time so far.
func (b *Builtin) CPU() (time.Duration, error) { return b.proc.cpu() }

// Memory implements Server.
func (b *Builtin) Memory() (host.Memory, error) { return b.proc.memory() }

// Alive reports why the server is gone, if it is, quoting its log.
func (b *Builtin) Alive() error { return b.proc.alive() }

// Stop ends the child (SIGTERM, then SIGKILL after 2 s) and removes the
// temp dir with its keys. It is safe to call more than once. It reports a
// child that had died by itself before Stop, quoting its log.
func (b *Builtin) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = stopAndRemove(b.proc, b.dir) })
	return b.stopErr
}
