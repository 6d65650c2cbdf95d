package lab

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// sshdBinary is where Debian's openssh-server puts sshd; it must be run by
// its absolute path.
const sshdBinary = "/usr/sbin/sshd"

// SSHD is a throw-away OpenSSH server for tunnels: in a 0700 temp dir, on a
// free loopback port, with a generated host key and a generated key for the
// user tlsbench runs as, port forwarding allowed and nothing else.
type SSHD struct {
	dir     string
	proc    *process
	port    int
	user    string
	signer  ssh.Signer
	hostKey ssh.PublicKey
	version string
	ciphers []string // what it offers

	stopOnce sync.Once
	stopErr  error
}

// StartSSHD starts Debian's sshd. It offers every cipher plan.SSHCiphers
// names, aes128-cbc included, so that a tunnel can be asked for any of
// them, and the extra ones given (OpenSSH's own client's aes256-cbc).
func StartSSHD(ctx context.Context, extra ...string) (_ *SSHD, err error) {
	if _, err := os.Stat(sshdBinary); err != nil {
		return nil, fmt.Errorf("sshd is not installed (%s): apt-get install openssh-server, or run scripts/install.sh: %w", sshdBinary, ErrNotInstalled)
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	dir, err := makeLabDir("tlsbench-sshd-")
	if err != nil {
		return nil, err
	}
	s := &SSHD{dir: dir, user: u.Username, ciphers: slices.Clone(plan.SSHCiphers)}
	for _, c := range extra {
		if !slices.Contains(s.ciphers, c) {
			s.ciphers = append(s.ciphers, c)
		}
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	hostSigner, err := writeSSHKey(filepath.Join(dir, "host_ed25519"))
	if err != nil {
		return nil, err
	}
	s.hostKey = hostSigner.PublicKey()
	if s.signer, err = writeSSHKey(s.IdentityFile()); err != nil {
		return nil, err
	}
	authorized := ssh.MarshalAuthorizedKey(s.signer.PublicKey())
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), authorized, 0o600); err != nil {
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, s.hostKey)
	if err := os.WriteFile(s.KnownHostsFile(), []byte(line+"\n"), 0o600); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(s.config()), 0o600); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd running as root insists on its privilege separation
		// directory, which Debian's service would have made.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(sshdBinary, "-D", "-e", "-f", conf)
	cmd.Dir = dir
	if s.proc, err = startProcess("sshd", cmd, filepath.Join(dir, "sshd.log")); err != nil {
		return nil, err
	}
	if err := s.proc.waitReady(ctx, func() error {
		v, err := sshBanner(s.Addr())
		s.version = v
		return err
	}); err != nil {
		return nil, s.proc.withKeptLog(err)
	}
	return s, nil
}

func (s *SSHD) config() string {
	return strings.Join([]string{
		"ListenAddress 127.0.0.1:" + strconv.Itoa(s.port),
		"HostKey " + filepath.Join(s.dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.dir, "authorized_keys"),
		"PidFile none",
		"UsePAM no",
		"StrictModes no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"AllowTcpForwarding local",
		"PermitOpen any",
		"X11Forwarding no",
		"PermitTTY no",
		"Ciphers " + strings.Join(s.ciphers, ","),
		// A connect loop opens thousands of channels on one connection
		// and may start several connections at once.
		"MaxStartups 100",
		"MaxSessions 100",
		"LogLevel INFO",
		"",
	}, "\n")
}

// writeSSHKey generates an Ed25519 key, stores it in OpenSSH's format with
// mode 0600 and returns its signer.
func writeSSHKey(path string) (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "tlsbench lab")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewSignerFromKey(priv)
}

// sshBanner reads an SSH server's identification line.
func sshBanner(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return "", fmt.Errorf("not an SSH server: %q", line)
	}
	return strings.TrimPrefix(line, "SSH-2.0-"), nil
}

// Addr is the server's host:port.
func (s *SSHD) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// User is the account tunnels log in as: the one tlsbench runs as.
func (s *SSHD) User() string { return s.user }

// IdentityFile holds the user's private key (0600), for `ssh -i`.
func (s *SSHD) IdentityFile() string { return filepath.Join(s.dir, "id_ed25519") }

// KnownHostsFile holds the server's host key, for `ssh -o UserKnownHostsFile`.
func (s *SSHD) KnownHostsFile() string { return filepath.Join(s.dir, "known_hosts") }

// URL is how --via reaches the server, key and host key named by path.
func (s *SSHD) URL() string {
	return fmt.Sprintf("ssh://%s@%s?identity=%s&known_hosts=%s", s.user, s.Addr(), s.IdentityFile(), s.KnownHostsFile())
}

// Config is how a tunnel logs in: the generated key, the host key pinned.
func (s *SSHD) Config(cipher string) netx.SSHConfig {
	return netx.SSHConfig{
		Addr:    s.Addr(),
		User:    s.user,
		Auth:    []ssh.AuthMethod{ssh.PublicKeys(s.signer)},
		HostKey: ssh.FixedHostKey(s.hostKey),
		Cipher:  cipher,
	}
}

// Version is the server's software version, e.g. "OpenSSH_9.2p1 Debian-2+deb12u7".
func (s *SSHD) Version() string { return s.version }

// CPU is the CPU time sshd and its per-connection children have used.
func (s *SSHD) CPU() (time.Duration, error) { return s.proc.cpu() }

// Alive reports why the server is gone, if it is.
func (s *SSHD) Alive() error { return s.proc.alive() }

// Stop stops sshd and removes its directory and keys; safe to call more
// than once.
func (s *SSHD) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = stopAndRemove(s.proc, s.dir) })
	return s.stopErr
}
