package bench

import (
	"fmt"
	"strings"
	"testing"
)

// TestWaitModes: threads alone while each connection has a CPU; beyond,
// the poller with a P per CPU first (the default), with one P, and locked
// threads up to maxThreadWaits connections.
func TestWaitModes(t *testing.T) {
	cpus := usableCPUs()
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
