package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// The lifecycle suite checks what every lab Server promises, the same way
// for each engine: TestLifecycle/<engine>/{life,kill,cancel}. An engine's
// own test file keeps what only that engine does (its specific check, run
// on the suite's server, and tests of its own).

// engineCase is one engine as the suite sees it.
type engineCase struct {
	engine string
	// start starts a server that presents keys[0].
	start func(ctx context.Context, keys []string) (Server, error)
	// program is the server's program: what its server process runs.
	program func() (string, error)
	// login is one client's visit the way the engine's clients make it:
	// connect to rawURL, with TLS when cfg is set (where the engine's
	// protocol starts TLS inside it, it does so), log in, close. It
	// returns the TLS state (zero without TLS).
	login func(ctx context.Context, rawURL string, cfg *tls.Config) (tls.ConnectionState, error)
	// noPassword: the server has no users (the built-in HTTPS server):
	// Auths() is empty, PasswordFile() is "" and URLs hold no password.
	noPassword bool
	// useKeyRestarts: UseKey restarts the server (FerretDB reads its
	// certificate at start only): a new server process on the same
	// endpoints, whose CPU adds to the old one's. Every other engine
	// switches keys in the running process.
	useKeyRestarts bool
	// specific checks what only this engine promises, on the suite's
	// running server, which presents key.
	specific func(t *testing.T, s Server, key string)
}

var engineCases = []engineCase{
	{engine: "postgres", start: labStarter("postgres"), program: postgresProgram, login: pgLogin, specific: checkPostgres},
	{engine: "mariadb", start: labStarter("mariadb"), program: func() (string, error) { return mariaDBBinary("mariadbd") },
		login: mariaDBLoginURL, specific: checkMariaDB},
	{engine: "redis", start: labStarter("redis"), program: redisBinary, login: redisLogin, specific: checkRedis},
	{engine: "mongodb", start: labStarter("mongodb"), program: func() (string, error) { return exec.LookPath("ferretdb") },
		login: mongoLogin, useKeyRestarts: true, specific: checkMongoDB},
	{engine: "builtin", start: startBuiltinServer, program: func() (string, error) { return tlsbenchExe, nil },
		login: httpLogin, noPassword: true, specific: checkBuiltin},
}

func postgresProgram() (string, error) {
	bin, err := postgresBin()
	return filepath.Join(bin, "postgres"), err
}

func labStarter(engine string) func(context.Context, []string) (Server, error) {
	return func(ctx context.Context, keys []string) (Server, error) {
		return Start(ctx, engine, Options{Keys: keys})
	}
}

// builtinSize is the response size of the suite's built-in server.
const builtinSize = 3000

func startBuiltinServer(ctx context.Context, keys []string) (Server, error) {
	b, err := StartBuiltin(ctx, BuiltinOptions{Keys: keys, ResponseSize: builtinSize, Exe: tlsbenchExe})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// lifeKeys are the keys the suite starts servers with: RSA-1024 first,
// which Debian's OpenSSL refuses unless the lab lowers its security level.
var lifeKeys = []string{"rsa1024", "ecdsa-p256", "rsa2048"}

// Bounds a loaded machine meets.
const (
	goneWithin = 10 * time.Second // for a process to end after its server's end
	cpuWithin  = 15 * time.Second // for handshakes to show in CPU()
)

// cancelWithin is how soon a cancelled Start returns: Stop's SIGTERM, up
// to stopGrace, then SIGKILL, up to stopGrace, and some.
var cancelWithin = 2*stopGrace + 3*time.Second

func TestLifecycle(t *testing.T) {
	slow(t)
	var covered []string
	for _, ec := range engineCases {
		covered = append(covered, ec.engine)
	}
	for _, e := range append(Engines(), "builtin") {
		if !slices.Contains(covered, e) {
			t.Errorf("engine %s has no case in the lifecycle suite", e)
		}
	}
	for _, ec := range engineCases {
		t.Run(ec.engine, func(t *testing.T) {
			t.Run("life", func(t *testing.T) { testLife(t, ec) })
			t.Run("kill", func(t *testing.T) { testKill(t, ec) })
			t.Run("cancel", func(t *testing.T) { testCancel(t, ec) })
		})
	}
}

// testLife follows a server from Start to Stop: its dir and files, its
// password, its URLs, key switches, CPU, and what Stop leaves.
func testLife(t *testing.T, ec engineCase) {
	tmp := reachableTemp(t)
	ctx := context.Background()
	began := time.Now()
	s, err := ec.start(ctx, lifeKeys)
	s = started(t, s, err)
	t.Logf("started in %v", time.Since(began).Round(time.Millisecond))
	if s.Engine() != ec.engine {
		t.Errorf("Engine() = %q", s.Engine())
	}
	dir := checkLabDir(t, s, tmp, lifeKeys)
	pw := checkPassword(t, ec, s, dir)
	cpu := cpuMeter{t: t, s: s}
	cpu.read()

	checkURLs(t, ec, s, pw, lifeKeys[0])
	presents(t, ec, s, pw, lifeKeys[0])
	if err := s.Alive(); err != nil {
		t.Errorf("Alive() of a running server: %v", err)
	}

	// Key switches, back to the first key and away from it again.
	pid := serverPid(t, ec, tmp)
	endpoints := s.Info().Endpoints
	key := lifeKeys[0]
	for _, key = range []string{lifeKeys[1], lifeKeys[0], lifeKeys[2]} {
		how, err := s.UseKey(ctx, key)
		if err != nil {
			t.Fatalf("UseKey(%s): %v", key, err)
		}
		if how == "" {
			t.Errorf("UseKey(%s) says nothing of how it switched", key)
		}
		presents(t, ec, s, pw, key)
		if err := s.Alive(); err != nil {
			t.Errorf("Alive() after UseKey(%s): %v", key, err)
		}
		now := serverPid(t, ec, tmp)
		switch {
		case ec.useKeyRestarts && now == pid:
			t.Errorf("UseKey(%s) (%s): the server process %d is the same, but the table says it restarts", key, how, pid)
		case ec.useKeyRestarts && !waitGone(pid, goneWithin):
			t.Errorf("UseKey(%s) restarted the server, but the old process %d still runs", key, pid)
		case !ec.useKeyRestarts && now != pid:
			t.Errorf("UseKey(%s) (%s) restarted the server: process %d, was %d", key, how, now, pid)
		}
		pid = now
		if eps := s.Info().Endpoints; !maps.Equal(eps, endpoints) {
			t.Errorf("after UseKey(%s) the endpoints are %v, were %v", key, eps, endpoints)
		}
		if u, err := parseURL(s, "", true); err != nil || u.Host != endpoints[key] {
			t.Errorf("after UseKey(%s) the TLS URL is %v, %v; want the endpoint %s", key, u.Redacted(), err, endpoints[key])
		}
		cpu.read()
	}
	if _, err := s.UseKey(ctx, "ed25519"); err == nil {
		t.Error("UseKey of a key the server has no certificate for succeeded")
	}
	presents(t, ec, s, pw, key) // a refused switch keeps the key

	// Handshakes cost the server CPU, which CPU() shows.
	before := cpu.read()
	deadline := time.Now().Add(cpuWithin)
	for cpu.read() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("CPU() stayed at %v over %v of TLS logins", before, cpuWithin)
		}
		for range 10 {
			raw, _ := s.URL("", true)
			if _, err := ec.login(ctx, raw, clientTLS(s, 0)); err != nil {
				t.Fatal(hide(err, pw))
			}
		}
	}

	if ec.specific != nil {
		ec.specific(t, s, key)
	}
	checkSecrets(t, s, dir, pw, tmp)

	// Stop ends every process of the server and removes its dir.
	pids := labProcesses(tmp)
	if !slices.Contains(pids, pid) {
		t.Errorf("the server process %d is not among the lab's processes %v", pid, pids)
	}
	began = time.Now()
	if err := s.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	t.Logf("Stop took %v; the server ran as %d processes", time.Since(began).Round(time.Millisecond), len(pids))
	for _, p := range pids {
		if !waitGone(p, goneWithin) {
			t.Errorf("process %d still runs after Stop", p)
		}
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s (%v)", dir, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := s.CPU(); err == nil {
		t.Error("CPU() of a stopped server succeeded")
	}
	// A healthy server ends on Stop's SIGTERM, within stopGrace: it was
	// not SIGKILLed, which Alive's error would quote.
	if err := s.Alive(); err == nil || strings.Contains(err.Error(), "killed") {
		t.Errorf("Alive() of a stopped server: %s", firstLine(hide(err, pw)))
	}
	assertEmpty(t, tmp)
}

// testKill SIGKILLs a server's process: Alive and CPU say so, and Stop
// still removes everything, and says the same when repeated.
func testKill(t *testing.T, ec engineCase) {
	tmp := reachableTemp(t)
	s, err := ec.start(context.Background(), []string{"ecdsa-p256"})
	s = started(t, s, err)
	dir := filepath.Dir(s.CAFile())
	pw := ""
	if !ec.noPassword {
		pw = urlPassword(t, s)
	}
	pid := serverPid(t, ec, tmp)
	pids := labProcesses(tmp)
	if err := s.Alive(); err != nil {
		t.Fatalf("Alive() of a running server: %v", err)
	}
	if _, err := s.CPU(); err != nil {
		t.Fatalf("CPU() of a running server: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(goneWithin)
	for s.Alive() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	aliveErr := s.Alive()
	if aliveErr == nil || !strings.Contains(aliveErr.Error(), "killed") {
		t.Errorf("Alive() %v after SIGKILL: want an error saying it was killed", goneWithin)
	}
	t.Logf("Alive(): %s", firstLine(hide(aliveErr, pw)))
	if _, err := s.CPU(); err == nil {
		t.Error("CPU() of a killed server succeeded")
	}
	stopErr := s.Stop()
	t.Logf("Stop: %s", firstLine(hide(stopErr, pw)))
	for what, err := range map[string]error{"Alive()": aliveErr, "Stop": stopErr} {
		if pw != "" && err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("%s's error holds the password", what)
		}
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop of a killed server left %s (%v)", dir, err)
	}
	for _, p := range pids {
		if !waitGone(p, goneWithin) {
			t.Errorf("process %d outlived its killed server by %v", p, goneWithin)
		}
	}
	if again := s.Stop(); fmt.Sprint(again) != fmt.Sprint(stopErr) {
		t.Errorf("second Stop: %v; the first said %v", hide(again, pw), hide(stopErr, pw))
	}
	assertEmpty(t, tmp)
}

// testCancel cancels Start's context before it begins, once the lab dir
// is made, once a process of the start runs (e.g. initdb), and once the
// server process runs: Start returns an error (or, if the cancel came too
// late, a server, which is stopped), and leaves no dir and no process.
func testCancel(t *testing.T, ec engineCase) {
	stages := []struct {
		name string
		when func(dir string) bool // nil: before Start
	}{
		{"before start", nil},
		{"dir made", func(string) bool { return true }},
		{"process runs", func(dir string) bool { return len(labProcesses(dir)) > 0 }},
		{"server runs", func(dir string) bool { return len(serverPids(ec, dir)) > 0 }},
	}
	for _, st := range stages {
		t.Run(st.name, func(t *testing.T) {
			tmp := reachableTemp(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The watcher cancels once when(dir) holds for a lab dir in tmp
			// and says when.
			var cancelledAt time.Time
			watched := make(chan time.Time, 1)
			stop := make(chan struct{})
			if st.when == nil {
				cancel()
				cancelledAt = time.Now()
				close(watched)
			} else {
				go func() {
					defer close(watched)
					for {
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Millisecond):
						}
						for _, dir := range labDirsIn(tmp) {
							if st.when(dir) {
								cancel()
								watched <- time.Now()
								return
							}
						}
					}
				}()
			}
			s, err := ec.start(ctx, []string{"ecdsa-p256"})
			returned := time.Now()
			close(stop)
			if at, ok := <-watched; ok {
				cancelledAt = at
			}
			if errors.Is(err, ErrNotInstalled) {
				needInstalled(t, err)
			}
			switch {
			case err == nil && st.when == nil:
				s.Stop()
				t.Fatal("Start with a cancelled context succeeded")
			case err == nil:
				t.Log("Start returned a server before the cancel reached it")
				s.Stop()
			case cancelledAt.IsZero():
				t.Fatalf("Start failed before any cancel: %v", err)
			default:
				after := returned.Sub(cancelledAt)
				t.Logf("Start returned %v after the cancel: %v", after.Round(time.Millisecond), err)
				if after > cancelWithin {
					t.Errorf("Start returned %v after the cancel, want %v at most", after, cancelWithin)
				}
			}
			deadline := time.Now().Add(goneWithin)
			for len(labProcesses(tmp)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if left := labProcesses(tmp); len(left) > 0 {
				t.Errorf("processes %v of the cancelled start still run", left)
			}
			// A log keepLog kept of the failed start may stay; nothing else.
			kept, _ := filepath.Glob(filepath.Join(tmp, "tlsbench-*.log"))
			for _, k := range kept {
				t.Logf("kept %s", k)
				os.Remove(k)
			}
			assertEmpty(t, tmp)
		})
	}
}

// TestStartFailure starts a real server with an argument it rejects, by a
// wrapper first in PATH: the error quotes the log's end, the whole log is
// kept, and nothing else is left.
func TestStartFailure(t *testing.T) {
	slow(t)
	for _, tt := range []struct{ engine, program, arg string }{
		{"redis", "redis-server", "--no-such-directive yes"},
		{"mongodb", "ferretdb", "--no-such-flag"},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			exe, err := exec.LookPath(tt.program)
			if err != nil {
				needInstalled(t, errors.Join(err, ErrNotInstalled))
			}
			tmp := isolateTemp(t)
			bin := t.TempDir()
			wrapper := "#!/bin/sh\nexec " + exe + " \"$@\" " + tt.arg + "\n"
			if err := os.WriteFile(filepath.Join(bin, tt.program), []byte(wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			_, err = Start(context.Background(), tt.engine, Options{Keys: []string{"ecdsa-p256"}})
			if err == nil {
				t.Fatalf("started with %s", tt.arg)
			}
			msg := err.Error()
			t.Logf("%v", err)
			if !strings.Contains(msg, "no-such-") || !strings.Contains(msg, "kept in ") {
				t.Fatalf("error %q: want the log's end and where the log is kept", msg)
			}
			kept := strings.TrimSuffix(msg[strings.LastIndex(msg, "kept in ")+len("kept in "):], ")")
			log, err := os.ReadFile(kept)
			if err != nil || !strings.Contains(string(log), "no-such-") {
				t.Errorf("kept log %s: %v", kept, err)
			}
			os.Remove(kept)
			assertEmpty(t, tmp)
		})
	}
}

// checkLabDir checks the server's dir: in tmp, 0700, with an owner file
// naming this process, the CA that RootCAs holds, and a 0600 private key
// per key; it returns the dir.
func checkLabDir(t *testing.T, s Server, tmp string, keys []string) string {
	t.Helper()
	dir := filepath.Dir(s.CAFile())
	if filepath.Dir(dir) != tmp || !labDirRE.MatchString(filepath.Base(dir)) {
		t.Errorf("lab dir %s: want a lab dir in %s", dir, tmp)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("lab dir %s: %v, %v; want a 0700 directory", dir, fi.Mode(), err)
	}
	if o, err := readOwner(dir); err != nil || o != must(self()) {
		t.Errorf("owner of %s: %v, %v; want this process", dir, o, err)
	}
	pem, err := os.ReadFile(s.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(pem) || !pool.Equal(s.RootCAs()) {
		t.Errorf("CAFile() %s holds another CA than RootCAs()", s.CAFile())
	}
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(dir, k+".crt")); err != nil {
			t.Errorf("certificate of %s: %v", k, err)
		}
	}
	// Every private key in the dir, the lab's own and copies (MariaDB's
	// server.key), is for this user only.
	keyFiles, _ := filepath.Glob(filepath.Join(dir, "*.key"))
	for _, k := range keys {
		if !slices.Contains(keyFiles, filepath.Join(dir, k+".key")) {
			t.Errorf("no private key of %s in %s", k, dir)
		}
	}
	for _, f := range keyFiles {
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("private key %s: %v, %v; want a 0600 file", f, fi.Mode(), err)
		}
	}
	return dir
}

// checkPassword checks that PasswordFile is a 0600 file in dir holding the
// password that URL holds, 128 random bits at least, and returns it; for an
// engine without users, that there is none.
func checkPassword(t *testing.T, ec engineCase, s Server, dir string) string {
	t.Helper()
	if ec.noPassword {
		if s.PasswordFile() != "" || len(s.Auths()) != 0 {
			t.Errorf("a server without users: PasswordFile() %q, Auths() %v", s.PasswordFile(), s.Auths())
		}
		return ""
	}
	pw := urlPassword(t, s)
	if len(pw) < 32 {
		t.Errorf("the password has %d characters, want 32 hex digits at least", len(pw))
	}
	pf := s.PasswordFile()
	if filepath.Dir(pf) != dir {
		t.Errorf("PasswordFile() %s is not in the lab dir %s", pf, dir)
	}
	fi, err := os.Lstat(pf)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("PasswordFile() %s: %v, %v; want a 0600 file", pf, fi.Mode(), err)
	}
	data, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), pw) {
		t.Error("the password file does not hold the URL's password")
	}
	return pw
}

// parseURL is URL(auth, tls), parsed.
func parseURL(s Server, auth string, tls bool) (*url.URL, error) {
	raw, err := s.URL(auth, tls)
	if err != nil {
		return &url.URL{}, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &url.URL{}, errors.New("the URL does not parse") // its error quotes it
	}
	return u, nil
}

// urlPassword is the password in the server's default URL.
func urlPassword(t *testing.T, s Server) string {
	t.Helper()
	u, err := parseURL(s, "", false)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		t.Fatal("the URL holds no password")
	}
	return pw
}

// checkURLs checks URL(auth, tls) for the default and every auth method:
// it parses, as a tlsbench target too; it points at a loopback port that
// accepts and that Info's endpoints name (that of key with TLS); its
// password is the server's and nothing else in it is; and a client logs in
// with it, with TLS when asked, and is presented key.
func checkURLs(t *testing.T, ec engineCase, s Server, pw, key string) {
	t.Helper()
	eps := s.Info().Endpoints
	for _, auth := range append([]string{""}, s.Auths()...) {
		for _, useTLS := range []bool{false, true} {
			what := fmt.Sprintf("URL(%q, %v)", auth, useTLS)
			raw, err := s.URL(auth, useTLS)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			redacted := plan.Redact(raw)
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("%s does not parse", what)
				continue
			}
			host, port, err := net.SplitHostPort(u.Host)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || port == "0" {
				t.Errorf("%s = %s: not a loopback address with a port", what, redacted)
			}
			want := eps[""]
			if useTLS {
				want = eps[key]
			}
			if u.Host != want {
				t.Errorf("%s = %s: want the endpoint %s (Info().Endpoints %v)", what, redacted, want, eps)
			}
			if c, err := net.DialTimeout("tcp", u.Host, 5*time.Second); err != nil {
				t.Errorf("%s: the port does not accept: %v", what, err)
			} else {
				c.Close()
			}
			got, hasPW := u.User.Password()
			if (pw != "" && got != pw) || (pw == "" && hasPW) {
				t.Errorf("%s = %s: not the server's password", what, redacted)
			}
			if pw != "" && strings.Contains(redacted, pw) {
				t.Errorf("%s holds the password beyond its user info", what)
			}
			if target, err := plan.ParseTarget(raw); err != nil || target.Host != u.Host {
				t.Errorf("%s = %s as a target: %+v, %v", what, redacted, target, hide(err, pw))
			}
			var cfg *tls.Config
			if useTLS {
				cfg = clientTLS(s, 0)
			}
			state, err := ec.login(context.Background(), raw, cfg)
			switch {
			case err != nil:
				t.Errorf("login with %s: %v", what, hide(err, pw))
			case (state.Version != 0) != useTLS:
				t.Errorf("login with %s: TLS %v", what, state.Version != 0)
			case useTLS && presented(state) != key:
				t.Errorf("login with %s: presented %s, want %s", what, presented(state), key)
			}
		}
	}
	if _, err := s.URL("no-such-auth", false); err == nil {
		t.Error("URL of an auth method the server has no user for succeeded")
	}
}

// presents checks that a TLS 1.2 and a TLS 1.3 login are presented key.
func presents(t *testing.T, ec engineCase, s Server, pw, key string) {
	t.Helper()
	raw, err := s.URL("", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		state, err := ec.login(context.Background(), raw, clientTLS(s, v))
		if err != nil {
			t.Errorf("%s login presenting %s: %v", tls.VersionName(v), key, hide(err, pw))
			continue
		}
		if got := presented(state); got != key || state.Version != v {
			t.Errorf("%s login: %s presented %s, want %s", tls.VersionName(v), tls.VersionName(state.Version), got, key)
		}
	}
}

// clientTLS trusts the server's CA; version 0 lets Go choose.
func clientTLS(s Server, version uint16) *tls.Config {
	return &tls.Config{RootCAs: s.RootCAs(), ServerName: "127.0.0.1", MinVersion: version, MaxVersion: version}
}

// presented is the key type of the certificate the server presented.
func presented(state tls.ConnectionState) string {
	if len(state.PeerCertificates) == 0 {
		return "(none)"
	}
	return tlsx.KeyTypeOf(tlsx.PeerKey(state.PeerCertificates[0]))
}

// checkSecrets checks that the password is nowhere it could be printed,
// stored or seen: Notes(), Info(), the files the lab writes in its dir
// (logs, configuration; not the server's data dir) and the command lines
// of the server's processes (ps shows those).
func checkSecrets(t *testing.T, s Server, dir, pw, tmp string) {
	t.Helper()
	if pw == "" {
		return
	}
	info, err := json.Marshal(s.Info())
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"Notes()": strings.Join(s.Notes(), "\n"), "Info()": string(info)}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.Type().IsRegular() && path != s.PasswordFile() {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			texts[e.Name()] = string(data)
		}
	}
	for _, pid := range labProcesses(tmp) {
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			texts["command line of "+strconv.Itoa(pid)] = string(cmdline)
		}
	}
	for what, text := range texts {
		if strings.Contains(text, pw) {
			t.Errorf("%s holds the password", what)
		}
	}
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	line, _, _ := strings.Cut(fmt.Sprint(err), "\n")
	return line
}

// hide replaces the password in err's message.
func hide(err error, pw string) error {
	if err == nil || pw == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// cpuMeter reads CPU() and checks that it never goes back.
type cpuMeter struct {
	t    *testing.T
	s    Server
	last time.Duration
}

func (m *cpuMeter) read() time.Duration {
	m.t.Helper()
	cpu, err := m.s.CPU()
	if err != nil {
		m.t.Fatalf("CPU() of a running server: %v", err)
	}
	if cpu < m.last {
		m.t.Errorf("CPU() went back from %v to %v", m.last, cpu)
	}
	m.last = cpu
	return cpu
}

// labDirsIn lists the lab dirs in tmp.
func labDirsIn(tmp string) []string {
	entries, _ := os.ReadDir(tmp)
	var out []string
	for _, e := range entries {
		if labDirRE.MatchString(e.Name()) {
			out = append(out, filepath.Join(tmp, e.Name()))
		}
	}
	return out
}

// labProcesses lists the running processes (not zombies) that are servers
// of lab dirs in or at under, marked as startProcess marks them: in their
// environment, or by their stdout or stderr, which go to a file in the dir
// (PostgreSQL's children overwrite their environment).
func labProcesses(under string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		marked := false
		for _, fd := range []string{"1", "2"} {
			if t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd)); err == nil && strings.HasPrefix(t, under+"/") {
				marked = true
			}
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for v := range strings.SplitSeq(string(env), "\x00") {
			if d, ok := strings.CutPrefix(v, labEnv+"="); ok && (d == under || strings.HasPrefix(d, under+"/")) {
				marked = true
			}
		}
		if marked {
			out = append(out, pid)
		}
	}
	return out
}

// serverPids lists the server processes in tmp: lab processes that this
// process started running the engine's program (not, e.g., initdb).
func serverPids(ec engineCase, tmp string) []int {
	program, err := ec.program()
	if err != nil {
		return nil
	}
	if p, err := filepath.EvalSymlinks(program); err == nil {
		program = p
	}
	var found []int
	for _, pid := range labProcesses(tmp) {
		st, err := host.ReadStat(pid)
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && st.PPID == os.Getpid() && exe == program {
			found = append(found, pid)
		}
	}
	return found
}

// serverPid is the one server process in tmp (see serverPids).
func serverPid(t *testing.T, ec engineCase, tmp string) int {
	t.Helper()
	found := serverPids(ec, tmp)
	if len(found) != 1 {
		t.Fatalf("server processes of %s in %s: %v, want one (lab processes: %v)", ec.engine, tmp, found, labProcesses(tmp))
	}
	return found[0]
}
