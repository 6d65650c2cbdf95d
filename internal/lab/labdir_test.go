package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sleeper starts `sleep 60` as a stand-in owner of lab dirs.
func sleeper(t *testing.T) (*exec.Cmd, owner) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	o, err := ownerOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

// deadOwner is the owner of a process that was SIGKILLed.
func deadOwner(t *testing.T) owner {
	t.Helper()
	cmd, o := sleeper(t)
	cmd.Process.Kill()
	cmd.Wait()
	return o
}

// labDirOf makes a lab dir owned by o with a secret in a subdirectory.
func labDirOf(t *testing.T, prefix string, o owner) string {
	t.Helper()
	dir, err := makeLabDirFor(prefix, o)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "data", "secret.key"), "secret")
	return dir
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestSweepStale: a sweep removes exactly the lab dirs whose owner is gone
// (dead, or its pid now another process's), and nothing that is not ours.
func TestSweepStale(t *testing.T) {
	tmp := isolateTemp(t)
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	dead := deadOwner(t)
	_, live := sleeper(t)
	recycled := live
	recycled.start++ // the pid runs, but it is not the process that made the dir
	earlierBoot := live
	earlierBoot.boot = "00000000-0000-0000-0000-000000000000"
	otherNS := dead
	otherNS.pidNS = "pid:[1]"

	gone := []string{
		labDirOf(t, "tlsbench-redis-", dead),
		labDirOf(t, "tlsbench-sshd-", dead),
		labDirOf(t, "tlsbench-postgres-", recycled),
		labDirOf(t, "tlsbench-lab-", earlierBoot),
	}
	stay := []string{
		labDirOf(t, "tlsbench-mariadb-", live),
		labDirOf(t, "tlsbench-stunnel-", me),
		labDirOf(t, "tlsbench-mongodb-", otherNS), // cannot tell: keep
		labDirOf(t, "tlsbench-other-", dead),      // not a lab dir's name
		labDirOf(t, "tlsbench-labtest-", dead),
	}
	// A lab dir without an owner file, or with an unreadable one.
	noOwner := filepath.Join(tmp, "tlsbench-redis-1")
	mustWrite(t, filepath.Join(noOwner, "secret.key"), "x")
	garbled := filepath.Join(tmp, "tlsbench-redis-2")
	mustWrite(t, filepath.Join(garbled, ownerFile), "1 2")
	stay = append(stay, noOwner, garbled)

	// A symlink named like a lab dir, to a dir outside TMPDIR with a dead
	// owner; a stale lab dir's owner file that is a symlink; a stale lab
	// dir with a symlink out of TMPDIR inside.
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, ownerFile), dead.String())
	mustWrite(t, filepath.Join(outside, "precious"), "x")
	link := filepath.Join(tmp, "tlsbench-redis-3")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	linkedOwner := filepath.Join(tmp, "tlsbench-redis-4")
	mustWrite(t, filepath.Join(linkedOwner, "secret.key"), "x")
	if err := os.Symlink(filepath.Join(outside, ownerFile), filepath.Join(linkedOwner, ownerFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(gone[0], "data", "out")); err != nil {
		t.Fatal(err)
	}
	stay = append(stay, link, linkedOwner)
	if os.Geteuid() == 0 {
		// As root, a lab dir may belong to the postgres user, but its
		// owner file must be root's.
		foreign := labDirOf(t, "tlsbench-redis-", dead)
		if err := os.Chown(filepath.Join(foreign, ownerFile), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		stay = append(stay, foreign)
	}

	note, err := SweepStale()
	if err != nil {
		t.Errorf("SweepStale: %v", err)
	}
	for _, d := range gone {
		if exists(d) {
			t.Errorf("%s left", d)
		}
	}
	for _, d := range stay {
		if !exists(d) {
			t.Errorf("%s removed", d)
		}
	}
	if !exists(filepath.Join(outside, "precious")) || !exists(filepath.Join(outside, ownerFile)) {
		t.Error("the sweep removed files outside TMPDIR")
	}
	pids := fmt.Sprintf("pids %d, %d", min(dead.pid, live.pid), max(dead.pid, live.pid))
	if dead.pid == live.pid { // the kernel may hand a reaped pid out again
		pids = fmt.Sprintf("pid %d", dead.pid)
	}
	if want := "removed 4 lab directories (keys, passwords) left by tlsbench processes that did not stop cleanly (" + pids + ")"; note != want {
		t.Errorf("note %q\nwant %q", note, want)
	}
	if note, err := SweepStale(); note != "" || err != nil {
		t.Errorf("second sweep: %q, %v", note, err)
	}
}

// TestSweepKeptLogs: a failed start's kept log stays while its tlsbench
// runs and for a day after, then a sweep removes it.
func TestSweepKeptLogs(t *testing.T) {
	tmp := isolateTemp(t)
	dead := deadOwner(t)
	me, _ := self()
	old := time.Now().Add(-25 * time.Hour)
	n := 0
	logOf := func(o owner, mtime time.Time) string {
		n++
		p := filepath.Join(tmp, fmt.Sprintf("tlsbench-postgresql-initdb-%d.%d-%d.log", o.pid, o.start, n))
		mustWrite(t, p, "log")
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldDead := logOf(dead, old)
	stay := []string{logOf(dead, time.Now()), logOf(me, old)}
	other := filepath.Join(tmp, "tlsbench-notes.log")
	mustWrite(t, other, "x")
	stay = append(stay, other)

	note, err := SweepStale()
	if err != nil {
		t.Error(err)
	}
	if exists(oldDead) {
		t.Errorf("%s left", oldDead)
	}
	for _, p := range stay {
		if !exists(p) {
			t.Errorf("%s removed", p)
		}
	}
	if want := "removed 1 kept server log of failed lab starts older than a day"; note != want {
		t.Errorf("note %q, want %q", note, want)
	}

	// keepLog names its file so: a real one matches.
	p := &process{name: "PostgreSQL initdb", log: filepath.Join(tmp, "x.log")}
	mustWrite(t, p.log, "boom")
	kept := p.keepLog()
	if !keptLogRE.MatchString(filepath.Base(kept)) || !strings.Contains(kept, fmt.Sprintf("-%d.%d-", me.pid, me.start)) {
		t.Errorf("kept log %q does not name its owner", kept)
	}
}

// TestStartSweeps: starting a lab server removes the lab dirs of a tlsbench
// that was SIGKILLed.
func TestStartSweeps(t *testing.T) {
	slow(t)
	isolateTemp(t)
	stale := labDirOf(t, "tlsbench-redis-", deadOwner(t))
	b, err := StartBuiltin(context.Background(), BuiltinOptions{Keys: []string{"ecdsa-p256"}, Exe: tlsbenchExe})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if exists(stale) {
		t.Errorf("%s left after a lab start", stale)
	}
	if o, err := readOwner(b.dir); err != nil || o != must(self()) {
		t.Errorf("the new lab dir's owner: %v, %v", o, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSweepKillsServers: a server process still running in a stale lab dir
// is killed before its dir goes; one of a live owner is not touched.
func TestSweepKillsServers(t *testing.T) {
	slow(t)
	isolateTemp(t)
	start := func(dir string) *process {
		p, err := startProcess("sleeper", exec.Command("sleep", "60"), filepath.Join(dir, "sleep.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.stop(syscall.SIGKILL) })
		return p
	}
	dead := deadOwner(t)
	orphan := start(labDirOf(t, "tlsbench-redis-", dead))
	_, live := sleeper(t)
	kept := start(labDirOf(t, "tlsbench-redis-", live))
	note, err := SweepStale()
	if err != nil {
		t.Error(err)
	}
	if !strings.HasSuffix(note, "(pid "+strconv.Itoa(dead.pid)+") and killed 1 of its server processes that still ran") {
		t.Errorf("note %q", note)
	}
	select {
	case <-orphan.exited:
	case <-time.After(time.Second):
		t.Error("the stale dir's server still runs")
	}
	if err := kept.alive(); err != nil {
		t.Errorf("a live owner's server: %v", err)
	}
}

// markedPids lists the processes serverOf takes for servers of dir.
func markedPids(dir string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && serverOf(pid, []string{dir}) {
			out = append(out, pid)
		}
	}
	return out
}

// reachableTemp is a TMPDIR that the postgres user can enter when the
// tests run as root.
func reachableTemp(t *testing.T) string {
	tmp := isolateTemp(t)
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// TestOrphanedSSHD: a tlsbench that ran sshd is SIGKILLed while a client
// outside it (here: this test) holds an SSH connection. Pdeathsig kills the
// listening sshd, but not the per-connection sshd, which is its child in a
// session of its own: it keeps serving that client with the lab's keys.
// The sweep finds it by its environment and kills it.
func TestOrphanedSSHD(t *testing.T) {
	if _, err := os.Stat(sshdBinary); err != nil {
		needInstalled(t, fmt.Errorf("%v: %w", err, ErrNotInstalled))
	}
	h := startHelper(t, "sshd", isolateTemp(t))
	key, err := os.ReadFile(filepath.Join(h.dir, "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hostKeys, err := knownhosts.New(filepath.Join(h.dir, "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ssh.Dial("tcp", h.addr, &ssh.ClientConfig{
		User: must(currentUser()), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hostKeys, Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	echo := echoListener(t)
	forward := func() error {
		c, err := client.Dial("tcp", echo)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := forward(); err != nil {
		t.Fatal(err)
	}

	h.kill()
	if !waitGone(h.server, 5*time.Second) {
		t.Fatalf("the listening sshd %d outlived its killed parent", h.server)
	}
	orphans := markedPids(h.dir)
	if len(orphans) == 0 {
		t.Fatal("no sshd survived its parent: then this test tests nothing")
	}
	if err := forward(); err != nil {
		t.Fatalf("the orphaned sshd does not forward: %v", err)
	}

	note, err := SweepStale()
	if err != nil {
		t.Error(err)
	}
	if !strings.Contains(note, "removed 1 lab directory") || !strings.Contains(note, "and killed") {
		t.Errorf("note %q", note)
	}
	for _, pid := range orphans {
		if alive(pid) {
			t.Errorf("orphaned sshd %d still runs", pid)
		}
	}
	if exists(h.dir) {
		t.Errorf("%s left", h.dir)
	}
	if err := forward(); err == nil {
		t.Error("the SSH connection still forwards after the sweep")
	}
}

func currentUser() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

func echoListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestOrphanedPostgres: a tlsbench that ran PostgreSQL is SIGKILLed while
// a client outside it holds a connection. Pdeathsig kills the postmaster;
// its other processes (each in a session of its own) notice the
// postmaster's death and exit by themselves, the client's backend too.
// The dir stays for the sweep.
func TestOrphanedPostgres(t *testing.T) {
	slow(t)
	if _, err := postgresBin(); err != nil {
		needInstalled(t, err)
	}
	h := startHelper(t, "postgres", reachableTemp(t))
	cfg, err := pgconn.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(h.addr)
	p, _ := strconv.Atoi(port)
	cfg.Host, cfg.Port, cfg.User, cfg.Database, cfg.TLSConfig, cfg.Fallbacks = h.dir, uint16(p), pgSuperuser, "postgres", nil, nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if len(markedPids(h.dir)) < 3 {
		t.Fatalf("PostgreSQL runs as %v: want a postmaster, its helpers and a backend", markedPids(h.dir))
	}

	h.kill()
	deadline := time.Now().Add(10 * time.Second)
	for len(markedPids(h.dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := markedPids(h.dir); len(left) > 0 {
		t.Errorf("PostgreSQL processes %v outlived the postmaster by 10 s", left)
	}
	if !exists(h.dir) {
		t.Fatal("the lab dir went with its owner")
	}
	note, err := SweepStale()
	if err != nil {
		t.Error(err)
	}
	if !strings.HasPrefix(note, "removed 1 lab directory") || strings.Contains(note, "killed") {
		t.Errorf("note %q", note)
	}
	if exists(h.dir) {
		t.Errorf("%s left", h.dir)
	}
}

// longTemp makes a directory of n bytes under parent, which the postgres
// user can enter.
func longTemp(t *testing.T, parent string, n int) string {
	t.Helper()
	long := filepath.Join(parent, strings.Repeat("x", n-len(parent)-1))
	if err := os.Mkdir(long, 0o755); err != nil {
		t.Fatal(err)
	}
	return long
}

// TestLongTempDir: a TMPDIR too long for the lab's Unix sockets fails the
// start at once, with the fix, and leaves nothing; the longest one allowed
// works.
func TestLongTempDir(t *testing.T) {
	slow(t)
	for _, tt := range []struct{ engine, name string }{{"postgres", "PostgreSQL"}, {"mariadb", "MariaDB"}} {
		t.Run(tt.engine, func(t *testing.T) {
			tmp := longTemp(t, isolateTemp(t), 121)
			t.Setenv("TMPDIR", tmp)
			_, err := Start(context.Background(), tt.engine, Options{Keys: []string{"ecdsa-p256"}})
			if err == nil {
				t.Fatal("started")
			}
			if errors.Is(err, ErrNotInstalled) {
				needInstalled(t, err)
			}
			want := tt.name + " lab server: TMPDIR is 121 bytes long: the lab's Unix socket path would pass 107 bytes: " +
				"set TMPDIR to a shorter directory (at most "
			if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "), e.g. TMPDIR=/tmp") || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant %q…", msg, want)
			}
			assertEmpty(t, tmp)
		})
	}
	// The longest TMPDIR the check allows works: a socket path of 107
	// bytes is fine (with os.MkdirTemp's longest suffix).
	t.Run("postgres at the limit", func(t *testing.T) {
		if _, err := postgresBin(); err != nil {
			needInstalled(t, err)
		}
		parent := reachableTemp(t)
		n := maxSocketPath - len("/tlsbench-postgres-4294967295/.s.PGSQL.65535")
		t.Setenv("TMPDIR", longTemp(t, parent, n+1))
		err := checkSocketPath("PostgreSQL", "tlsbench-postgres-", ".s.PGSQL.65535")
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(at most %d bytes)", n)) {
			t.Errorf("TMPDIR of %d bytes: %v", n+1, err)
		}
		t.Setenv("TMPDIR", longTemp(t, parent, n))
		startT(t, "postgres", Options{Keys: []string{"ecdsa-p256"}})
	})
}
