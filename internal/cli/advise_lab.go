package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tlsbench/tlsbench/internal/advise"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// calibrate runs, for each endpoint, the lab connect run its advice's
// CPU figures need (advise --lab ENGINE) and returns the results by
// endpoint. An endpoint it cannot calibrate (another engine, one the lab
// has no server of, a run that fails) keeps its advice without CPU
// figures, said in one line on stderr and in notes; only an
// interruption or a --lab of the wrong engine ends the command.
func calibrate(ctx context.Context, advised []result.Advised, f adviseFlags, stderr io.Writer) (map[string]*result.Result, []string, error) {
	o := advise.ReplayOptions{Trials: f.trials, Duration: f.duration}
	out := map[string]*result.Result{}
	var notes []string
	warn := func(server, why string) {
		line := fmt.Sprintf("--lab %s: no CPU figures for %s: %s", f.lab, server, why)
		fmt.Fprintln(stderr, "warning: "+line)
		notes = append(notes, line)
	}
	for _, a := range advised {
		server := a.Profile.Server
		c, err := advise.NewLabCalibration(a, f.lab, o)
		var nl *advise.NoLabError
		switch {
		case errors.As(err, &nl):
			warn(server, err.Error())
			continue
		case err != nil && len(advised) == 1:
			return nil, nil, usageError{err}
		case err != nil:
			warn(server, err.Error())
			continue
		}
		for _, left := range c.Left {
			notes = append(notes, fmt.Sprintf("--lab %s: %s: not calibrated: %s", f.lab, server, left))
		}
		if c.Empty() {
			continue
		}
		res, err := labRun(ctx, c.Spec, c.Pick, f.quiet, stderr, func(spec plan.Spec) string {
			return fmt.Sprintf("--lab: calibrating CPU per connection for %s on %s: %s", server, startsWhat(spec), calibrationTime(spec, c.Pick))
		}, nil)
		switch {
		case ctx.Err() != nil:
			return nil, nil, errInterrupted
		case err != nil:
			warn(server, "the calibration failed: "+oneLine(err.Error()))
			continue
		}
		out[server] = res
	}
	return out, notes, nil
}

// calibrationTime says how long a calibration's trials take: its cells
// (variants, per-conn settings, a pool) and trials, each of the trial's
// length, and the load they run at.
func calibrationTime(spec plan.Spec, pick func(plan.Experiment, plan.Variant) bool) string {
	cells, pools := 0, 0
	for _, e := range spec.Experiments {
		for _, v := range spec.Variants() {
			switch {
			case !pick(e, v):
			case e == plan.Pool:
				pools++
			default:
				cells += len(spec.PerConnections(e))
			}
		}
	}
	what := fmt.Sprintf("%d cells", cells)
	if pools > 0 {
		what += fmt.Sprintf(" and %d pooled", pools)
	}
	load := "closed loop, one connection at a time"
	if len(spec.Rates) > 0 {
		load = fmt.Sprintf("%s new connections", plan.RateLabel(spec.Rates[0]))
	}
	if len(spec.RTT) > 0 {
		load += fmt.Sprintf(" over an emulated %s RTT", spec.RTT[0])
	}
	total := time.Duration((cells+pools)*spec.Trials) * spec.Duration
	return fmt.Sprintf("%s × %d trials of %s at the capture's load (%s): about %s of trials, besides starting the server", what, spec.Trials, spec.Duration, load, total.Round(time.Second))
}
