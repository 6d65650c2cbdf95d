package result

import (
	"strings"
	"testing"
	"time"
)

// TestOpenLoopFigures: the achieved rate is the arrivals that started per
// second of the window (an older result's: its arrivals less drops), and
// the schedule is kept or not by the shares of late and unstarted ones.
func TestOpenLoopFigures(t *testing.T) {
	tests := []struct {
		name     string
		o        OpenLoop
		p99      float64
		achieved float64
		behind   string
		over     string
	}{
		{"kept", OpenLoop{Offered: 150, Arrivals: 728, Window: 5 * time.Second,
			Schedule: &Schedule{Due: 728, Started: 728, Late1ms: 90, Late10ms: 30}}, 10, 145.6, "", ""},
		{"late", OpenLoop{Offered: 150, Arrivals: 749, Window: 5 * time.Second,
			Schedule: &Schedule{Due: 749, Started: 749, Late1ms: 160, Late10ms: 148}}, 10, 149.8, "148 of 749 arrivals started over 10 ms late", ""},
		{"fell behind", OpenLoop{Offered: 150, Arrivals: 600, Window: 5 * time.Second,
			Schedule: &Schedule{Due: 750, Started: 600}}, 10, 120, "started 600 of the 750", "started 600 of the 750"},
		{"drops are not the client's", OpenLoop{Offered: 150, Arrivals: 750, Dropped: 150, Window: 5 * time.Second,
			Schedule: &Schedule{Due: 750, Started: 600}}, 10, 120, "", "150 of 750 arrivals dropped"},
		{"slow server", OpenLoop{Offered: 150, Arrivals: 750, Window: 5 * time.Second,
			Schedule: &Schedule{Due: 750, Started: 750}}, 80, 150, "", "p99 80.0 ms above 50ms"},
		{"older result", OpenLoop{Offered: 150, Arrivals: 728, Dropped: 8, Window: 5 * time.Second}, 10, 144, "", "8 of 728 arrivals dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Achieved(); got < tt.achieved-1e-9 || got > tt.achieved+1e-9 {
				t.Errorf("achieved %v, want %v", got, tt.achieved)
			}
			if got := tt.o.Behind(); (tt.behind == "") != (got == "") || !strings.Contains(got, tt.behind) {
				t.Errorf("behind %q, want %q", got, tt.behind)
			}
			tr := Trial{Open: &tt.o, Latency: Hist{P99: tt.p99}}
			if got := tr.OverSLO(50 * time.Millisecond); (tt.over == "") != (got == "") || !strings.Contains(got, tt.over) {
				t.Errorf("over the SLO %q, want %q", got, tt.over)
			}
		})
	}
}

// TestOpenLoopOlderResult decodes a trial at a rate as a tlsbench before
// the schedule's figures wrote it (lag_ns, the last arrival's lag only): it
// reads, without a schedule, its achieved rate its arrivals less drops.
func TestOpenLoopOlderResult(t *testing.T) {
	data := `{"schema":"tlsbench.result","version":1,"variants":[{"id":"plain","tls":"off"}],"trials":[{"experiment":"connect","variant":"plain","concurrency":1024,
		"open_loop":{"offered":150,"process":"poisson","slots":1024,"arrivals":728,"dropped":0,"window_ns":5000000000,"lag_ns":512000,"service":{"count":728}},
		"ops":728,"conns":728,"latency":{"count":728}}]}`
	r, err := Decode([]byte(data), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	o := r.Trials[0].Open
	if o.Schedule != nil || o.Achieved() != 145.6 || o.Behind() != "" {
		t.Errorf("schedule %+v, achieved %v, behind %q", o.Schedule, o.Achieved(), o.Behind())
	}
}
