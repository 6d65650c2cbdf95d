package plan

import (
	"strings"
	"testing"
)

func TestExperimentsChecked(t *testing.T) {
	tests := []struct {
		spec Spec
		err  string // "" for none
	}{
		{Spec{}, ""},
		{Spec{Lab: "postgres", Experiments: []Experiment{Connect, Storm}}, ""},
		{Spec{Experiments: []Experiment{"sprint"}}, `unknown experiment "sprint": use connect, pool, storm or stream`},
		// The seed's loops belong to its preset: offered nowhere else.
		{Spec{Experiments: []Experiment{ReusedClient}}, `unknown experiment "reused-client": use connect, pool, storm or stream`},
		{Spec{Lab: "mongodb", Preset: PresetMongoDBSeed}, ""},
		{Spec{Lab: "postgres", Experiments: []Experiment{Stream}, Rates: []float64{100}}, "rates applies to connect and pool"},
	}
	for _, tc := range tests {
		s, err := New(tc.spec)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.spec.Experiments, err)
		case tc.err == "" && len(s.Experiments) == 0:
			t.Errorf("%v: no experiment filled in", tc.spec.Experiments)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: %v, want %q", tc.spec.Experiments, err, tc.err)
		}
	}
}
