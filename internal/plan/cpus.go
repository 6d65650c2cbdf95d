package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// clientCPUs checks Spec.ClientCPUs, taskset's list syntax ("0", "0-1",
// "0,2-3"), against the CPUs this process may run on, writes it in its
// canonical form and keeps it parsed (ClientCPUList).
func (s *Spec) clientCPUs() error {
	if s.ClientCPUs == "" {
		return nil
	}
	cpus, err := ParseCPUList(s.ClientCPUs)
	if err != nil {
		return errorf("⟨client_cpus⟩: %v", err)
	}
	avail := AvailableCPUs()
	for _, c := range cpus {
		if !slices.Contains(avail, c) {
			return errorf("⟨client_cpus⟩: CPU %d is not available here: use CPUs of %s", c, FormatCPUList(avail))
		}
	}
	s.ClientCPUs, s.clientCPUList = FormatCPUList(cpus), cpus
	return nil
}

// ClientCPUList is ClientCPUs as New parsed it, sorted; nil for all CPUs
// (or a Spec New did not make).
func (s Spec) ClientCPUList() []int { return slices.Clone(s.clientCPUList) }

// AvailableCPUs are the CPUs this process may run on (its affinity mask),
// in order.
func AvailableCPUs() []int {
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
