package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// OpenSSHTunnel is OpenSSH's own client forwarding a local port to a
// server through an sshd (ssh -N -L), as people run it: every connection
// to the local port is a channel of the one SSH connection.
type OpenSSHTunnel struct {
	dir    string
	port   int
	cipher string
	proc   *process
	setup  time.Duration

	stopOnce sync.Once
	stopErr  error
}

// sshClientBinary is OpenSSH's client, from Debian's openssh-client.
func sshClientBinary() (string, error) {
	if exe, err := exec.LookPath("ssh"); err == nil {
		return exe, nil
	}
	return "", fmt.Errorf("OpenSSH's client is not installed: apt-get install openssh-client, or run scripts/install.sh: %w", ErrNotInstalled)
}

// StartOpenSSHTunnel runs ssh -N -L from a free local port to target
// (host:port as sshd sees it) through sshd, offering only cipher ("" for
// ssh's default order), and times its setup: from the process's start to
// the forward listening, after the key exchange and the login.
func StartOpenSSHTunnel(ctx context.Context, sshd *SSHD, target, cipher string) (_ *OpenSSHTunnel, err error) {
	exe, err := sshClientBinary()
	if err != nil {
		return nil, err
	}
	dir, err := makeLabDir("tlsbench-ssh-")
	if err != nil {
		return nil, err
	}
	t := &OpenSSHTunnel{dir: dir, cipher: cipher}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	if t.port, err = freePort(); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(sshd.Addr())
	if err != nil {
		return nil, err
	}
	args := []string{"-N", "-v", "-F", "/dev/null",
		"-L", fmt.Sprintf("127.0.0.1:%d:%s", t.port, target),
		"-p", port, "-l", sshd.User(), "-i", sshd.IdentityFile(),
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile=" + sshd.KnownHostsFile(), "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes", "-o", "ExitOnForwardFailure=yes",
		"-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "ServerAliveInterval=0"}
	if cipher != "" {
		args = append(args, "-c", cipher)
	}
	cmd := exec.Command(exe, append(args, host)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	log := filepath.Join(dir, "ssh.log")
	start := time.Now()
	if t.proc, err = startProcess("ssh -L", cmd, log); err != nil {
		return nil, err
	}
	// ssh -v says when the forward listens; poll for it finely, for the
	// setup's time.
	deadline := start.Add(readyTimeout)
	for {
		raw, _ := os.ReadFile(log)
		if bytes.Contains(raw, []byte("Local forwarding listening on 127.0.0.1 port "+strconv.Itoa(t.port))) {
			t.setup = time.Since(start)
			return t, nil
		}
		select {
		case <-t.proc.exited:
			return nil, t.proc.withKeptLog(t.proc.failure(fmt.Sprintf("exited before its forward listened (%v)", t.proc.exitErr)))
		case <-ctx.Done():
			return nil, errors.New("ssh -L: start cancelled")
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, t.proc.withKeptLog(t.proc.failure(fmt.Sprintf("did not forward within %v", readyTimeout)))
		}
	}
}

// Addr is the local end of the forward.
func (t *OpenSSHTunnel) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(t.port)) }

// Setup is how long ssh took from its start to a listening forward.
func (t *OpenSSHTunnel) Setup() time.Duration { return t.setup }

// CPU is the ssh client's CPU time so far.
func (t *OpenSSHTunnel) CPU() (time.Duration, error) { return t.proc.cpu() }

// Alive reports why ssh is gone, if it is, quoting its log.
func (t *OpenSSHTunnel) Alive() error { return t.proc.alive() }

// Version is the client's version, as it logs it.
func (t *OpenSSHTunnel) Version() string {
	raw, _ := os.ReadFile(filepath.Join(t.dir, "ssh.log"))
	if line, _, ok := bytes.Cut(raw, []byte("\n")); ok {
		if v, _, ok := bytes.Cut(line, []byte(",")); ok {
			return string(v)
		}
	}
	return "OpenSSH"
}

// Stop stops ssh and removes its directory; safe to call more than once.
func (t *OpenSSHTunnel) Stop() error {
	t.stopOnce.Do(func() { t.stopErr = stopAndRemove(t.proc, t.dir) })
	return t.stopErr
}

var (
	sshCipherRE  = regexp.MustCompile(`kex: client->server cipher: (\S+) MAC: (\S+)`)
	sshKexRE     = regexp.MustCompile(`kex: algorithm: (\S+)`)
	sshHostKeyRE = regexp.MustCompile(`kex: host key algorithm: (\S+)`)
)

// SSHNegotiated is what an SSH key exchange settled on.
type SSHNegotiated struct{ KeyExchange, HostKey, Cipher, MAC string }

// Negotiated is what ssh's key exchange settled on for what the client
// sends, from its log; MAC is "" for an AEAD cipher.
func (t *OpenSSHTunnel) Negotiated() SSHNegotiated {
	raw, _ := os.ReadFile(filepath.Join(t.dir, "ssh.log"))
	var n SSHNegotiated
	if m := sshCipherRE.FindSubmatch(raw); m != nil {
		n.Cipher, n.MAC = string(m[1]), string(m[2])
		if n.MAC == "<implicit>" {
			n.MAC = ""
		}
	}
	if m := sshKexRE.FindSubmatch(raw); m != nil {
		n.KeyExchange = string(m[1])
	}
	if m := sshHostKeyRE.FindSubmatch(raw); m != nil {
		n.HostKey = string(m[1])
	}
	return n
}
