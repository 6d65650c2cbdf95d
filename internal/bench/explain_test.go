package bench_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The check's remedy comes from the kind a driver marked its error with,
// whatever the server's words.
func TestExplainReadsKinds(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"source refused", driver.Mark(errors.New("FATAL: go away"), driver.ErrSourceRefused),
			[]string{"FATAL: go away", "refuses connections from this source address", "use --source auto", "127.0.1.1-127.0.1.64"}},
		{"missing table", driver.Mark(errors.New("no such thing"), driver.ErrMissingData),
			[]string{"no such thing", "the workload's tables are missing", "tlsbench prepare"}},
		{"missing rows", &driver.MissingData{Table: "sbtest1", MaxID: 10, Rows: 100},
			[]string{"sbtest1 holds ids up to 10", "tlsbench prepare"}},
		// Words alone are the server's, not a kind: no remedy is made up.
		{"words only", errors.New("no pg_hba.conf entry for host; sbtest1 does not exist"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &standIn{addr: acceptor(t), script: script{do: func(int64) error { return tt.err }}}
			r := standInRunner(t, plan.Spec{Source: plan.SourceSpread}, d)
			_, err := r.Check(context.Background())
			if err == nil {
				t.Fatal("the check passed")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: no %q", err, w)
				}
			}
			if tt.want == nil && (strings.Contains(err.Error(), "--source") || strings.Contains(err.Error(), "prepare")) {
				t.Errorf("%q: a remedy for an unmarked error", err)
			}
		})
	}
}
