package bench

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// Every experiment plan accepts has a way to run here, and no other.
func TestEveryExperimentRegistered(t *testing.T) {
	var here []plan.Experiment
	for e := range experiments {
		here = append(here, e)
	}
	slices.Sort(here)
	if want := plan.Experiments(); !slices.Equal(here, want) {
		t.Errorf("bench runs %v, plan accepts %v", here, want)
	}
}

func TestTrialUnknownExperiment(t *testing.T) {
	r := &Runner{}
	_, err := r.Trial(context.Background(), "sprint", plan.Variant{ID: "plain"}, 1)
	if err == nil || !strings.Contains(err.Error(), `unknown experiment "sprint"`) {
		t.Errorf("got %v, want an unknown experiment", err)
	}
}
