package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// hostileServer is a real lab server that hostile runs reach through a
// drivertest.Proxy.
type hostileServer struct {
	name string
	addr string                   // the server's
	url  func(addr string) string // a target URL with addr as its host, the password in a passfile
	args []string                 // the variant and a workload that needs no data
	// handshake and op are the bytes the server sends to set up a
	// connection and to answer one operation (measured), from which each
	// experiment's budget before the proxy turns is set.
	handshake, op int64
	garbage       string // how the driver names a server that sends garbage
}

// hostileRun is what a tlsbench run against a hostile proxy did.
type hostileRun struct {
	code   int
	took   time.Duration
	maxRSS int64 // bytes
	stderr string
	res    *result.Result
	resErr error
}

// runHostile runs tlsbench with args as a process of its own, so that its
// peak memory is its own and runs go side by side; a run that passes kill
// is killed.
func runHostile(out string, kill time.Duration, args ...string) hostileRun {
	ctx, cancel := context.WithTimeout(context.Background(), kill)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append(args, "-o", out)...)
	peak := out + ".peak"
	cmd.Env = append(os.Environ(), "TLSBENCH_TEST_PEAK_FILE="+peak)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	cmd.Run()
	r := hostileRun{code: cmd.ProcessState.ExitCode(), took: time.Since(start), stderr: stderr.String()}
	r.maxRSS = readPeakRSS(peak)
	r.res, r.resErr = result.Read(out)
	return r
}

// writePeakRSS writes this process's peak resident memory (VmHWM, in
// bytes) to file. Not the rusage of wait4: Linux carries the parent's
// high-water mark into a child forked from it (os/exec's vfork shares its
// memory until exec), so a test process grown to 209 MiB made every run
// it started report 209 MiB.
func writePeakRSS(file string) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			os.WriteFile(file, []byte(strconv.FormatInt(kib<<10, 10)), 0o600)
		}
	}
}

// readPeakRSS reads what writePeakRSS wrote: -1 if the run wrote nothing
// (it was killed).
func readPeakRSS(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// passfileURL is raw (a lab server's URL) with its password moved to a
// passfile of line (%s is the password), and the host given.
func passfileURL(t *testing.T, raw, line string) func(string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	file := filepath.Join(t.TempDir(), "passfile")
	if err := os.WriteFile(file, fmt.Appendf(nil, line, pw), 0o600); err != nil {
		t.Fatal(err)
	}
	u.User = url.User(u.User.Username())
	u.RawQuery = url.Values{"passfile": {file}}.Encode()
	return func(addr string) string {
		v := *u
		v.Host = addr
		return v.String()
	}
}

// hostileServers are a lab Redis, plain and TLS 1.3, and a lab
// PostgreSQL, each answering 1000 bytes an operation (so that answers,
// not handshakes, spend the proxy's budget), and the same PostgreSQL sent
// 6 MiB statements (writes that fill the socket buffers of a server that
// stops reading).
func hostileServers(t *testing.T) []hostileServer {
	needServer(t, labBinaries["redis"])
	needServer(t, labBinaries["postgres"])
	redis := labtest.Start(t, "redis", lab.Options{Keys: []string{"ecdsa-p256"}, Connections: 200})
	var out []hostileServer
	for _, tls := range []bool{false, true} {
		raw, err := redis.URL("", tls)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(raw)
		echo := "ECHO " + strings.Repeat("a", 1000)
		s := hostileServer{name: "redis", addr: u.Host, url: passfileURL(t, raw, "%s"), handshake: 5, op: 1009,
			args: []string{"--command", echo, "--tls", "off"}, garbage: "is it a Redis server?"}
		if tls {
			s.name, s.handshake, s.op = "redis-tls", 1773, 1031
			s.args = []string{"--command", echo, "--tls", "1.3", "--ca", redis.CAFile()}
			s.garbage = "sent something that is not TLS"
		}
		out = append(out, s)
	}
	pg := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}, LocalhostOnly: true, Connections: 400})
	// trust: a SCRAM login costs milliseconds of CPU a side, and the runs
	// share two loaded cores with the server.
	raw, err := pg.URL("trust", false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	kilo := writeScript(t, "kilo.sql", "SELECT repeat('a', 1000);\n")
	big := writeScript(t, "big.sql", "SELECT length('"+strings.Repeat("a", 6<<20)+"');\n")
	pgURL := passfileURL(t, raw, "*:*:*:*:%s\n")
	return append(out,
		hostileServer{name: "postgres", addr: u.Host, url: pgURL, handshake: 418, op: 1063,
			args: []string{"--script", kilo, "--query-mode", "simple", "--tls", "off"}, garbage: "is it a PostgreSQL server?"},
		// Its answers are 66 bytes: op 10 turns the pool's proxy after
		// a few of its statements.
		hostileServer{name: "postgres-6MiB", addr: u.Host, url: pgURL, handshake: 418, op: 10,
			args: []string{"--script", big, "--query-mode", "simple", "--tls", "off"}})
}

// TestHostileAfterCheck runs every experiment against real servers behind
// a proxy that relays tlsbench's check and the start of the trial
// faithfully, then misbehaves in each way drivertest's Proxy can: it goes
// silent, stops reading (the client's writes fill the socket buffers),
// trickles a byte a second, closes mid-answer, sends garbage, resets.
// Each run ends within a bound set by -d and --timeout, in bounded memory,
// with exit 1 and one line on stderr, and keeps its trial in the result
// with the failures counted by kind, each with a message that names the
// cause (and no guess at a TLS or plaintext port: the check showed which
// it is).
func TestHostileAfterCheck(t *testing.T) {
	labtest.Slow(t)
	besideOthers(t)
	const (
		// Long enough for the check's connection to a lab PostgreSQL
		// (a fork and a login) on a loaded machine: at 1 s it once
		// timed out before the proxy turned.
		timeout = 2 * time.Second
		// At -d 1s a loaded machine (load 20) finished the trial before
		// a pool's proxy turned.
		d = 2 * time.Second
		// A failed operation, then a failed reopen: two timeouts past
		// the trial's end, and one for the close; the rest is process
		// start, the check and a loaded machine.
		slack  = 3*timeout + 5*time.Second
		maxRSS = 160 << 20
	)
	experiments := []struct {
		name string
		args []string
		d    time.Duration
		// answers is how many operations' answers the proxy relays after
		// the check, past every connection's handshake, before it
		// turns: the trial is under way by then, and not over, and has
		// operations that succeeded however its connections'
		// handshakes and answers interleave (at --rate 100 on a loaded
		// machine, 48 handshakes once came before the first answer).
		answers int64
	}{
		{"pool", []string{"pool", "-c", "4", "-d", d.String(), "--warmup", "0s"}, d, 20},
		{"per-conn", []string{"connect", "--per-conn", "5", "-c", "2", "-d", d.String()}, d, 15},
		// 50 new connections a second: at 100, four runs at once made
		// a lab PostgreSQL fork 400 backends a second, and on a machine
		// at load 17 its logins (the checks') outlasted --timeout.
		{"rate", []string{"connect", "--rate", "50", "-d", d.String()}, d, 30},
		{"rate-pool", []string{"pool", "--rate", "200", "-c", "2", "-d", d.String(), "--warmup", "0s"}, d, 20},
		// 25 first answers: at least 25 clients succeed and the others
		// fail, over --max-error-rate.
		{"storm", []string{"storm", "--clients", "50", "--first-op"}, 0, 25},
	}
	type hostileCase struct {
		name, want string
		bound      time.Duration
		proxy      *drivertest.Proxy
		run        hostileRun
		retried    []string // the errors of runs that met no hostile server
	}
	var cases []*hostileCase
	var wg sync.WaitGroup
	// Most runs wait for timeouts, not CPU: 4 at a time per server (a
	// PostgreSQL backend is a fork per connection; more runs at once made
	// its logins outlast --timeout), the servers side by side.
	sems := map[string]chan struct{}{}
	dir := t.TempDir()
	for _, srv := range hostileServers(t) {
		sem := sems[srv.addr]
		if sem == nil {
			sem = make(chan struct{}, 4)
			sems[srv.addr] = sem
		}
		for _, e := range experiments {
			// Each misbehaviour, and a server that takes connections
			// but hangs at their first operation (a lock).
			type turn struct {
				m         drivertest.Misbehaviour
				keepSetup bool
			}
			var turns []turn
			for _, m := range drivertest.Misbehaviours {
				turns = append(turns, turn{m, false})
			}
			turns = append(turns, turn{drivertest.Silent, true})
			for _, tn := range turns {
				m := tn.m
				if srv.name == "postgres-6MiB" && (e.name != "pool" || m != drivertest.Deaf || tn.keepSetup) {
					continue // its point is a write that blocks
				}
				c := &hostileCase{name: srv.name + "/" + e.name + "/" + m.String(), bound: e.d + slack}
				if tn.keepSetup {
					c.name += "-after-setup"
				}
				switch m {
				case drivertest.Silent, drivertest.Deaf, drivertest.Trickle:
					c.want = "within --timeout " + timeout.String()
				case drivertest.CloseMidAnswer:
					c.want = "closed the connection"
				case drivertest.Garbage:
					c.want = srv.garbage
				case drivertest.Reset:
					c.want = "reset the connection"
				}
				cases = append(cases, c)
				// run runs tlsbench once, through a new proxy.
				run := func() {
					c.proxy = drivertest.NewProxy(t, srv.addr)
					c.proxy.TurnAfter(m, srv.handshake, e.answers*srv.op)
					if tn.keepSetup {
						c.proxy.KeepSetup(srv.handshake)
					}
					args := append([]string{e.args[0], srv.url(c.proxy.Addr)}, e.args[1:]...)
					args = append(append(args, srv.args...), "--timeout", timeout.String(), "--trials", "1")
					if e.args[0] == "pool" && !tn.keepSetup {
						// A pool connection that cannot be reopened
						// fails the run whatever the share of errors
						// (here under 50%). One that reopens and
						// hangs fails at most a few operations, one
						// a --timeout: the share decides (5%).
						args = append(args, "--max-error-rate", "50%")
					}
					out := filepath.Join(dir, strings.ReplaceAll(c.name, "/", "-")+".json")
					os.Remove(out)
					c.run = runHostile(out, 4*c.bound, args...)
				}
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					run()
					for range 2 {
						if c.proxy.Turned() || c.run.code == 0 {
							break
						}
						// The run failed before the proxy turned: the
						// check's own login outlasted --timeout on a
						// loaded machine (PostgreSQL forks a backend
						// per connection). It met no hostile server and
						// proves nothing: again, twice at most.
						c.retried = append(c.retried, errorLines(c.run.stderr)...)
						run()
					}
				})
			}
		}
	}
	wg.Wait()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.run
			lines := errorLines(r.stderr)
			if c.retried != nil {
				t.Logf("ran again after runs that failed before the proxy turned: %s", strings.Join(c.retried, " | "))
			}
			t.Logf("exit %d after %v, peak RSS %d MiB: %s", r.code, r.took.Round(time.Millisecond), r.maxRSS>>20, strings.Join(lines, " | "))
			if !c.proxy.Turned() {
				t.Errorf("the proxy never turned: the run met no hostile server")
			}
			if r.took > c.bound {
				t.Errorf("took %v, want at most %v", r.took, c.bound)
			}
			if r.maxRSS < 0 {
				t.Errorf("the run recorded no peak memory: it did not end by itself")
			}
			if r.maxRSS > maxRSS {
				t.Errorf("peak RSS %d MiB, want under %d", r.maxRSS>>20, maxRSS>>20)
			}
			if r.code != 1 || len(lines) != 1 || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line", r.code, r.stderr)
			}
			if r.resErr != nil {
				t.Fatalf("no result: %v", r.resErr)
			}
			if len(r.res.Trials) != 1 || r.res.Error == "" {
				t.Fatalf("%d trials, error %q; want the trial that met the turn, and the error", len(r.res.Trials), r.res.Error)
			}
			tr := r.res.Trials[0]
			if tr.Ops == 0 || len(tr.Errors) == 0 {
				t.Errorf("%d operations, errors %v: want some of each", tr.Ops, tr.Errors)
			}
			named := false
			for kind := range tr.Errors {
				s := tr.ErrorSamples[kind]
				if s == "" || strings.Contains(s, "\n") || strings.Contains(s, "TLS port") || strings.Contains(s, "plaintext port") {
					t.Errorf("kind %s: sample %q, want one line, and no guess at the port", kind, s)
				}
				named = named || strings.Contains(s, c.want)
			}
			if !named {
				t.Errorf("no sample says %q: %v", c.want, tr.ErrorSamples)
			}
		})
	}
}
