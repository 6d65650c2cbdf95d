package lab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tlsbench/tlsbench/internal/host"
)

// A lab dir holds a server's private keys, passwords and SSH identities.
// Stop removes it; a tlsbench that is SIGKILLed, killed by the OOM killer
// or panics does not. So each dir records its owner when it is made, and
// the next lab start (or SweepStale) removes every lab dir whose owner is
// gone, after killing any of its servers that still run.

// ownerFile names the lab dir's owner; only a dir holding it, as a regular
// file of our own, is ever swept.
const ownerFile = "owner"

// labEnv marks every server process with its lab dir, so that a sweep can
// find the ones that outlived their owner (see serverOf).
const labEnv = "TLSBENCH_LAB_DIR"

// labDirRE matches the lab dirs newLabDir and makeLabDir make: prefix plus
// os.MkdirTemp's random number.
var labDirRE = regexp.MustCompile(`^tlsbench-(postgres|mariadb|redis|mongodb|sshd|ssh|stunnel|pgbouncer|haproxy|wg|dl|lab)-[0-9]+$`)

// keptLogRE matches the logs keepLog leaves in the temp dir:
// tlsbench-NAME-PID.START-RANDOM.log.
var keptLogRE = regexp.MustCompile(`^tlsbench-[a-z0-9-]+-([0-9]+)\.([0-9]+)-[0-9]+\.log$`)

// keptLogAge is how long a kept log of a tlsbench that has ended stays: it
// is there for a post-mortem of a failed start, which the next run, often
// a retry, must not take away.
var keptLogAge = 24 * time.Hour

// owner identifies a process beyond its pid, which the kernel reuses: its
// start time (clock ticks after boot, field 22 of /proc/PID/stat), the boot
// and its pid namespace (a pid means nothing in another one).
type owner struct {
	pid   int
	start uint64
	boot  string
	pidNS string
}

// ownerOf reads pid's identity from /proc.
func ownerOf(pid int) (owner, error) {
	st, err := host.ReadStat(pid)
	if err != nil {
		return owner{}, err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return owner{}, err
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return owner{}, err
	}
	return owner{pid: pid, start: st.Start, boot: strings.TrimSpace(string(boot)), pidNS: ns}, nil
}

// self is this process's identity, read once.
var self = sync.OnceValues(func() (owner, error) { return ownerOf(os.Getpid()) })

// String is the owner file's content: "pid start boot pidns".
func (o owner) String() string {
	return fmt.Sprintf("%d %d %s %s\n", o.pid, o.start, o.boot, o.pidNS)
}

func parseOwner(s string) (owner, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return owner{}, errors.New("malformed owner file")
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return owner{}, errors.New("malformed owner pid")
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return owner{}, errors.New("malformed owner start time")
	}
	return owner{pid: pid, start: start, boot: f[2], pidNS: f[3]}, nil
}

// gone reports whether the process o names has ended: a pid that does not
// run, runs as a zombie, or runs with another start time (a recycled pid).
// It is false for an owner in another pid namespace, which this process
// cannot judge, and true for one of an earlier boot.
func (o owner) gone(me owner) bool {
	if o.boot != me.boot {
		return true
	}
	if o.pidNS != me.pidNS {
		return false
	}
	return pidGone(o.pid, o.start)
}

// pidGone reports whether the process pid that started at start has ended.
func pidGone(pid int, start uint64) bool {
	st, err := host.ReadStat(pid)
	return err != nil || st.State == "Z" || st.Start != start
}

// labTempDir is where lab dirs go: os.TempDir() as an absolute, clean path,
// spelled the same by the dirs' makers and the sweep.
func labTempDir() string {
	dir, err := filepath.Abs(os.TempDir())
	if err != nil {
		return filepath.Clean(os.TempDir())
	}
	return dir
}

// makeLabDir makes a 0700 temp dir for a lab server, owned by this process,
// after sweeping the lab dirs that ended processes left (best effort: the
// start goes on whatever the sweep met; SweepStale reports it).
func makeLabDir(prefix string) (string, error) {
	me, err := self()
	if err != nil {
		return "", fmt.Errorf("lab: identifying this process in /proc: %w", err)
	}
	sweep(labTempDir(), me)
	return makeLabDirFor(prefix, me)
}

// makeLabDirFor makes a lab dir owned by o; its owner file is written
// before anything secret goes in.
func makeLabDirFor(prefix string, o owner) (string, error) {
	dir, err := os.MkdirTemp(labTempDir(), prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(o.String()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// SweepStale removes what tlsbench processes that did not stop cleanly
// (SIGKILL, the OOM killer, a panic) left in the temp dir: their lab
// servers' dirs with private keys, passwords and SSH identities, once any
// of those servers still running is killed, and their kept server logs
// older than a day. Only our own dirs are touched: named as lab dirs, owned
// by this user and holding an owner file of ours whose process is gone.
// Every lab start does the same; a caller runs it first to report it: note
// is one line saying what was removed, "" if nothing.
func SweepStale() (note string, err error) {
	me, err := self()
	if err != nil {
		return "", fmt.Errorf("lab: identifying this process in /proc: %w", err)
	}
	r := sweep(labTempDir(), me)
	return r.note(), errors.Join(r.errs...)
}

// sweepReport is what a sweep did.
type sweepReport struct {
	dirs   int   // lab dirs removed
	owners []int // their owners' pids
	killed int   // server processes that still ran
	logs   int   // kept logs removed
	errs   []error
}

func (r sweepReport) note() string {
	var parts []string
	if r.dirs > 0 {
		pids := make([]string, len(r.owners))
		for i, p := range r.owners {
			pids[i] = strconv.Itoa(p)
		}
		who, its := "a tlsbench that did not stop cleanly (pid ", "its"
		if len(pids) > 1 {
			who, its = "tlsbench processes that did not stop cleanly (pids ", "their"
		}
		s := fmt.Sprintf("removed %s (keys, passwords) left by %s%s)",
			plural(r.dirs, "lab directory", "lab directories"), who, strings.Join(pids, ", "))
		if r.killed > 0 {
			s += fmt.Sprintf(" and killed %d of %s server processes that still ran", r.killed, its)
		}
		parts = append(parts, s)
	}
	if r.logs > 0 {
		parts = append(parts, fmt.Sprintf("removed %s of failed lab starts older than a day",
			plural(r.logs, "kept server log", "kept server logs")))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// sweep removes from tmp the lab dirs and kept logs whose owner is gone.
func sweep(tmp string, me owner) (r sweepReport) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		r.errs = append(r.errs, err)
		return r
	}
	var stale []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(tmp, name)
		switch {
		case labDirRE.MatchString(name):
			o, err := readOwner(path)
			if err != nil || !o.gone(me) {
				continue // not ours, or its owner may still use it
			}
			stale = append(stale, path)
			if !slices.Contains(r.owners, o.pid) {
				r.owners = append(r.owners, o.pid)
			}
		case keptLogRE.MatchString(name):
			if staleLog(path, name) {
				if err := os.Remove(path); err == nil {
					r.logs++
				} else if !errors.Is(err, fs.ErrNotExist) {
					r.errs = append(r.errs, err)
				}
			}
		}
	}
	if len(stale) == 0 {
		return r
	}
	n, err := killServers(stale)
	r.killed = n
	if err != nil {
		r.errs = append(r.errs, err)
	}
	for _, dir := range stale {
		// A VPN's or a delay link's network namespace (and veth pair) go
		// with its dir (its devices go with the killed processes).
		if err := removeWireGuard(dir); err != nil {
			r.errs = append(r.errs, err)
		}
		// RemoveAll never follows a symlink, inside dir or for dir itself.
		if err := os.RemoveAll(dir); err != nil {
			r.errs = append(r.errs, err)
			continue
		}
		r.dirs++
	}
	slices.Sort(r.owners)
	return r
}

// readOwner reads the owner of the lab dir at path, which must be a real
// directory (not a symlink) of ours, holding a regular owner file of ours.
// The PostgreSQL lab dir belongs to the postgres user when we are root;
// its owner file stays root's.
func readOwner(path string) (owner, error) {
	uid := uint32(os.Geteuid())
	dfd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return owner{}, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return owner{}, err
	}
	if st.Uid != uid && uid != 0 {
		return owner{}, errors.New("not our directory")
	}
	fd, err := unix.Openat(dfd, ownerFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return owner{}, err
	}
	f := os.NewFile(uintptr(fd), ownerFile)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return owner{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uid {
		return owner{}, errors.New("not our owner file")
	}
	data, err := io.ReadAll(io.LimitReader(f, 512))
	if err != nil {
		return owner{}, err
	}
	return parseOwner(string(data))
}

// staleLog reports whether the kept log at path is a regular file of ours
// whose owner, named in its name, is gone, and older than keptLogAge.
func staleLog(path, name string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < keptLogAge {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uint32(os.Geteuid()) {
		return false
	}
	m := keptLogRE.FindStringSubmatch(name)
	pid, err1 := strconv.Atoi(m[1])
	start, err2 := strconv.ParseUint(m[2], 10, 64)
	return err1 == nil && err2 == nil && pidGone(pid, start)
}

// keptLogPattern is the os.CreateTemp pattern of a kept log of the server
// name: it names this process, so that a sweep can tell when it is gone.
func keptLogPattern(name string) string {
	name = strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	if me, err := self(); err == nil {
		return fmt.Sprintf("tlsbench-%s-%d.%d-*.log", name, me.pid, me.start)
	}
	return "tlsbench-" + name + "-*.log"
}

// killServers SIGKILLs every process that is a server of one of dirs (see
// serverOf) and waits, up to stopGrace, until they have exited. It returns
// how many it killed.
func killServers(dirs []string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var pidfds []int
	defer func() {
		for _, fd := range pidfds {
			unix.Close(fd)
		}
	}()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		// The pidfd pins the process: if it still runs after /proc was
		// read, that was its entry, not that of a process that got its
		// pid since.
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if !serverOf(pid, dirs) || unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) != nil {
			unix.Close(fd)
			continue
		}
		pidfds = append(pidfds, fd)
	}
	deadline := time.Now().Add(stopGrace)
	var errs []error
	for _, fd := range pidfds {
		// A pidfd becomes readable when its process has exited.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ms := max(int(time.Until(deadline)/time.Millisecond), 0)
		if n, err := unix.Poll(fds, ms); err == nil && n == 0 {
			errs = append(errs, errors.New("lab: a server process of a tlsbench that did not stop cleanly did not exit after SIGKILL"))
		}
	}
	return len(pidfds), errors.Join(errs...)
}

// serverOf reports whether pid is a server process of one of dirs, or a
// descendant of one: its environment has the mark startProcess gave it, or
// its stdout or stderr is a file in the dir, as startProcess set them up.
// The environment alone is not enough: PostgreSQL's and sshd's children
// write their process titles over it.
func serverOf(pid int, dirs []string) bool {
	var targets []string
	for _, fd := range []string{"1", "2"} {
		if t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd)); err == nil {
			targets = append(targets, t)
		}
	}
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	vars := strings.Split(string(env), "\x00")
	for _, d := range dirs {
		for _, t := range targets {
			if strings.HasPrefix(t, d+"/") {
				return true
			}
		}
		if slices.Contains(vars, labEnv+"="+d) {
			return true
		}
	}
	return false
}
