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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/netx"
)

// process is a server child process: in its own process group (a Ctrl-C
// on the terminal reaches only tlsbench, which stops it in order) and
// killed by the kernel if tlsbench dies. Its own children are not (sshd's
// per-connection ones outlive it while their client is connected): the
// next lab start's sweep kills them.
type process struct {
	name    string // for messages: "PostgreSQL", "built-in server"
	cmd     *exec.Cmd
	log     string        // file its output goes to, quoted when it fails
	exited  chan struct{} // closed once it has been waited for
	exitErr error

	// cpuMu guards cpuMax, the most cpu has returned (see cpu).
	cpuMu  sync.Mutex
	cpuMax time.Duration
}

// startProcess starts cmd as a server process of the lab dir that holds
// logPath, marked as such in its environment (see labEnv and serverOf).
// Unless cmd already has them, its stdout and stderr go to logPath.
func startProcess(name string, cmd *exec.Cmd, logPath string) (*process, error) {
	return startProcessIn("", name, cmd, logPath)
}

// startProcessIn is startProcess with cmd's network the namespace's at
// netns (/run/netns/NAME; "" is tlsbench's own): a server on the far side
// of a delay link (a Galera node in another data centre).
func startProcessIn(netns, name string, cmd *exec.Cmd, logPath string) (*process, error) {
	p := &process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, labEnv+"="+filepath.Dir(logPath))
	if cmd.Stdout == nil || cmd.Stderr == nil {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child has its own copy
		if cmd.Stdout == nil {
			cmd.Stdout = f
		}
		if cmd.Stderr == nil {
			cmd.Stderr = f
		}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	start := func() error { return host.StartPinned(cmd.Start) }
	if netns != "" {
		// Pinned inside: the thread that forks is the one in netns.
		start = func() error { return netx.InNetns(netns, func() error { return host.StartPinned(cmd.Start) }) }
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Timing of a server's life.
var (
	// readyTimeout bounds a start; generous, because a busy machine may be
	// slow to schedule a server that initializes a data directory.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a server may take to exit after SIGTERM.
	stopGrace = 2 * time.Second
)

// logTail is how many lines of a server's log an error quotes.
const logTail = 10

// waitReady polls ready until it succeeds, the process exits, the timeout
// passes or ctx is cancelled.
func (p *process) waitReady(ctx interface{ Done() <-chan struct{} }, ready func() error) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.failure(fmt.Sprintf("exited before it was ready (%v)", p.exitErr))
		case <-ctx.Done():
			return fmt.Errorf("%s: start cancelled", p.name)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return p.failure(fmt.Sprintf("was not ready within %v (%v)", readyTimeout, last))
		}
	}
}

// finish waits until a program that runs to its end (an initializer, a
// dump) has exited, for at most limit; cancelled or past limit, it is
// killed. A failed exit quotes its log.
func (p *process) finish(ctx context.Context, limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.stop(syscall.SIGKILL)
		return fmt.Errorf("%s: start cancelled (%w)", p.name, ctx.Err())
	case <-timer.C:
		p.stop(syscall.SIGKILL)
		return p.failure(fmt.Sprintf("did not finish within %v", limit))
	}
	if p.exitErr != nil {
		return p.failure(fmt.Sprintf("failed (%v)", p.exitErr))
	}
	return nil
}

// ownCPU is the CPU time of a program that has exited, its own and its
// waited-for children's.
func (p *process) ownCPU() time.Duration {
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// failure makes an error that quotes the end of the server's log; call it
// before the log's directory is removed.
func (p *process) failure(what string) error {
	msg := p.name + " " + what
	if tail := p.tail(); tail != "" {
		return fmt.Errorf("%s; its log ends:\n%s", msg, tail)
	}
	return fmt.Errorf("%s; its log is empty", msg)
}

// tail is the last logTail lines of the server's log.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTail {
		lines = lines[len(lines)-logTail:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// keepLog copies the server's log out of its directory, which is removed
// with the server's keys, and returns where it went: a server that failed
// to start leaves its whole log for a post-mortem (a sweep removes it a day
// after this process has ended).
func (p *process) keepLog() string {
	data, err := os.ReadFile(p.log)
	if err != nil || len(data) == 0 {
		return ""
	}
	f, err := os.CreateTemp(labTempDir(), keptLogPattern(p.name))
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return ""
	}
	return f.Name()
}

// withKeptLog adds to a start error where keepLog kept the whole log.
func (p *process) withKeptLog(err error) error {
	if path := p.keepLog(); path != "" {
		return fmt.Errorf("%w\n(its whole log is kept in %s)", err, path)
	}
	return err
}

// alive reports an error if the process has exited, also when it has not
// been waited for yet: a run that failed the moment its server died asks
// before the wait returns.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return p.failure(fmt.Sprintf("has exited (%v)", p.exitErr))
	default:
	}
	if !p.zombie() {
		return nil
	}
	select {
	case <-p.exited:
		return p.failure(fmt.Sprintf("has exited (%v)", p.exitErr))
	case <-time.After(time.Second):
		return p.failure("has exited")
	}
}

// zombie reports whether the process has exited but is not waited for.
func (p *process) zombie() bool {
	st, err := host.ReadStat(p.cmd.Process.Pid)
	return err == nil && (st.State == "Z" || st.State == "X")
}

// stop sends sig (SIGTERM if 0) to the process group, waits stopGrace, then
// SIGKILLs it. It reports a process that had died by itself.
func (p *process) stop(sig syscall.Signal) error { return p.stopWithin(sig, stopGrace) }

// stopWithin is stop with grace instead of stopGrace: a server that must
// shut down cleanly to start again from its data (a Galera node) may
// take longer.
func (p *process) stopWithin(sig syscall.Signal, grace time.Duration) error {
	select {
	case <-p.exited:
		return p.failure(fmt.Sprintf("had exited by itself (%v)", p.exitErr))
	default:
	}
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	pgid := -p.cmd.Process.Pid
	syscall.Kill(pgid, sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// stopAndRemove stops p, if it was started, and removes dir with the
// server's keys: the end of every lab server.
func stopAndRemove(p *process, dir string) error {
	var errs []error
	if p != nil {
		errs = append(errs, p.stop(0))
	}
	errs = append(errs, os.RemoveAll(dir))
	return errors.Join(errs...)
}

// cpu is the CPU time the server has used so far: host.TreeCPU of the
// process and all its descendants (tree).
func (p *process) cpu() (time.Duration, error) {
	tree, err := p.tree()
	if err != nil {
		return 0, err
	}
	total := host.TreeCPU(tree)
	// When a child is reaped, its nanoseconds join the parent's
	// children's ticks, truncated: the sum may lose up to a tick. A
	// meter does not go back.
	p.cpuMu.Lock()
	defer p.cpuMu.Unlock()
	p.cpuMax = max(p.cpuMax, total)
	return p.cpuMax, nil
}

// memory reads the memory of the process and all its descendants (the
// same tree as cpu).
func (p *process) memory() (host.Memory, error) {
	tree, err := p.tree()
	if err != nil {
		return host.Memory{}, err
	}
	return host.TreeMemory(tree, p.cmd.Process.Pid)
}

// tree is the process and all its descendants, by pid, as /proc shows
// them now (host.Tree).
func (p *process) tree() (map[int]host.Stat, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	all, err := host.Processes()
	if err != nil {
		return nil, err
	}
	root := p.cmd.Process.Pid
	if st, ok := all[root]; !ok || st.State == "Z" {
		// It died while /proc was read: its children are no longer its
		// own, and its time is gone with it. Reaping it is a moment away.
		select {
		case <-p.exited:
			return nil, p.alive()
		case <-time.After(stopGrace):
			return nil, p.failure("has exited")
		}
	}
	return host.Tree(all, root), nil
}

// freePort returns a loopback TCP port that was free a moment ago. Servers
// that cannot listen on port 0 and report it need one.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// toolVersion is what re's first group finds in what exe prints when run
// with args (its version banner), "unknown" if nothing.
func toolVersion(exe string, re *regexp.Regexp, args ...string) string {
	out, _ := exec.Command(exe, args...).CombinedOutput()
	if m := re.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}
