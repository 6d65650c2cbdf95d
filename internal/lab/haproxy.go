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

// HAProxy is Debian's haproxy terminating TLS before a plaintext server, in
// TCP mode: a frontend per key presenting that key's certificate, and a
// plain one (the proxy's cost without TLS), all forwarding to one backend.
type HAProxy struct {
	dir     string
	ports   map[string]int // by key; "" is the plain frontend
	alpn    string
	proc    *process
	version string

	stopOnce sync.Once
	stopErr  error
}

// HAProxyOptions configure an HAProxy.
type HAProxyOptions struct {
	// Backend is the plaintext server's host:port.
	Backend string
	// Keys are the key types to present, one frontend each, their
	// certificates CertDir/KEY.crt and .key; Plain adds a plain frontend.
	Keys    []string
	CertDir string
	Plain   bool
	// ALPN is the protocol the TLS frontends offer ("http/1.1",
	// "postgresql" for PostgreSQL's direct TLS), "" for none.
	ALPN string
}

func haproxyBinary() (string, error) {
	if exe, err := exec.LookPath("haproxy"); err == nil {
		return exe, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", fmt.Errorf("haproxy is not installed: apt-get install haproxy, or run scripts/install.sh: %w", ErrNotInstalled)
}

// StartHAProxy starts HAProxy before o.Backend.
func StartHAProxy(ctx context.Context, o HAProxyOptions) (_ *HAProxy, err error) {
	exe, err := haproxyBinary()
	if err != nil {
		return nil, err
	}
	dir, err := makeLabDir("tlsbench-haproxy-")
	if err != nil {
		return nil, err
	}
	h := &HAProxy{dir: dir, ports: map[string]int{}, alpn: o.ALPN}
	defer func() {
		if err != nil {
			h.Stop()
		}
	}()
	h.version = haproxyVersion(exe)
	cfg := []string{
		"global",
		"  maxconn 8000", // two descriptors each, under the usual 20000 limit
		"  log stderr format short local0 notice",
		"defaults",
		"  mode tcp",
		"  log global",
		"  timeout connect 5s",
		"  timeout client 1h",
		"  timeout server 1h",
		"backend server",
		"  server s1 " + o.Backend,
	}
	keys := o.Keys
	if o.Plain {
		keys = append([]string{""}, keys...)
	}
	taken := map[int]bool{}
	for _, k := range keys {
		port, err := freePort()
		for err == nil && taken[port] {
			port, err = freePort()
		}
		if err != nil {
			return nil, err
		}
		taken[port] = true
		h.ports[k] = port
		bind := fmt.Sprintf("  bind 127.0.0.1:%d", port)
		name := "plain"
		if k != "" {
			// HAProxy reads a certificate and its key from one PEM file.
			crt, err1 := os.ReadFile(filepath.Join(o.CertDir, k+".crt"))
			key, err2 := os.ReadFile(filepath.Join(o.CertDir, k+".key"))
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			pem := filepath.Join(dir, k+".pem")
			if err := os.WriteFile(pem, append(crt, key...), 0o600); err != nil {
				return nil, err
			}
			bind += " ssl crt " + pem
			if o.ALPN != "" {
				bind += " alpn " + o.ALPN
			}
			name = k
		}
		cfg = append(cfg, "frontend "+name, bind, "  default_backend server")
	}
	conf := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(strings.Join(cfg, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	// RSA-1024 needs OpenSSL's security level 0, as on the lab servers.
	if err := os.WriteFile(filepath.Join(dir, "openssl.cnf"), []byte(pgOpenSSLConf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-db", "-f", conf) // -db: foreground, no daemon
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "OPENSSL_CONF=" + filepath.Join(dir, "openssl.cnf")}
	if h.proc, err = startProcess("haproxy", cmd, filepath.Join(dir, "haproxy.log")); err != nil {
		return nil, err
	}
	if err := h.proc.waitReady(ctx, h.listening); err != nil {
		return nil, h.proc.withKeptLog(err)
	}
	return h, nil
}

func (h *HAProxy) listening() error { return listening(h.ports) }

var haproxyVersionRE = regexp.MustCompile(`HAProxy version (\S+)`)

func haproxyVersion(exe string) string { return toolVersion(exe, haproxyVersionRE, "-v") }

// Addr is the frontend presenting key's certificate ("" the plain one).
func (h *HAProxy) Addr(key string) (string, error) {
	p, ok := h.ports[key]
	if !ok {
		if key == "" {
			return "", errors.New("haproxy has no plain frontend")
		}
		return "", fmt.Errorf("haproxy has no frontend for key %q", key)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// CPU is HAProxy's CPU time so far.
func (h *HAProxy) CPU() (time.Duration, error) { return h.proc.cpu() }

// Alive reports why HAProxy is gone, if it is, quoting its log.
func (h *HAProxy) Alive() error { return h.proc.alive() }

// Info describes HAProxy for the result.
func (h *HAProxy) Info() result.Server {
	eps := map[string]string{}
	for k := range h.ports {
		eps[k], _ = h.Addr(k)
	}
	set := map[string]string{"mode": "tcp", "tls": "terminated here; plaintext to the server"}
	if h.alpn != "" {
		set["alpn"] = h.alpn
	}
	return result.Server{Software: "HAProxy", Version: h.version, Endpoints: eps, Settings: set}
}

// Stop stops HAProxy and removes its directory and keys; safe to call more
// than once.
func (h *HAProxy) Stop() error {
	h.stopOnce.Do(func() { h.stopErr = stopAndRemove(h.proc, h.dir) })
	return h.stopErr
}
