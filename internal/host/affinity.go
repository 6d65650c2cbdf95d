package host

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The CPU split of --client-cpus: tlsbench's threads on one set, the
// servers it starts on the rest, so that a same-machine run keeps the
// client's CPU out of the server's.
var affinity struct {
	mu      sync.Mutex
	client  unix.CPUSet
	servers unix.CPUSet
	on      bool
}

// PinClient moves every thread of this process onto the client CPUs (the
// threads started later inherit it from their creator) and makes the
// servers started from now on run on servers. An empty servers pins the
// client only.
func PinClient(client, servers []int) error {
	affinity.mu.Lock()
	defer affinity.mu.Unlock()
	cs, ss := cpuSet(client), cpuSet(servers)
	// A thread may start while the list is read: read until it is stable.
	done := map[int]bool{}
	for {
		tids, err := threads()
		if err != nil {
			return fmt.Errorf("--client-cpus: %w", err)
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			// A thread that ended meanwhile is not an error.
			if err := unix.SchedSetaffinity(tid, &cs); err != nil && err != unix.ESRCH {
				return fmt.Errorf("--client-cpus: pinning thread %d to CPUs %v: %w", tid, client, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			break
		}
	}
	affinity.client, affinity.servers, affinity.on = cs, ss, len(servers) > 0
	return nil
}

func cpuSet(cpus []int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

// threads lists this process's thread ids.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

// StartPinned runs start (an exec.Cmd's Start) so that the child begins on
// the server CPUs: a forked process inherits the affinity of the thread
// that forked it, so the fork runs on a thread locked for the purpose,
// moved to the server CPUs and back. The child's own threads and children
// (PostgreSQL's backends) inherit it from there: no race with a thread
// the server starts early.
func StartPinned(start func() error) error {
	affinity.mu.Lock()
	defer affinity.mu.Unlock()
	if !affinity.on {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetaffinity(0, &affinity.servers); err != nil {
		return fmt.Errorf("setting the server CPUs: %w", err)
	}
	err := start()
	if rerr := unix.SchedSetaffinity(0, &affinity.client); rerr != nil && err == nil {
		err = fmt.Errorf("restoring the client CPUs: %w", rerr)
	}
	return err
}
