package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestUnits: each workload's rate is named as the docs name it: queries
// for SQL, passes for pgbench scripts, operations for Redis and MongoDB,
// requests for HTTP.
func TestUnits(t *testing.T) {
	for _, tt := range []struct {
		target, workload string
		want             string
	}{
		{"lab:postgres", "point-select", "queries/s"},
		{"lab:postgres", "script", "passes/s"},
		{"mysql://u@127.0.0.1/db", "script", "passes/s"},
		{"lab:redis", "get", "operations/s"},
		{"rediss://127.0.0.1:6380/0", plan.WorkloadCommand, "operations/s"},
		{"mongodb://127.0.0.1/", "find-one-id", "operations/s"},
		{"lab:mongodb", plan.WorkloadFilter, "operations/s"},
		{"builtin", "get", "requests/s"},
		{"https://127.0.0.1:8443/", plan.WorkloadRequest, "requests/s"},
	} {
		r := result.New()
		r.Spec = plan.Spec{Target: tt.target, Workload: tt.workload, Experiments: []plan.Experiment{plan.Pool}}
		ix := newIndex(r)
		if got := ix.metricName(plan.Pool); got != tt.want {
			t.Errorf("%s %s: metric %q, want %q", tt.target, tt.workload, got, tt.want)
		}
		if got := ix.unit(plan.Pool); got[:len(tt.want)] != tt.want {
			t.Errorf("%s %s: unit %q, want it to start %q", tt.target, tt.workload, got, tt.want)
		}
	}
}

// TestNegativeMemory: a trial whose server shrank while it held its
// connections (measured: the built-in server's start-up garbage returned
// to the system during the first trial) gets a footnote saying why its
// figure is below 0; a run without one gets none.
func TestNegativeMemory(t *testing.T) {
	for _, shrank := range []bool{false, true} {
		r := read(t, "measured-postgres-storm.json")
		if shrank {
			m := r.Trials[0].ServerMemory
			m.HeldBytes = m.IdleBytes - 180<<10*m.Conns
		}
		var b bytes.Buffer
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "below 0: the server held less with the connections open than idle just before"); got != shrank {
			t.Errorf("shrank %v: footnote %v:\n%s", shrank, got, b.String())
		}
	}
}
