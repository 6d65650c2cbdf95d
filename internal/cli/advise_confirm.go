package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tlsbench/tlsbench/internal/advise"
	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// confirm replays each endpoint's profile in the lab (advise --confirm)
// and fills its advice's measured figures. An engine the lab has no
// server of, or a replay that fails, leaves that endpoint's advice as
// predictions, said in one line on stderr and in the result; only an
// interruption ends the command.
func confirm(ctx context.Context, advised []result.Advised, f adviseFlags, stderr io.Writer) error {
	o := advise.ReplayOptions{Trials: f.trials, Duration: f.duration, Client: f.client}
	for i := range advised {
		a := &advised[i]
		replays, err := advise.NewReplays(*a, o)
		var nl *advise.NoLabError
		switch {
		case errors.As(err, &nl):
			fmt.Fprintf(stderr, "warning: --confirm %s: %v\n", a.Profile.Server, err)
			a.Replays = append(a.Replays, result.Replay{Error: err.Error()})
			continue
		case err != nil:
			return err
		}
		for _, r := range replays {
			res, err := replay(ctx, r, f.quiet, stderr)
			switch {
			case ctx.Err() != nil:
				return errInterrupted
			case err == nil:
				err = r.Confirm(a, res)
			}
			if err != nil {
				info := r.Info()
				info.Error = oneLine(err.Error())
				a.Replays = append(a.Replays, info)
				fmt.Fprintf(stderr, "warning: --confirm %s: the lab replay failed, the advice stays predictions: %s\n", a.Profile.Server, info.Error)
			}
		}
	}
	return nil
}

// replay runs one replay's connect run against the lab server it starts,
// through bench's trial engine, and returns its result.
func replay(ctx context.Context, r *advise.Replay, quiet bool, stderr io.Writer) (*result.Result, error) {
	return labRun(ctx, r.Spec, r.Pick, quiet, stderr, func(spec plan.Spec) string {
		return "--confirm: replaying the profile on " + startsWhat(spec)
	})
}

// labRun runs a connect run of advise's (a replay, a calibration) against
// the lab server it starts, measuring the variants pick keeps, through
// bench's trial engine; say is its first progress line.
func labRun(ctx context.Context, raw plan.Spec, pick func(plan.Variant) bool, quiet bool, stderr io.Writer, say func(plan.Spec) string) (*result.Result, error) {
	spec, err := plan.NewContext(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("the lab run's plan: %w", err)
	}
	sweepStale(stderr)
	bars := newRunProgress(stderr, quiet, fillUnit(spec))
	bars.printf("%s", say(spec))
	st, err := site.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer st.Stop()
	res := result.New()
	res.Spec, res.Started = spec, time.Now().UTC() // the calibration says when it ran
	warn := func(w string) { fmt.Fprintln(stderr, "warning: advise: "+w) }
	err = bench.Execute(ctx, res, st, bench.Options{Pick: pick, Progress: bars.update, Warn: warn})
	bars.finish()
	return res, err
}
