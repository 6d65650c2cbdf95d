package bench

import (
	"context"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// trial is one trial as TrialAt hands it to its experiment.
type trial struct {
	v     plan.Variant
	c, n  int     // concurrency; operations per connection
	rate  float64 // arrivals per second; 0 is the closed loop
	where string  // the trial's name in errors, and its schedule's seed
	// d is the variant's driver, loops its whole-client loops: what the
	// experiment's open set.
	d     driver.Driver
	loops driver.ClientLoops
}

// experiment is how the Runner runs one experiment's trials, registered by
// the experiment's own file as plan's --via kinds are.
type experiment struct {
	// perConn: the experiment runs ⟨per_conn⟩ operations per connection
	// (connect); the others one.
	perConn bool
	// alone: it runs one client at a time, so a trial's name has no c=.
	alone bool
	// open sets the trial's driver, before the server is readied for it.
	open func(r *Runner, t *trial) error
	// run runs the trial.
	run func(ctx context.Context, r *Runner, t *trial) (result.Trial, error)
}

// experiments holds the registered experiments by name.
var experiments = map[plan.Experiment]experiment{}

// newConns opens a driver that opens a connection for every n operations.
func newConns(r *Runner, t *trial) (err error) {
	t.d, err = r.driver(t.v, false, t.n)
	return err
}

// keptConns opens a driver whose sessions run many operations each.
func keptConns(r *Runner, t *trial) (err error) {
	t.d, err = r.driver(t.v, true, 1)
	return err
}
