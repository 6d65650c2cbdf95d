// Package host reads and sets facts of the machine tlsbench runs on: the
// CPU time this process has used, the CPUs it may run on and their list
// syntax, the CPU split between tlsbench and the servers it starts, and
// the CPU time and memory of a process tree from /proc.
package host

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPU is the CPU time (user and system) this process has used so
// far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUs are the CPUs this process may run on (its affinity mask), in
// order; nil if the mask cannot be read.
func CPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// NumCPU is the number of CPUs this process may run on: its affinity mask
// (which --client-cpus may have narrowed after the start, when
// runtime.NumCPU was taken), or runtime.NumCPU if the mask cannot be read.
func NumCPU() int {
	if n := len(CPUs()); n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// maxCPU bounds a CPU number in a list (the kernel's CPU sets hold 1024).
const maxCPU = 1023

// ParseCPUList parses taskset's CPU list syntax: numbers and ranges
// joined by commas, e.g. "0", "0-1", "0,2-3". The result is sorted, each
// CPU once.
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("the CPU list is empty: give CPUs as taskset does, e.g. 0 or 0-1")
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b, errB := a, error(nil)
		if isRange {
			b, errB = strconv.Atoi(hi)
		}
		if errA != nil || errB != nil || a < 0 || b < a || b > maxCPU {
			return nil, fmt.Errorf("%q is not a CPU or a range of CPUs (0 to %d): write e.g. 0 or 0-1,3", part, maxCPU)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList writes sorted CPUs in the list syntax, runs as ranges:
// [0 1 2 5] is "0-2,5".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
