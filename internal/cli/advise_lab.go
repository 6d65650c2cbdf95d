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

// calibrationTime says how long a calibration's trials take: its
// variants, per-conn settings and trials, each of the trial's length.
func calibrationTime(spec plan.Spec, pick func(plan.Variant) bool) string {
	n := 0
	for _, v := range spec.Variants() {
		if pick(v) {
			n++
		}
	}
	cells := n * max(1, len(spec.PerConn))
	total := time.Duration(cells*spec.Trials) * spec.Duration
	return fmt.Sprintf("%d variants × %d per-conn × %d trials of %s: about %s of trials, besides starting the server", n, max(1, len(spec.PerConn)), spec.Trials, spec.Duration, total.Round(time.Second))
}
