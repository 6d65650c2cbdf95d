package host

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Stat is what tlsbench reads of a process's /proc/PID/stat.
type Stat struct {
	State string // R, S, Z (zombie), ...
	PPID  int
	Ticks int64 // utime + stime + cutime + cstime, in ClockTicks
	// ChildTicks is cutime + cstime: what the reaped children used.
	ChildTicks int64
	Threads    int
	Start      uint64 // clock ticks after boot: with the pid, names a process
}

// ClockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const ClockTicks = 100

// ReadStat reads process pid's /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(data)
}

// ParseStat reads /proc/PID/stat. The command name (field 2) may hold
// spaces and parentheses, so fields count from the last ')'.
func ParseStat(data []byte) (Stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, errors.New("malformed /proc stat")
	}
	// After ")": state(3) ppid(4) pgrp(5) ... utime(14) stime(15)
	// cutime(16) cstime(17) ... num_threads(20) ... starttime(22).
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return Stat{}, errors.New("short /proc stat")
	}
	st := Stat{State: f[0]}
	var err error
	if st.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, err
	}
	for i, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Stat{}, err
		}
		st.Ticks += n
		if i >= 2 {
			st.ChildTicks += n
		}
	}
	if st.Threads, err = strconv.Atoi(f[17]); err != nil {
		return Stat{}, err
	}
	if st.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, err
	}
	return st, nil
}

// Processes are the processes /proc shows now, by pid; one that ends
// while /proc is read is left out.
func Processes() (map[int]Stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := map[int]Stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended meanwhile
		}
		if st, err := ParseStat(data); err == nil {
			all[pid] = st
		}
	}
	return all, nil
}

// Tree is root and all its descendants among all (Processes), by pid.
// Descendants, not the process group: PostgreSQL's backends call setsid().
func Tree(all map[int]Stat, root int) map[int]Stat {
	tree := map[int]Stat{}
	for pid, st := range all {
		// Walk up the parents; a chain is short (server, backend).
		for q, hops := pid, 0; hops < 16; hops++ {
			if q == root {
				tree[pid] = st
				break
			}
			parent, ok := all[q]
			if !ok || parent.PPID == 0 {
				break
			}
			q = parent.PPID
		}
	}
	return tree
}

// TreeCPU is the CPU time a process tree (Tree) has used so far: user
// and system time of each process, plus what each of them collected from
// the children it reaped (PostgreSQL's backends end with their
// connections).
func TreeCPU(tree map[int]Stat) time.Duration {
	var total time.Duration
	for pid, st := range tree {
		// /proc/PID/stat truncates each process's own time to clock
		// ticks: 500 PostgreSQL backends of 3 ms each would show none.
		// schedstat has it in nanoseconds, per thread: the live threads'
		// sum is all of a single-threaded process's, and at least what
		// a multi-threaded one's live threads used (a Go server's storm
		// of plain connections can take less than a tick); stat also
		// counts the threads that exited. Both are lower bounds: take
		// the larger. What reaped children used was summed before its
		// truncation.
		ticks := time.Duration(st.Ticks) * time.Second / ClockTicks
		if ns, ok := threadsRunTime(pid); ok {
			total += max(ns+time.Duration(st.ChildTicks)*time.Second/ClockTicks, ticks)
			continue
		}
		total += ticks
	}
	return total
}

// threadsRunTime is the CPU time a process's live threads have run so
// far, in nanoseconds: the first field of each /proc/PID/task/TID/schedstat
// (kernels with CONFIG_SCHED_INFO).
func threadsRunTime(pid int) (time.Duration, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		ns, ok := runTime(dir + "/" + t.Name() + "/schedstat")
		if !ok {
			if _, err := os.Stat(dir + "/" + t.Name()); err != nil {
				continue // the thread exited while read: stat keeps its time
			}
			return 0, false
		}
		total += ns
	}
	return total, true
}

// runTime reads the run time, in nanoseconds, from a schedstat file.
func runTime(path string) (time.Duration, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err == nil
}

// Memory is what a process tree holds in memory at one moment.
type Memory struct {
	// Bytes is the sum over the process tree of each process's
	// proportional set size (PSS: shared pages divided among the
	// processes that map them, so that the sum counts each page once),
	// or of its resident set size where PSS cannot be read (Kind).
	Bytes int64
	// Kind is MemoryPSS or MemoryRSS: what Bytes sums.
	Kind string
	// Processes is how many processes the tree held.
	Processes int
}

// What a Memory sums.
const (
	MemoryPSS = "pss" // /proc/PID/smaps_rollup (Linux 4.14+)
	MemoryRSS = "rss" // /proc/PID/status VmRSS: shared pages count in every process
)

// TreeMemory reads the memory of a process tree (Tree) whose root is
// root: PSS from smaps_rollup, or RSS for the whole tree if the root's own
// PSS cannot be read (an old kernel), so that one Kind holds for the sum.
// A child that cannot be read has ended meanwhile.
func TreeMemory(tree map[int]Stat, root int) (Memory, error) {
	m := Memory{Kind: MemoryPSS}
	for pid := range tree {
		kb, err := procField("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", "Pss:")
		if err != nil && pid == root {
			m.Kind = MemoryRSS
			break
		}
		if err != nil {
			continue
		}
		m.Bytes += kb << 10
		m.Processes++
	}
	if m.Kind == MemoryRSS {
		m.Bytes, m.Processes = 0, 0
		for pid := range tree {
			kb, err := procField("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS:")
			if err != nil {
				continue // ended meanwhile, or a kernel thread without VmRSS
			}
			m.Bytes += kb << 10
			m.Processes++
		}
	}
	if m.Processes == 0 {
		return m, errors.New("no process of the server could be read in /proc")
	}
	return m, nil
}

// procField reads the kB figure of the line that starts with name in a
// /proc file ("Pss:   1234 kB").
func procField(path, name string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(string(f[0]), 10, 64)
		}
	}
	return 0, errors.New(path + ": no " + name + " line")
}
