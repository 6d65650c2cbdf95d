package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
)

// TestWaitModes: threads alone while each connection has a CPU; beyond,
// the poller with a P per CPU first (the default), with one P, and locked
// threads up to maxThreadWaits connections.
func TestWaitModes(t *testing.T) {
	cpus := host.NumCPU()
	names := func(c int) string {
		var s []string
		for _, m := range waitModes(c) {
			s = append(s, m.String())
		}
		return strings.Join(s, "; ")
	}
	pollers := fmt.Sprintf("poller, %d Ps; poller, 1 P", cpus)
	if cpus == 1 {
		pollers = "poller, 1 P"
	}
	tests := []struct {
		c    int
		want string
	}{
		{1, "thread, 2 Ps"},
		{cpus, fmt.Sprintf("thread, %d Ps", cpus+1)},
	}
	if cpus < maxThreadWaits {
		tests = append(tests, []struct {
			c    int
			want string
		}{
			{maxThreadWaits, fmt.Sprintf("%s; locked thread, %d Ps", pollers, maxThreadWaits+1)},
			{maxThreadWaits + 1, pollers},
		}...)
	}
	for _, tt := range tests {
		if got := names(tt.c); got != tt.want {
			t.Errorf("c=%d: %s, want %s", tt.c, got, tt.want)
		}
	}
}

// TestChoose: the most operations win, unless a mode within 5% of them
// took less client CPU for each.
func TestChoose(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name string
		ops  []int64
		cpu  []time.Duration
		want int
	}{
		{"most operations", []int64{100, 120, 90}, []time.Duration{10 * ms, 12 * ms, 9 * ms}, 1},
		{"within 5%, less CPU each", []int64{100, 97, 90}, []time.Duration{10 * ms, 7 * ms, 5 * ms}, 1},
		{"just outside 5%", []int64{100, 94, 90}, []time.Duration{10 * ms, 5 * ms, 5 * ms}, 0},
		{"within 5%, more CPU each", []int64{100, 99, 98}, []time.Duration{10 * ms, 11 * ms, 12 * ms}, 0},
		{"the cheapest of several close ones", []int64{100, 98, 96}, []time.Duration{10 * ms, 8 * ms, 6 * ms}, 2},
		{"a mode that ran nothing", []int64{0, 50, 0}, []time.Duration{0, 5 * ms, 0}, 1},
		{"nothing ran at all", []int64{0, 0, 0}, []time.Duration{0, 0, 0}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := choose(tt.ops, tt.cpu); got != tt.want {
				t.Errorf("choose(%v, %v) = %d, want %d", tt.ops, tt.cpu, got, tt.want)
			}
		})
	}
}
