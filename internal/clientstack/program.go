package clientstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/clients"
	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// Run is one run of PROTOCOL.md: an experiment at a concurrency, after
// Warmup of unreported operations, until MaxOps operations (0: no bound)
// or Duration after the warm-up.
type Run struct {
	// Experiment is connect or pool; new-client or reused-client (the
	// MongoDB seed's loops, for a stack whose Config names them).
	Experiment           string
	Concurrency, PerConn int
	MaxOps               int64
	Duration, Warmup     time.Duration
	// Warmed, if set, is called once when the warm-up ends and the
	// measured part begins (a program's warm line; a C tool's start, or
	// its warm-up window's end), possibly from another goroutine, even
	// as Run returns; a run that fails before may never call it.
	Warmed func()
}

// warmed calls r.Warmed, if set.
func (r Run) warmed() {
	if r.Warmed != nil {
		r.Warmed()
	}
}

// Report is what a run did.
type Report struct {
	// Ops are the operations reported, in the order they ended.
	Ops []Op
	// CPU is the user and system time of the client's processes over the
	// measured part of the run, after its warm-up (every thread, the
	// reporting of operations included).
	CPU time.Duration
	// Elapsed is the measured part as tlsbench saw it, from the warm line
	// to done.
	Elapsed time.Duration
	// WarmupCPU and Warmup are what the warm-up cost and took (a pool's
	// opening included): the command to the warm line.
	WarmupCPU, Warmup time.Duration
	// TLS is what the stack said it negotiated; nil if it said nothing.
	TLS *Negotiated
	// Totals replaces Ops for a C tool that prints only aggregates
	// (redis-benchmark, openssl s_time); nil for the programs.
	Totals *Totals
	// Extra is what the run opened besides its operations' connections,
	// which the server counts too.
	Extra Extra
}

// Extra is the connections a run opened, from its command to its end,
// besides those of its operations (each connect operation's, a pool's):
// a C tool's own (pgbench's first, which reads the server's settings;
// redis-benchmark's CONFIG GET), a warm-up run's, what a tool ran past a
// count, a program's connect warm-up (its warm line's count; a failed
// operation may not have reached the server). Min to Max of them; Known
// is false where the stack cannot tell (curl, s_time; a program whose
// warm line does not count).
type Extra struct {
	Min, Max int64
	Known    bool
}

// exactly is an Extra of n connections.
func exactly(n int64) Extra { return Extra{Min: n, Max: n, Known: true} }

// Totals is a run as a tool that reports no single operation sums it up.
type Totals struct {
	Ops, Errors int64
	// ErrorSample is the tool's message for a failure, if it printed one.
	ErrorSample string
	// The latency of an operation as the tool prints it; zero where it
	// prints none (openssl s_time prints only a count).
	Mean, P50, P95, P99, Max time.Duration
}

// Client is a running client stack.
type Client interface {
	// Hello is what the stack said of itself when it started.
	Hello() Hello
	// Run runs one run. A run that fails keeps the operations it
	// reported in its Report; the next Run starts a new process.
	Run(ctx context.Context, r Run) (Report, error)
	// Close stops the client and reaps its processes.
	Close() error
}

// Lifetimes.
var (
	// helloTimeout bounds a program's start to its hello: a JVM compiling
	// a source file on a loaded machine takes seconds.
	helloTimeout = 60 * time.Second
	// runGrace is how far past its duration, warm-up and operation
	// timeout a run may end before it counts as hung.
	runGrace = 10 * time.Second
	// quitGrace is how long a program may take to exit after quit.
	quitGrace = 5 * time.Second
)

// starters start a stack's client by its Lang; the C tools add theirs.
var starters = map[string]func(ctx context.Context, cfg Config) (Client, error){
	"python": startProgram,
	"node":   startProgram,
	"java":   startProgram,
}

// Start starts the client of cfg.Stack. A stack that cannot run cfg
// returns *Refused; one whose libraries are missing *NotInstalled.
func Start(ctx context.Context, cfg Config) (Client, error) {
	start, ok := starters[cfg.Stack.Lang]
	if !ok {
		return nil, fmt.Errorf("client %s: no way to start a %s stack", cfg.Stack.Name, cfg.Stack.Lang)
	}
	return start(ctx, cfg)
}

// programs are the clients/ programs by language.
var programs = map[string]string{
	"python": "python/tlsbench_client.py",
	"node":   "node/client.js",
	"java":   "java/Client.java",
}

// command makes the command that runs a program file of lang.
func command(lang, file string) (*exec.Cmd, error) {
	dir := Dir()
	var cmd *exec.Cmd
	switch lang {
	case "python":
		exe := filepath.Join(dir, "python", "venv", "bin", "python3")
		if _, err := os.Stat(exe); err != nil {
			return nil, &NotInstalled{Missing: exe}
		}
		cmd = exec.Command(exe, file)
	case "node":
		mods := filepath.Join(dir, "node", "node_modules")
		if _, err := os.Stat(mods); err != nil {
			return nil, &NotInstalled{Missing: mods}
		}
		exe, err := exec.LookPath("node")
		if err != nil {
			return nil, &NotInstalled{Missing: "node"}
		}
		cmd = exec.Command(exe, file)
		cmd.Env = append(cmd.Env, "NODE_PATH="+mods)
	case "java":
		lib := filepath.Join(dir, "java", "lib")
		if _, err := os.Stat(lib); err != nil {
			return nil, &NotInstalled{Missing: lib}
		}
		exe, err := exec.LookPath("java")
		if err != nil {
			return nil, &NotInstalled{Missing: "java"}
		}
		cmd = exec.Command(exe, "-cp", filepath.Join(lib, "*"), file)
	default:
		return nil, fmt.Errorf("no program for %s", lang)
	}
	return cmd, nil
}

// startProgram starts a clients/ program for cfg.
func startProgram(ctx context.Context, cfg Config) (Client, error) {
	return startWith(ctx, cfg, func(dir string) (*exec.Cmd, error) {
		src, err := clients.Program(programs[cfg.Stack.Lang])
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, filepath.Base(programs[cfg.Stack.Lang]))
		if err := os.WriteFile(file, src, 0o600); err != nil {
			return nil, err
		}
		return command(cfg.Stack.Lang, file)
	})
}

// StartCommand starts cfg's client as the program newCmd makes, given the
// client's own 0700 directory: a stand-in program (testdata/fake_client.py)
// for the tests of what runs clients, with Start's configuration file,
// environment, hello, reaping and restarts.
func StartCommand(ctx context.Context, cfg Config, newCmd func(dir string) (*exec.Cmd, error)) (Client, error) {
	p, err := startWith(ctx, cfg, newCmd)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// program is a client program speaking PROTOCOL.md on its stdin and stdout.
type program struct {
	cfg    Config
	newCmd func(dir string) (*exec.Cmd, error)

	// The running process; cmd is nil after a failure until the next Run.
	cmd    *exec.Cmd
	dir    string
	stdin  io.WriteCloser
	lines  chan read
	exited chan struct{}
	stderr *tail
	hello  Hello
	runs   int
}

// read is a line of the program's output, or why there are no more.
type read struct {
	l   line
	err error
}

func startWith(ctx context.Context, cfg Config, newCmd func(dir string) (*exec.Cmd, error)) (*program, error) {
	p := &program{cfg: cfg, newCmd: newCmd}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// env is what a program inherits of tlsbench's environment: what finds
// the runtime and its temp files, not the PG*, MYSQL_* or SSL* variables
// that would change what a driver does behind its configuration.
var env = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "JAVA_HOME", "XDG_CACHE_HOME"}

func (p *program) start(ctx context.Context) (err error) {
	name := p.cfg.Stack.Name
	dir, config, err := writeConfig(p.cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.kill()
			os.RemoveAll(dir)
		}
	}()
	cmd, err := p.newCmd(dir)
	if err != nil {
		var ni *NotInstalled
		if errors.As(err, &ni) {
			ni.Stack = name
		}
		return err
	}
	for _, k := range env {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, "TLSBENCH_CONFIG="+config, "PYTHONDONTWRITEBYTECODE=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.stderr = &tail{redact: p.cfg.Password}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	// A pipe of our own, not StdoutPipe: Wait would close that as the
	// process exits, losing a refuse line printed just before.
	stdout, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout = w
	err = start(cmd, p.cfg.Netns)
	w.Close()
	if err != nil {
		stdout.Close()
		return fmt.Errorf("client %s: %w", name, err)
	}
	p.cmd, p.dir = cmd, dir
	p.exited = make(chan struct{})
	p.lines = make(chan read, 4096)
	go p.readLines(stdout)
	go func() { cmd.Wait(); close(p.exited) }()

	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case r, ok := <-p.lines:
		switch {
		case !ok:
			return p.failed("exited before it said hello")
		case r.err != nil:
			return p.failed(r.err.Error())
		case r.l.kind == "refuse":
			return &Refused{Stack: name, Why: r.l.text}
		case r.l.kind == "fatal":
			return p.failed("failed to start: " + r.l.text)
		case r.l.kind != "hello":
			return p.failed("said " + r.l.kind + " before hello")
		}
		p.hello = r.l.hello
		return nil
	case <-t.C:
		return p.failed(fmt.Sprintf("did not say hello within %v", helloTimeout))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readLines reads the program's output until it ends: a line the
// protocol does not have ends it too.
func (p *program) readLines(stdout io.ReadCloser) {
	defer stdout.Close()
	defer close(p.lines)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l, err := parseLine(sc.Text())
		p.lines <- read{l, err}
		if err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil {
		p.lines <- read{err: err}
	}
}

// failed kills the process and says why, with the end of its stderr.
func (p *program) failed(why string) error {
	p.kill()
	msg := "client " + p.cfg.Stack.Name + " " + why
	if t := p.stderr.String(); t != "" {
		msg += ": " + t
	}
	return errors.New(msg)
}

// kill kills the process group and reaps it; the next Run starts anew.
func (p *program) kill() {
	if p.cmd == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	go func(lines chan read) { // let the reader end
		for range lines {
		}
	}(p.lines)
	p.cmd = nil
	os.RemoveAll(p.dir)
}

func (p *program) Hello() Hello { return p.hello }

func (p *program) Run(ctx context.Context, r Run) (rep Report, err error) {
	if r.Duration <= 0 {
		return rep, errors.New("a client run needs a duration")
	}
	if p.cmd == nil {
		if err := p.start(ctx); err != nil {
			return rep, err
		}
	}
	p.runs++
	id := p.runs
	if r.Experiment == "pool" || r.Experiment == "connect" && r.Warmup <= 0 {
		// A pool opens its connections before the warm-up, which runs on
		// them; a connect warm-up's new connections are the warm line's.
		rep.Extra = exactly(0)
	}
	cpu0, err := p.cpu()
	if err != nil {
		return rep, p.failed("cannot be metered: " + err.Error())
	}
	began := time.Now()
	warmed := false
	cmd := fmt.Sprintf("run %d %s %d %d %d %d %d\n", id, r.Experiment, r.Concurrency, max(r.PerConn, 1), r.MaxOps,
		r.Duration.Milliseconds(), r.Warmup.Milliseconds())
	if _, err := io.WriteString(p.stdin, cmd); err != nil {
		return rep, p.failed("does not read its commands: " + err.Error())
	}
	limit := time.NewTimer(r.Duration + r.Warmup + 2*p.cfg.Timeout + runGrace)
	defer limit.Stop()
	var errs int64
	for {
		select {
		case <-ctx.Done():
			p.kill()
			return rep, ctx.Err()
		case <-limit.C:
			return rep, p.failed(fmt.Sprintf("did not end its run within %v of its duration", 2*p.cfg.Timeout+runGrace))
		case rd, ok := <-p.lines:
			switch {
			case !ok:
				return rep, p.failed("exited during a run" + p.exitStatus())
			case rd.err != nil:
				return rep, p.failed("printed what tlsbench cannot read: " + rd.err.Error())
			}
			l := rd.l
			if !warmed && (l.kind == "op" || l.kind == "seedop" || l.kind == "err" || l.kind == "done") {
				return rep, p.failed("said " + l.kind + " before warm")
			}
			// A new client's iteration says when it was built; nothing
			// else does.
			if seed := r.Experiment == string(plan.NewClient); seed && l.kind == "op" || !seed && l.kind == "seedop" {
				return rep, p.failed("said " + l.kind + " during a " + r.Experiment + " run")
			}
			switch l.kind {
			case "warm":
				if warmed || l.id != id {
					return rep, p.failed(fmt.Sprintf("said warm %d during run %d", l.id, id))
				}
				cpu, err := p.cpu()
				if err != nil {
					return rep, p.unmetered(err)
				}
				warmed = true
				if r.Experiment == "connect" && l.ops >= 0 {
					// Each of its operations a connection; a failed one
					// may not have reached the server.
					rep.Extra = Extra{Min: l.ops - l.errs, Max: l.ops, Known: true}
				}
				rep.Warmup, rep.WarmupCPU = time.Since(began), max(cpu-cpu0, 0)
				began, cpu0 = time.Now(), cpu
				r.warmed()
			case "op", "seedop", "err":
				rep.Ops = append(rep.Ops, l.op)
				if l.op.Failed() {
					errs++
				}
			case "tls":
				if rep.TLS == nil {
					n := l.tls
					rep.TLS = &n
				}
			case "fatal":
				return rep, p.failed("failed: " + l.text)
			case "done":
				rep.Elapsed = time.Since(began)
				cpu1, err := p.cpu()
				if err != nil {
					return rep, p.unmetered(err)
				}
				rep.CPU = max(cpu1-cpu0, 0)
				if l.id != id || l.ops != int64(len(rep.Ops)) || l.errs != errs {
					return rep, p.failed(fmt.Sprintf("said done %d with %d operations and %d errors, but reported run %d with %d and %d",
						l.id, l.ops, l.errs, id, len(rep.Ops), errs))
				}
				return rep, nil
			default:
				return rep, p.failed("said " + l.kind + " during a run")
			}
		}
	}
}

// unmetered is the failure of a run whose process could not be metered
// (err): most often it exited right after its line, and then the run
// failed because it exited, which says more.
func (p *program) unmetered(err error) error {
	select {
	case <-p.exited:
		return p.failed("exited during a run" + p.exitStatus())
	case <-time.After(quitGrace):
		return p.failed("cannot be metered: " + err.Error())
	}
}

// exitStatus says how the process ended, once it has.
func (p *program) exitStatus() string {
	select {
	case <-p.exited:
		if st := p.cmd.ProcessState; st != nil {
			return " (" + st.String() + ")"
		}
	case <-time.After(quitGrace):
	}
	return ""
}

// cpu is the CPU time of the program and its children so far.
func (p *program) cpu() (time.Duration, error) {
	all, err := host.Processes()
	if err != nil {
		return 0, err
	}
	pid := p.cmd.Process.Pid
	if _, ok := all[pid]; !ok {
		return 0, errors.New("process " + strconv.Itoa(pid) + " is gone")
	}
	return host.TreeCPU(host.Tree(all, pid)), nil
}

func (p *program) Close() error {
	if p.cmd == nil {
		return nil
	}
	io.WriteString(p.stdin, "quit\n")
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(quitGrace):
	}
	p.kill()
	return nil
}

// tail keeps the end of a program's stderr, one line, for its errors,
// with the password and what plan.Redact finds hidden.
type tail struct {
	mu     sync.Mutex
	buf    []byte
	redact string
}

const tailSize = 2 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	if t.redact != "" {
		s = strings.ReplaceAll(s, t.redact, "xxxxx")
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	return plan.Redact(clip(last))
}
