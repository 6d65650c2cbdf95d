package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/advise"
	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/gate"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// confirm replays each endpoint's profile in the lab (advise --confirm)
// and fills its advice's measured figures. An engine the lab has no
// server of, or a replay that fails, leaves that endpoint's advice as
// predictions, said in one line on stderr and in the result; only an
// interruption ends the command. With --gate-abort the gates are judged
// before each replay and after each trial on the advice so far: the
// first that can no longer pass stops the replays, the trials run are
// kept; the gateStop returned says where (nil without --gate-abort).
func confirm(ctx context.Context, advised []result.Advised, f adviseFlags, gates []gate.Gate, stderr io.Writer) (*gateStop, error) {
	o := advise.ReplayOptions{Trials: f.trials, Duration: f.duration, Client: f.client}
	trialsCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := f.gate.stopper(gates, cancel)
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
			return nil, err
		}
		for _, r := range replays {
			if stop.on() {
				stop.judge("before the lab replay of "+a.Profile.Server, adviceSoFar(advised, i, nil, nil))
			}
			if stop.where() != "" {
				a.Replays = append(a.Replays, result.Replay{Error: "not replayed: --gate-abort stopped the replays " + stop.where()})
				continue
			}
			var after func(*result.Result, result.Trial)
			if stop != nil {
				after = func(res *result.Result, t result.Trial) {
					if stop.on() && len(res.Trials) < res.PlannedTrials {
						at := fmt.Sprintf("after trial %d of %d of the lab replay of %s (%s)", len(res.Trials), res.PlannedTrials, a.Profile.Server, trialName(t))
						stop.judge(at, adviceSoFar(advised, i, r, res))
					}
				}
			}
			res, err := labRun(trialsCtx, r.Spec, r.Pick, f.quiet, stderr, func(spec plan.Spec) string {
				return "--confirm: replaying the profile on " + startsWhat(spec)
			}, after)
			stopped := stop.where() != "" && res != nil
			switch {
			case ctx.Err() != nil:
				return nil, errInterrupted
			case err == nil, stopped: // stopped: the trials that ran
				err = r.Confirm(a, res)
			}
			if err != nil {
				info := r.Info()
				info.Error = oneLine(err.Error())
				a.Replays = append(a.Replays, info)
				fmt.Fprintf(stderr, "warning: --confirm %s: the lab replay failed, the advice stays predictions: %s\n", a.Profile.Server, info.Error)
				continue
			}
			if stopped {
				stoppedAt(a, res)
			}
		}
	}
	return stop, nil
}

// adviceSoFar is the quantities of the advice so far: advised, as the
// replays that finished confirmed it and, given replay r's result res,
// endpoint i's as r's trials so far confirm it (on a copy).
func adviceSoFar(advised []result.Advised, i int, r *advise.Replay, res *result.Result) []report.Quantity {
	list := advised
	if r != nil {
		a := advised[i]
		a.Advice, a.Replays = slices.Clone(a.Advice), slices.Clone(a.Replays)
		if r.Confirm(&a, res) == nil { // else no figure of the replay yet
			stoppedAt(&a, res)
			list = slices.Clone(advised)
			list[i] = a
		}
	}
	return report.Quantities(advise.Result(result.Capture{}, list))
}

// stoppedAt records in a's last replay, which res's trials confirmed
// before its end, the rounds it began: what its measured figures are
// over.
func stoppedAt(a *result.Advised, res *result.Result) {
	last := &a.Replays[len(a.Replays)-1]
	last.Trials = 0
	for _, t := range res.Trials {
		last.Trials = max(last.Trials, t.Round+1)
	}
}

// labRun runs a connect run of advise's (a replay, a calibration) against
// the lab server it starts, measuring the variants pick keeps, through
// bench's trial engine; say is its first progress line, after (if not
// nil) is told each trial as it finishes. The result holds the trials
// that ran, also when it returns an error.
func labRun(ctx context.Context, raw plan.Spec, pick func(plan.Experiment, plan.Variant) bool, quiet bool, stderr io.Writer, say func(plan.Spec) string, after func(*result.Result, result.Trial)) (*result.Result, error) {
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
	progress := func(p bench.Progress) {
		bars.update(p)
		if p.Trial != nil && after != nil {
			after(res, *p.Trial)
		}
	}
	err = bench.Execute(ctx, res, st, bench.Options{Pick: pick, Progress: progress, Warn: warn})
	bars.finish()
	return res, err
}
