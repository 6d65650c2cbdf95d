package host

import (
	"slices"
	"strings"
	"testing"
)

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
		cpus          []int
	}{
		{in: "0", want: "0", cpus: []int{0}},
		{in: "0-1", want: "0-1", cpus: []int{0, 1}},
		{in: "3, 0-1,1", want: "0-1,3", cpus: []int{0, 1, 3}},
		{in: "0-2,5,7-8", want: "0-2,5,7-8", cpus: []int{0, 1, 2, 5, 7, 8}},
		{in: " ", err: "the CPU list is empty"},
		{in: "1-0", err: `"1-0" is not a CPU or a range`},
		{in: "a", err: `"a" is not a CPU`},
		{in: "0,", err: `"" is not a CPU`},
		{in: "-1", err: `"-1" is not a CPU`},
		{in: "2000", err: `"2000" is not a CPU`},
	} {
		cpus, err := ParseCPUList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCPUList(%q) = %v, %v; want error %q", tc.in, cpus, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(cpus, tc.cpus) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.in, cpus, err, tc.cpus)
		}
		if got := FormatCPUList(cpus); got != tc.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", cpus, got, tc.want)
		}
	}
	if len(CPUs()) == 0 {
		t.Error("no CPU available to this process")
	}
}

func TestNumCPU(t *testing.T) {
	if n := NumCPU(); n != len(CPUs()) || n < 1 {
		t.Errorf("NumCPU() = %d, %d CPUs in the mask", n, len(CPUs()))
	}
	if ProcessCPU() <= 0 {
		t.Error("this process has used no CPU time")
	}
}
