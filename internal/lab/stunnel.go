package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// Stunnel is a pair of Debian's stunnel4 instances in front of a plaintext
// server, as people deploy it: a client instance beside the application
// (plaintext in, TLS out) and a server instance beside the database (TLS
// in, plaintext out). Every connection to the client instance is one TLS
// connection between the two, so TLS is paid per connection, but stunnel's
// client reuses its last session, so most of them are resumed.
type Stunnel struct {
	dir            string
	server, client *process
	ports          map[string]int // client instance port per key
	version        string

	stopOnce sync.Once
	stopErr  error
}

// stunnelBinary finds Debian's stunnel4 (or an upstream stunnel).
func stunnelBinary() (string, error) {
	for _, name := range []string{"stunnel4", "stunnel"} {
		if exe, err := exec.LookPath(name); err == nil {
			return exe, nil
		}
	}
	return "", fmt.Errorf("stunnel is not installed: apt-get install stunnel4, or run scripts/install.sh: %w", ErrNotInstalled)
}

// StartStunnel starts the pair in front of target (host:port, plaintext),
// one service per key: the server instance presents that key's certificate,
// the client instance verifies it against the lab's own CA.
func StartStunnel(ctx context.Context, target string, keys []string) (_ *Stunnel, err error) {
	exe, err := stunnelBinary()
	if err != nil {
		return nil, err
	}
	dir, _, err := newLabDir("tlsbench-stunnel-", keys)
	if err != nil {
		return nil, err
	}
	s := &Stunnel{dir: dir, ports: map[string]int{}}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	s.version = stunnelVersion(exe)
	var server, client strings.Builder
	// RSA-1024 needs OpenSSL's security level 0, as on the lab servers.
	// Logs go to stderr (the lab's log file) only: with no syslog daemon,
	// glibc falls back to writing every line to /dev/console, which cost
	// each connection about 7 ms here.
	head := "foreground = yes\npid =\ndebug = notice\nsyslog = no\nsecurityLevel = 0\n"
	server.WriteString(head)
	client.WriteString(head)
	taken := map[int]bool{}
	port := func() (int, error) {
		for {
			p, err := freePort()
			if err != nil || !taken[p] {
				taken[p] = true
				return p, err
			}
		}
	}
	for _, k := range keys {
		sp, err := port()
		if err != nil {
			return nil, err
		}
		cp, err := port()
		if err != nil {
			return nil, err
		}
		s.ports[k] = cp
		fmt.Fprintf(&server, "\n[%s]\naccept = 127.0.0.1:%d\nconnect = %s\ncert = %s\nkey = %s\n",
			k, sp, target, filepath.Join(dir, k+".crt"), filepath.Join(dir, k+".key"))
		fmt.Fprintf(&client, "\n[%s]\nclient = yes\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\nverifyChain = yes\nCAfile = %s\ncheckIP = 127.0.0.1\n",
			k, cp, sp, filepath.Join(dir, "ca.crt"))
	}
	if s.server, err = s.start(exe, "stunnel server", "server.conf", server.String()); err != nil {
		return nil, err
	}
	if s.client, err = s.start(exe, "stunnel client", "client.conf", client.String()); err != nil {
		return nil, err
	}
	for _, p := range []*process{s.server, s.client} {
		if err := p.waitReady(ctx, s.listening); err != nil {
			return nil, p.withKeptLog(err)
		}
	}
	return s, nil
}

func (s *Stunnel) start(exe, name, file, conf string) (*process, error) {
	path := filepath.Join(s.dir, file)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, path)
	cmd.Dir = s.dir
	return startProcess(name, cmd, strings.TrimSuffix(path, ".conf")+".log")
}

// listening reports whether every client port accepts connections.
func (s *Stunnel) listening() error { return listening(s.ports) }

// listening reports whether every loopback port of ports accepts
// connections (a proxy's or tunnel's listeners are up).
func listening[K comparable](ports map[K]int) error {
	for _, p := range ports {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

var stunnelVersionRE = regexp.MustCompile(`stunnel (\S+)`)

func stunnelVersion(exe string) string { return toolVersion(exe, stunnelVersionRE, "-version") }

// Addr is where an application connects to reach the target through the
// tunnel whose server presents key.
func (s *Stunnel) Addr(key string) (string, error) {
	p, ok := s.ports[key]
	if !ok {
		return "", fmt.Errorf("stunnel has no service for key %q", key)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// ServerCPU is the CPU time of the instance beside the server.
func (s *Stunnel) ServerCPU() (time.Duration, error) { return s.server.cpu() }

// Alive reports why an instance is gone, if one is.
func (s *Stunnel) Alive() error {
	if err := s.server.alive(); err != nil {
		return err
	}
	return s.client.alive()
}

// Info describes the pair for the result.
func (s *Stunnel) Info() result.Server {
	eps := map[string]string{}
	for k := range s.ports {
		eps[k], _ = s.Addr(k)
	}
	return result.Server{
		Software:  "stunnel",
		Version:   s.version,
		Endpoints: eps,
		Settings:  map[string]string{"client_session_cache": "stunnel default (reuses its last session)", "securityLevel": "0", "verify": "verifyChain against the lab CA, checkIP 127.0.0.1"},
	}
}

// Stop stops both instances and removes their directory and keys; safe to
// call more than once.
func (s *Stunnel) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.client != nil {
			errs = append(errs, s.client.stop(0))
		}
		errs = append(errs, stopAndRemove(s.server, s.dir))
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
