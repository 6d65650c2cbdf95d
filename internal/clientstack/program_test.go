package clientstack

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const secret = "S3cr3t-pw"

// fake starts testdata/fake_client.py, a stand-in program that speaks the
// protocol without a driver, misbehaving as mode says.
func fake(t *testing.T, mode string, tls string) (*program, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is needed for the stand-in client:", err)
	}
	script, err := filepath.Abs("testdata/fake_client.py")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Stack: Stack{Name: "fake", Engine: "postgres", Lang: "python"}, Host: "127.0.0.1", Port: 5432,
		User: "app", Password: secret, TLS: tls, Workload: "ping", Timeout: 500 * time.Millisecond}
	p, err := startWith(context.Background(), cfg, func(string) (*exec.Cmd, error) {
		return exec.Command("python3", script, mode), nil
	})
	if p != nil {
		t.Cleanup(func() { p.Close() })
	}
	return p, err
}

func TestProgramRuns(t *testing.T) {
	p, err := fake(t, "ok", "1.3")
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Hello(); h.Stack != "fake" || h.Driver != "fake/1.0" || h.Model != "threads" || !strings.HasPrefix(h.Runtime, "CPython/") {
		t.Errorf("hello = %+v", h)
	}
	pid, dir := p.cmd.Process.Pid, p.dir
	for run := 1; run <= 2; run++ {
		rep, err := p.Run(context.Background(), Run{Experiment: "connect", Concurrency: 2, PerConn: 1, MaxOps: 20, Duration: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, o := range rep.Ops {
			if o.End < o.Start || o.Worker < 0 || o.Worker > 1 {
				t.Errorf("op %+v", o)
			}
			if o.Failed() {
				failed++
				if o.Phase != "query" || o.Kind != "server" || o.Message != "relation sbtest1 does not exist" {
					t.Errorf("failed op %+v", o)
				}
			}
		}
		if len(rep.Ops) != 20 || failed != 4 {
			t.Errorf("run %d: %d ops, %d failed; want 20 and 4", run, len(rep.Ops), failed)
		}
		if rep.TLS == nil || rep.TLS.Version != "TLSv1.3" || rep.TLS.Group != "X25519" {
			t.Errorf("run %d: negotiated %+v", run, rep.TLS)
		}
		if rep.CPU <= 0 || rep.Elapsed <= 0 {
			t.Errorf("run %d: CPU %v, elapsed %v", run, rep.CPU, rep.Elapsed)
		}
	}
	// The secret is in a file only the user reads, never on a command line.
	st, err := os.Stat(filepath.Join(dir, "config"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config file: %v, %v", st, err)
	}
	if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmdline), secret) {
		t.Error("the password is on the command line")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d is still there after Close: %v", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Close", dir)
	}
}

// TestProgramNewClient: a new-client run's iterations say when their
// client was built (seedop), within each iteration; a seedop in another
// run fails it.
func TestProgramNewClient(t *testing.T) {
	p, err := fake(t, "ok", "off")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background(), Run{Experiment: "new-client", Concurrency: 1, PerConn: 1, MaxOps: 10, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, o := range rep.Ops {
		if !o.Failed() {
			ok++
			if !(o.Start < o.Built && o.Built < o.End) {
				t.Errorf("iteration %+v: built outside it", o)
			}
		}
	}
	if len(rep.Ops) != 10 || ok != 8 {
		t.Errorf("%d iterations, %d without an error; want 10 and 8", len(rep.Ops), ok)
	}
	if p, err = fake(t, "seedop", "off"); err != nil {
		t.Fatal(err)
	}
	want := "client fake said seedop during a connect run: connecting with password xxxxx"
	if _, err := p.Run(context.Background(), Run{Experiment: "connect", Concurrency: 1, MaxOps: 3, Duration: time.Second}); err == nil || err.Error() != want {
		t.Errorf("a seedop in a connect run: %v, want %q", err, want)
	}
}

// TestParseOps: op, seedop and err lines, and what is wrong with bad ones.
func TestParseOps(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Op
		err  string
	}{
		{line: "op 1 10 20", want: Op{Worker: 1, Start: 10, End: 20}},
		{line: "seedop 0 10 15 20", want: Op{Start: 10, Built: 15, End: 20}},
		{line: "err 0 10 20 auth auth Authentication failed.", want: Op{Start: 10, End: 20, Phase: "auth", Kind: "auth", Message: "Authentication failed."}},
		{line: "op 1 10 20 30", err: "op has 3 fields"},
		{line: "seedop 0 10 20", err: "seedop needs 4 fields"},
		{line: "seedop 0 10 25 20", err: "the client is built outside its iteration"},
		{line: "seedop 0 10 5 20", err: "the client is built outside its iteration"},
		{line: "seedop 0 10 x 20", err: "the built time is not a number of ns"},
		{line: "seedop 0 20 15 10", err: "the operation ends before it starts"},
	} {
		l, err := parseLine(tc.line)
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.line, err, tc.err)
		case tc.err == "" && (err != nil || l.op != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.line, l.op, err, tc.want)
		}
	}
}

// TestParseWarm: a warm line with the warm-up's operations and failures,
// or without (-1: not counted), and what is wrong with bad ones.
func TestParseWarm(t *testing.T) {
	for _, tc := range []struct {
		line      string
		id        int
		ops, errs int64
		err       string
	}{
		{line: "warm 3", id: 3, ops: -1},
		{line: "warm 3 120 2", id: 3, ops: 120, errs: 2},
		{line: "warm 3 0 0", id: 3},
		{line: "warm 3 12", err: "warm has 1 or 3 fields"},
		{line: "warm 3 1 2", err: "warm's counts are not 0 <= errors <= ops"},
		{line: "warm 3 x 0", err: "warm's counts are not 0 <= errors <= ops"},
		{line: "warm x", err: "warm's id is not a number"},
	} {
		l, err := parseLine(tc.line)
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.line, err, tc.err)
		case tc.err == "" && (err != nil || l.kind != "warm" || l.id != tc.id || l.ops != tc.ops || l.errs != tc.errs):
			t.Errorf("%q: %+v, %v; want id %d, %d ops, %d failed", tc.line, l, err, tc.id, tc.ops, tc.errs)
		}
	}
}

func TestProgramStartFailures(t *testing.T) {
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	for _, tc := range []struct {
		mode, want string
	}{
		{"refuse", "client fake cannot run this variant: this stand-in cannot pin TLS 1.2"},
		{"fatal", "client fake failed to start: no driver here"},
		{"silent", "client fake did not say hello within 2s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			// Only the silent program waits the bound out: the others
			// get the default, which a Python start on a loaded machine
			// meets (at 2s, "fatal" once said nothing in time).
			helloTimeout = map[bool]time.Duration{true: 2 * time.Second, false: 60 * time.Second}[tc.mode == "silent"]
			_, err := fake(t, tc.mode, "1.2")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			var r *Refused
			if errors.As(err, &r) != (tc.mode == "refuse") {
				t.Errorf("%v: Refused is %v", err, errors.As(err, &r))
			}
		})
	}
}

func TestProgramRunFailures(t *testing.T) {
	defer func(d time.Duration) { runGrace = d }(runGrace)
	runGrace = time.Second
	for _, tc := range []struct {
		mode, want string
		ops        int // reported before the failure
	}{
		{"crash", "client fake exited during a run (exit status 7): connecting with password xxxxx", 3},
		{"hang", "client fake did not end its run within 2s of its duration: connecting with password xxxxx", 3},
		{"garbage", `client fake printed what tlsbench cannot read: the worker is not a number ("op this is not a number"): connecting with password xxxxx`, 3},
		{"miscount", "client fake said done 1 with 6 operations and 1 errors, but reported run 1 with 5 and 1: connecting with password xxxxx", 5},
		{"nowarm", "client fake said op before warm: connecting with password xxxxx", 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p, err := fake(t, tc.mode, "off")
			if err != nil {
				t.Fatal(err)
			}
			pid := p.cmd.Process.Pid
			max := int64(0)
			if tc.mode == "miscount" {
				max = 5
			}
			rep, err := p.Run(context.Background(), Run{Experiment: "pool", Concurrency: 1, MaxOps: max, Duration: time.Second})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Error("the password is in the error")
			}
			if len(rep.Ops) != tc.ops {
				t.Errorf("%d ops kept, want %d", len(rep.Ops), tc.ops)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d is still there: %v", pid, err)
			}
			// The next run starts a new process.
			if _, err := p.Run(context.Background(), Run{Experiment: "pool", Concurrency: 1, MaxOps: 2, Duration: time.Second}); err != nil && tc.mode != "miscount" && tc.mode != "nowarm" {
				t.Errorf("the next run: %v", err)
			}
			if p.cmd != nil && p.cmd.Process.Pid == pid {
				t.Error("the next run used the dead process")
			}
		})
	}
}

func TestProgramCancel(t *testing.T) {
	p, err := fake(t, "ok", "off")
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, Run{Experiment: "pool", Concurrency: 1, Duration: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d is still there: %v", pid, err)
	}
}

func TestConfigRefusesLineBreaks(t *testing.T) {
	_, err := Config{Stack: Stack{Name: "psycopg"}, Password: "a\nb"}.file()
	if err == nil || strings.Contains(err.Error(), "a\nb") {
		t.Fatalf("err = %v", err)
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		engine, name, want, err string
	}{
		{"postgres", "psycopg", "psycopg", ""},
		{"postgres", "jdbc", "pgjdbc", ""},
		{"mysql", "jdbc", "connector-j", ""},
		{"mongodb", "python", "pymongo", ""},
		{"builtin", "node", "node-https", ""},
		{"redis", "jdbc", "", `unknown client "jdbc" for redis: use go, redis-py, jedis, ioredis, hiredis`},
		{"mysql", "psycopg", "", "client psycopg speaks postgres, not mysql: use go, mysqlclient, pymysql, connector-j, mysql2, libmariadb"},
	} {
		s, err := Lookup(tc.engine, tc.name)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Lookup(%s, %s) = %v, want %q", tc.engine, tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || s.Name != tc.want {
			t.Errorf("Lookup(%s, %s) = %v, %v, want %s", tc.engine, tc.name, s.Name, err, tc.want)
		}
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("TLSBENCH_CLIENTS", t.TempDir())
	s, _ := Lookup("postgres", "psycopg")
	_, err := startWith(context.Background(), Config{Stack: s, TLS: "off"}, func(dir string) (*exec.Cmd, error) {
		return command("python", filepath.Join(dir, "x.py"))
	})
	var ni *NotInstalled
	if !errors.As(err, &ni) || !strings.HasPrefix(err.Error(), "client psycopg is not installed (no ") || !strings.HasSuffix(err.Error(), "): run bash scripts/install-clients.sh") {
		t.Fatalf("err = %v", err)
	}
}
