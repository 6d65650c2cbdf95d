package result

import (
	"strings"
	"testing"
	"time"
)

// TestOverLag: a replicate trial at a rate is over its bounds for the
// open loop's reasons, heartbeats the replica never showed, a lag p99
// over the lag SLO, or, only where a commit bound is given (a
// synchronous mode), a commit p99 over it.
func TestOverLag(t *testing.T) {
	open := func() *OpenLoop {
		return &OpenLoop{Offered: 100, Arrivals: 200, Window: 2 * time.Second, Schedule: &Schedule{Due: 200, Started: 200}}
	}
	trial := func(commitP99, lagP99 float64, change func(*Trial)) Trial {
		t := Trial{Latency: Hist{P99: commitP99}, Open: open(), Replication: &Replication{Lag: Hist{P99: lagP99}, Heartbeats: 100}}
		if change != nil {
			change(&t)
		}
		return t
	}
	for _, tt := range []struct {
		name string
		t    Trial
		slo  time.Duration
		want string // "" when sustained
	}{
		{"within", trial(40, 900, nil), 0, ""},
		{"lag over", trial(40, 1100, nil), 0, "lag p99 1100.0 ms above 1s"},
		{"async commit unbounded", trial(5000, 10, nil), 0, ""},
		{"sync commit over", trial(60, 10, nil), 50 * time.Millisecond, "commit p99 60.0 ms above 50ms"},
		{"dropped", trial(1, 1, func(t *Trial) { t.Open.Dropped = 10 }), 0, "10 of 200 arrivals dropped"},
		{"failed", trial(1, 1, func(t *Trial) { t.Errors = map[string]int64{"write": 5} }), 0, "5 of 200 arrivals failed"},
		{"unseen", trial(1, 1, func(t *Trial) { t.Replication.Unseen = 3 }), 0, "3 of 100 heartbeats not on the replica"},
		{"closed loop", trial(1, 5000, func(t *Trial) { t.Open = nil }), 0, ""},
	} {
		got := tt.t.OverLag(time.Second, tt.slo)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
