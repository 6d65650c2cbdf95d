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
	poller := fmt.Sprintf("poller, %d Ps", cpus)
	if cpus == 1 {
		poller = "poller, 1 P"
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
			{maxThreadWaits, fmt.Sprintf("%s; poller, 1 P; locked thread, %d Ps", poller, maxThreadWaits+1)},
			{maxThreadWaits + 1, poller + "; poller, 1 P"},
		}...)
	}
	for _, tt := range tests {
		want := strings.ReplaceAll(tt.want, "poller, 1 P; poller, 1 P", "poller, 1 P") // one CPU
		if got := names(tt.c); got != want {
			t.Errorf("c=%d: %s, want %s", tt.c, got, want)
		}
	}
}
