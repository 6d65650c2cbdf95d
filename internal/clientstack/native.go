package clientstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
)

// The C stacks (plan's table: libpq, hiredis, openssl, libmariadb,
// curl): Debian's tools, driven per run by tlsbench itself (no program of
// ours in between), reporting the Report the programs do.
func init() { starters["native"] = startNative }

// natives start each C stack's client by its name.
var natives = map[string]func(ctx context.Context, cfg Config) (Client, error){
	"libpq":      startPgbench,
	"hiredis":    startRedisBenchmark,
	"openssl":    startSTime,
	"curl":       startCurl,
	"libmariadb": startSysbench,
}

func startNative(ctx context.Context, cfg Config) (Client, error) {
	start, ok := natives[cfg.Stack.Name]
	if !ok {
		return nil, fmt.Errorf("client %s: no C tool drives it", cfg.Stack.Name)
	}
	return start(ctx, cfg)
}

// nativeInstall is the command that installs the C tools: Debian's
// packages (postgresql-15, redis-tools, openssl, curl, sysbench).
const nativeInstall = "bash scripts/install.sh"

// lookTool finds a tool on PATH or in dirs (pgbench lives in
// /usr/lib/postgresql/N/bin).
func lookTool(stack, tool string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(tool); err == nil {
		return p, nil
	}
	for _, pattern := range dirs {
		m, _ := filepath.Glob(filepath.Join(pattern, tool))
		for i := len(m) - 1; i >= 0; i-- { // the newest version, in glob order
			if st, err := os.Stat(m[i]); err == nil && st.Mode()&0o111 != 0 {
				return m[i], nil
			}
		}
	}
	return "", &NotInstalled{Stack: stack, Missing: tool, Install: nativeInstall}
}

// refuse is a Refused for cfg's stack.
func refuse(cfg Config, format string, a ...any) error {
	return &Refused{Stack: cfg.Stack.Name, Why: fmt.Sprintf(format, a...)}
}

// refuseCommon refuses what no C tool here can do: a group OpenSSL 3.0
// does not know.
func refuseCommon(cfg Config) error {
	if cfg.Group != "" && cfg.TLS != "off" {
		switch cfg.Group {
		case "X25519", "X448", "P-256", "P-384", "P-521", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192":
		default:
			return refuse(cfg, "group %s: Debian's OpenSSL 3.0 knows X25519, X448, P-256, P-384, P-521 and the ffdhe groups", cfg.Group)
		}
	}
	return nil
}

// opensslConf writes, when cfg needs it, an OPENSSL_CONF file into dir
// that pins what a tool has no flag for: the TLS version (pinVersion)
// and the key exchange group, in the system_default section every
// SSL_CTX of the process starts from. It returns the environment entry,
// or nothing when the system's configuration serves.
func opensslConf(dir string, cfg Config, pinVersion bool) ([]string, error) {
	var lines []string
	if pinVersion && (cfg.TLS == "1.2" || cfg.TLS == "1.3") {
		v := "TLSv" + cfg.TLS
		lines = append(lines, "MinProtocol = "+v, "MaxProtocol = "+v)
	}
	if cfg.Group != "" {
		lines = append(lines, "Groups = "+cfg.Group)
	}
	if len(lines) == 0 || cfg.TLS == "off" {
		return nil, nil
	}
	text := "openssl_conf = tlsbench_init\n[tlsbench_init]\nssl_conf = tlsbench_ssl\n[tlsbench_ssl]\nsystem_default = tlsbench_tls\n[tlsbench_tls]\n" +
		strings.Join(lines, "\n") + "\n"
	path := filepath.Join(dir, "openssl.cnf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return nil, err
	}
	return []string{"OPENSSL_CONF=" + path}, nil
}

// toolEnv is what a tool inherits: the programs' list (no PG*, MYSQL_*,
// SSL* variables) and extra.
func toolEnv(extra ...string) []string {
	var e []string
	for _, k := range env {
		if v, ok := os.LookupEnv(k); ok {
			e = append(e, k+"="+v)
		}
	}
	return append(e, extra...)
}

// start starts cmd, in the network namespace netns when one is given
// (Config.Netns).
func start(cmd *exec.Cmd, netns string) error {
	if netns == "" {
		return cmd.Start()
	}
	return netx.StartInNetns(netns, cmd)
}

// tool is one run of a C tool's process.
type tool struct {
	stack    string
	cmd      *exec.Cmd
	netns    string // Config.Netns
	password string // hidden from its stderr in errors
	// limit bounds the process: past it, it is killed and the run fails.
	limit time.Duration
	// stop, if closed, ends the run: the process is killed, which is not
	// a failure (curl has no time bound of its own).
	stop <-chan struct{}
	// onStderr, if set, sees each line of stderr as it comes (pgbench's
	// aborts); lines it does not take go to the tail kept for errors.
	onStderr func(line string, at time.Time) bool
	// explain, if set, says why the tool failed better than the last line
	// of its stderr (pgbench ends with "could not create connection"),
	// from what it printed on its stdout if need be (sysbench's errors).
	explain func(stdout []byte) string
}

// toolResult is what a tool's run left: its stdout, its rusage, when it
// ran.
type toolResult struct {
	stdout       []byte
	stderr       *tail
	cpu          time.Duration
	began, ended time.Time
	exit         bool // exited by itself
	code         int  // its exit code (-1: killed)
}

// run runs the tool to its end, bounded by ctx and t.limit; every
// process is reaped, its CPU taken from wait4's rusage.
func (t tool) run(ctx context.Context) (toolResult, error) {
	var out bytes.Buffer
	r := toolResult{stderr: &tail{redact: t.password}}
	cmd := t.cmd
	cmd.Stdout = &out
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if t.onStderr != nil {
		cmd.Stderr = &lineWriter{on: t.onStderr, rest: r.stderr}
	} else {
		cmd.Stderr = r.stderr
	}
	r.began = time.Now()
	if err := start(cmd, t.netns); err != nil {
		return r, fmt.Errorf("client %s: %w", t.stack, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.NewTimer(t.limit)
	defer limit.Stop()
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var why error
	stopped := false
	select {
	case <-done:
	case <-t.stop:
		kill()
		<-done
		stopped = true
	case <-limit.C:
		kill()
		<-done
		why = fmt.Errorf("client %s did not end its run within %v", t.stack, t.limit.Round(time.Millisecond))
	case <-ctx.Done():
		kill()
		<-done
		why = ctx.Err()
	}
	// The tool's group: any child it left goes too.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r.ended = time.Now()
	r.stdout = out.Bytes()
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		r.code = st.ExitCode()
		r.exit = st.Exited()
	}
	if why == nil && r.code != 0 && !stopped {
		why = fmt.Errorf("client %s: %s exited with %s", t.stack, filepath.Base(cmd.Path), cmd.ProcessState)
	}
	if why != nil && !errors.Is(why, context.Canceled) && !errors.Is(why, context.DeadlineExceeded) {
		s := r.stderr.String()
		if t.explain != nil {
			if e := t.explain(r.stdout); e != "" {
				s = (&tail{buf: []byte(e), redact: t.password}).String()
			}
		}
		if s != "" {
			why = fmt.Errorf("%w: %s", why, s)
		}
	}
	return r, why
}

// lineWriter splits a stream into lines for on; the lines on does not
// take go to rest.
type lineWriter struct {
	on   func(string, time.Time) bool
	rest *tail
	buf  []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	now := time.Now()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if !w.on(line, now) {
			w.rest.Write([]byte(line + "\n"))
		}
	}
	return len(b), nil
}

// limitOf is how long a run may take: its duration and warm-up, twice the
// operation timeout and the programs' grace.
func limitOf(cfg Config, r Run) time.Duration {
	return r.Duration + r.Warmup + 2*cfg.Timeout + runGrace
}

// wholeSeconds rounds d up to whole seconds, at least 1: the tools' -T,
// --time and -time take seconds.
func wholeSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// errorKind sorts a C library's message into PROTOCOL.md's phase and
// kind.
func errorKind(msg string) (phase, kind string) {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "connection refused"):
		return "tcp", "refused"
	case strings.Contains(m, "reset by peer"):
		return "other", "reset"
	case strings.Contains(m, "timeout") || strings.Contains(m, "timed out"):
		return "other", "timeout"
	case strings.Contains(m, "ssl") || strings.Contains(m, "tls") || strings.Contains(m, "certificate"):
		return "tls-handshake", "tls"
	case strings.Contains(m, "password") || strings.Contains(m, "authentication") || strings.Contains(m, "noauth") || strings.Contains(m, "access denied"):
		return "auth", "auth"
	case strings.Contains(m, "error:") || strings.Contains(m, "err "):
		return "query", "server"
	}
	return "other", "other"
}

// firstLine is s's first line, trimmed.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// toolVersion runs a tool's version command and returns its first line.
func toolVersion(ctx context.Context, exe string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = toolEnv()
	out, _ := cmd.CombinedOutput()
	return firstLine(string(out))
}

// opensslVersion is the version of Debian's libssl that the tools link,
// "OpenSSL/3.0.19".
func opensslVersion(ctx context.Context) string {
	exe, err := exec.LookPath("openssl")
	if err != nil {
		return "OpenSSL/-"
	}
	f := strings.Fields(toolVersion(ctx, exe, "version"))
	if len(f) < 2 {
		return "OpenSSL/-"
	}
	return f[0] + "/" + f[1]
}

// field is the word after prefix in s, "-" if none.
func field(s, prefix string) string {
	_, after, ok := strings.Cut(s, prefix)
	if f := strings.Fields(after); ok && len(f) > 0 {
		return f[0]
	}
	return "-"
}

// nativeClient is what every C stack shares: its configuration, its
// hello and a directory only the user reads for its files (a password
// file, an OPENSSL_CONF, a script), removed by Close.
type nativeClient struct {
	cfg   Config
	hello Hello
	dir   string
}

func newNative(cfg Config, h Hello) (*nativeClient, error) {
	dir, err := os.MkdirTemp("", "tlsbench-"+cfg.Stack.Name+"-")
	if err != nil {
		return nil, err
	}
	h.Stack = cfg.Stack.Name
	h.Runtime = "C"
	return &nativeClient{cfg: cfg, hello: h, dir: dir}, nil
}

func (n *nativeClient) Hello() Hello { return n.hello }

func (n *nativeClient) Close() error { return os.RemoveAll(n.dir) }

// runDir is a new directory for one run's files (logs), inside n.dir.
func (n *nativeClient) runDir() (string, error) { return os.MkdirTemp(n.dir, "run-") }
