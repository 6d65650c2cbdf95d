// Package lab starts throw-away real servers for a run and always cleans them up.
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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// BuiltinOptions configure the built-in server.
type BuiltinOptions struct {
	Keys         []string // key types, one HTTPS listener each
	ResponseSize int
	MaxTLS       string // "" or "1.2"
	// Exe is the tlsbench binary to run; "" means this one (os.Executable,
	// which also works under `go run`).
	Exe string
}

// Builtin is a running built-in server: a child process `tlsbench serve`.
type Builtin struct {
	dir      string
	cmd      *exec.Cmd
	opts     BuiltinOptions
	ready    readyLine
	roots    *x509.CertPool
	exited   chan struct{} // closed when the child has been waited for
	exitErr  error         // the child's exit status, once exited is closed
	stopOnce sync.Once
	stopErr  error
}

// readyLine is what `tlsbench serve --json` prints once it listens.
type readyLine struct {
	HTTP  string            `json:"http"`
	HTTPS map[string]string `json:"https"`
}

// Timing of the child's life.
var (
	// readyTimeout bounds the start; generous, because the child loads
	// keys and a busy machine may be slow to schedule it.
	readyTimeout = 60 * time.Second
	// stopGrace is how long the child may take to exit after SIGTERM.
	stopGrace = 2 * time.Second
)

// logTail is how many lines of the child's log an error quotes.
const logTail = 10

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
	dir, err := os.MkdirTemp("", "tlsbench-lab-")
	if err != nil {
		return nil, err
	}
	b := &Builtin{dir: dir, opts: o, exited: make(chan struct{})}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	ca, err := tlsx.NewCA()
	if err != nil {
		return nil, err
	}
	b.roots = ca.Pool()
	if err := tlsx.WriteServerFiles(dir, ca, o.Keys); err != nil {
		return nil, err
	}

	args := []string{"serve", "--json", "--cert-dir", dir, "--key", strings.Join(o.Keys, ","),
		"--size", strconv.Itoa(o.ResponseSize), "--http", "127.0.0.1:0", "--https", "127.0.0.1:0"}
	if o.MaxTLS != "" {
		args = append(args, "--tls-max", o.MaxTLS)
	}
	logFile, err := os.OpenFile(b.logPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	// A pipe of our own rather than StdoutPipe, so that reading it never
	// races with Wait.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Stdout = pw
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The child dies with us, even on SIGKILL; in its own process
		// group, a Ctrl-C reaches only us, and we stop it in order.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("built-in server: %w", err)
	}
	b.cmd = cmd
	go func() {
		b.exitErr = cmd.Wait()
		close(b.exited)
	}()

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
			case <-b.exited:
				return nil, b.failure(fmt.Sprintf("exited before it was ready (%v)", b.exitErr))
			case <-time.After(stopGrace):
				return nil, b.failure("closed its output before it was ready")
			}
		}
		if err := b.parseReady(res.line); err != nil {
			return nil, b.failure(err.Error())
		}
	case <-b.exited:
		return nil, b.failure(fmt.Sprintf("exited before it was ready (%v)", b.exitErr))
	case <-timer.C:
		return nil, b.failure(fmt.Sprintf("was not ready within %v", readyTimeout))
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
	}
	return nil
}

func (b *Builtin) logPath() string { return filepath.Join(b.dir, "server.log") }

// failure makes a start error that quotes the end of the child's log; it
// reads the log before Stop removes it.
func (b *Builtin) failure(what string) error {
	msg := "built-in server " + what
	data, _ := os.ReadFile(b.logPath())
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTail {
		lines = lines[len(lines)-logTail:]
	}
	if tail := strings.TrimSpace(strings.Join(lines, "\n")); tail != "" {
		return fmt.Errorf("%s; its log ends:\n%s", msg, tail)
	}
	return fmt.Errorf("%s; its log is empty", msg)
}

// Endpoint is the address serving key ("" for plain HTTP), "" if none.
func (b *Builtin) Endpoint(key string) string {
	if key == "" {
		return b.ready.HTTP
	}
	return b.ready.HTTPS[key]
}

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

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// CPU is the child's user+system CPU time so far.
func (b *Builtin) CPU() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("built-in server CPU: %w", err)
	}
	return parseStatCPU(data)
}

// parseStatCPU reads utime+stime from /proc/PID/stat. The command name
// (field 2) may hold spaces and parentheses, so fields count from the last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("built-in server CPU: malformed /proc stat")
	}
	// After ")": state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("built-in server CPU: short /proc stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("built-in server CPU: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// Stop ends the child (SIGTERM, then SIGKILL after 2 s) and removes the
// temp dir with its keys. It is safe to call more than once. It reports a
// child that had died by itself before Stop, quoting its log.
func (b *Builtin) Stop() error {
	b.stopOnce.Do(func() {
		var errs []error
		if b.cmd != nil {
			select {
			case <-b.exited:
				errs = append(errs, b.failure(fmt.Sprintf("had exited by itself (%v)", b.exitErr)))
			default:
				errs = append(errs, b.terminate())
			}
		}
		errs = append(errs, os.RemoveAll(b.dir))
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}

// terminate signals the child's process group, which holds the child alone
// unless it started others, and waits for the child to exit.
func (b *Builtin) terminate() error {
	pgid := -b.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-b.exited:
		return nil
	case <-time.After(stopGrace):
	}
	syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-b.exited:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("built-in server (pid %d) did not exit after SIGKILL", b.cmd.Process.Pid)
	}
}
