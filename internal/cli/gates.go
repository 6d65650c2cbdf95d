package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/gate"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// gateFlags are --gate, --gates, --gate-abort, --junit and --summary-md:
// the gates a run or a comparison is judged by, and where the verdicts go
// besides the report.
type gateFlags struct {
	exprs          []string
	file           string
	abort          bool
	junit, summary string
}

// gateFailed ends a run or a comparison whose gates failed: exit 3.
type gateFailed struct {
	failed, total int
	first         result.Gate
	// stopped is where --gate-abort stopped the run ("after trial 2 of
	// 9"), "" if it did not.
	stopped string
}

func (e gateFailed) Error() string {
	gates := "gates"
	if e.total == 1 {
		gates = "gate"
	}
	msg := fmt.Sprintf("%d of %d %s failed: %s (see the gates table)", e.failed, e.total, gates, e.first.Name)
	if e.stopped != "" {
		msg += "; --gate-abort stopped the run " + e.stopped
	}
	return msg
}

// errGateAbort is the cause of a run stopped by --gate-abort.
var errGateAbort = errors.New("a gate can no longer pass (--gate-abort)")

// register adds the gate flags of compare, replicate and advise (the run
// commands take them from the options table); gate is --gate's usage,
// abort --gate-abort's ("" for a command with no trials to stop).
func (f *gateFlags) register(cmd *cobra.Command, gate, abort string) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.exprs, "gate", nil, gate)
	fs.StringVar(&f.file, "gates", "", "a YAML file of gates: a list of expressions or {name: NAME, gate: EXPR}")
	if abort != "" {
		fs.BoolVar(&f.abort, "gate-abort", false, abort)
	}
	fs.StringVar(&f.junit, "junit", "", "write the gates' verdicts as JUnit XML to FILE")
	fs.StringVar(&f.summary, "summary-md", "", "write the gates' verdicts as a Markdown table to FILE (e.g. $GITHUB_STEP_SUMMARY)")
}

// parse reads the gates given, and checks that their output files can be
// written: bad input is a usage error, before anything runs.
func (f gateFlags) parse() ([]gate.Gate, error) {
	var gs []gate.Gate
	for _, e := range f.exprs {
		g, err := gate.Parse(e)
		if err != nil {
			return nil, usageError{err}
		}
		gs = append(gs, g)
	}
	if f.file != "" {
		more, err := gate.ReadFile(f.file)
		if err != nil {
			return nil, usageError{err}
		}
		gs = append(gs, more...)
	}
	for _, out := range [][2]string{{"--junit", f.junit}, {"--summary-md", f.summary}} {
		flag, path := out[0], out[1]
		if path == "" {
			continue
		}
		if len(gs) == 0 {
			return nil, usageError{fmt.Errorf("%s: there are no gates to report: give --gate EXPR or --gates FILE", flag)}
		}
		if err := result.CheckOutput(path); err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", flag, err)}
		}
	}
	if f.abort && len(gs) == 0 {
		return nil, usageError{errors.New("--gate-abort: there are no gates to stop at: give --gate EXPR or --gates FILE")}
	}
	return gs, nil
}

// checked parses the gates and checks them with check (gate.Check or
// its kin): a gate the run cannot judge is a usage error.
func (f gateFlags) checked(check func([]gate.Gate) ([]gate.Gate, error)) ([]gate.Gate, error) {
	gs, err := f.parse()
	if err != nil || len(gs) == 0 {
		return nil, err
	}
	if gs, err = check(gs); err != nil {
		return nil, usageError{err}
	}
	return gs, nil
}

// forRun parses the gates and checks them against the run's plan.
func (f gateFlags) forRun(spec plan.Spec) ([]gate.Gate, error) {
	return f.checked(func(gs []gate.Gate) ([]gate.Gate, error) { return gate.Check(gs, spec) })
}

// forReplicate parses the gates and checks them against a replicate
// run's plan.
func (f gateFlags) forReplicate(p plan.Replication) ([]gate.Gate, error) {
	return f.checked(func(gs []gate.Gate) ([]gate.Gate, error) { return gate.CheckReplicate(gs, p) })
}

// forAdvise parses the gates and checks them against what advise
// measures: with --confirm, replays of trials trials each.
func (f gateFlags) forAdvise(confirm bool, trials int) ([]gate.Gate, error) {
	return f.checked(func(gs []gate.Gate) ([]gate.Gate, error) { return gate.CheckAdvise(gs, confirm, trials) })
}

// recordVerdicts records the gates' verdicts on res in it, from the report
// model's quantities.
func recordVerdicts(gs []gate.Gate, res *result.Result) {
	if len(gs) > 0 {
		res.Gates = gate.Evaluate(gs, report.Quantities(res))
	}
}

// gateStop is --gate-abort at work in a run: after each trial it judges
// the gates on the report model of the trials so far and, at the first
// that can no longer pass (gate.CannotPass), cancels the trials (cause
// errGateAbort) and keeps what it said. Nil without --gate-abort.
type gateStop struct {
	gates  []gate.Gate
	cancel context.CancelCauseFunc
	// at is where it stopped ("after trial 2 of 9 (...)"), why the line
	// that says which gate and how; "" while the run goes on.
	at, why string
}

// stopper is the run's gateStop, nil without --gate-abort; cancel ends
// the run's trials, not the run.
func (f gateFlags) stopper(gs []gate.Gate, cancel context.CancelCauseFunc) *gateStop {
	if !f.abort || len(gs) == 0 {
		return nil
	}
	return &gateStop{gates: gs, cancel: cancel}
}

// on reports whether s still judges: --gate-abort given, not yet stopped.
func (s *gateStop) on() bool { return s != nil && s.why == "" }

// afterTrial judges the gates on res after its trial t, but its last:
// then nothing is left to stop.
func (s *gateStop) afterTrial(res *result.Result, t result.Trial) {
	if s.on() && len(res.Trials) < res.PlannedTrials {
		s.judge(fmt.Sprintf("after trial %d of %d (%s)", len(res.Trials), res.PlannedTrials, trialName(t)), report.Quantities(res))
	}
}

// judge judges the gates on qs, the quantities of the trials so far; at
// says where the run is ("after trial 2 of 9 (...)").
func (s *gateStop) judge(at string, qs []report.Quantity) {
	v, ok := gate.CannotPass(s.gates, qs)
	if !ok {
		return
	}
	how := gate.Reading(v)
	if v.Interval != "" {
		how += "; the whole interval is past the bound"
	}
	s.at = at
	s.why = fmt.Sprintf("stopped by --gate-abort %s: %s can no longer pass (%s)", at, v.Name, how)
	s.cancel(errGateAbort)
}

// ended makes a run that s stopped one that ended early, not an
// interrupted or failed one: its trials are judged and saved, with the
// note that says where it stopped; ctx is the run's, which a signal
// ends. Otherwise it returns runErr.
func (s *gateStop) ended(ctx context.Context, res *result.Result, runErr error) error {
	if s == nil || s.why == "" || ctx.Err() != nil {
		return runErr
	}
	res.Interrupted = false
	res.Notes = append(res.Notes, s.why)
	return nil
}

// where is where s stopped the run, "" if it did not.
func (s *gateStop) where() string {
	if s == nil {
		return ""
	}
	return s.at
}

// trialName names a trial in a gate's stop line: "connect tls1.3
// rsa2048 c=1, round 2", "replicate tls1.3 async c=4 at 200/s, round 1".
func trialName(t result.Trial) string {
	name := fmt.Sprintf("%s %s c=%d", t.Experiment, t.Variant, t.Concurrency)
	if t.Open != nil {
		name += " at " + plan.RateLabel(t.Open.Offered)
	}
	return fmt.Sprintf("%s, round %d", name, t.Round+1)
}

// finish writes the verdicts' files and says whether a gate failed, and
// where --gate-abort stopped the run (stop, nil if it did not).
func (f gateFlags) finish(vs []result.Gate, suite, started string, stop *gateStop) error {
	if len(vs) == 0 {
		return nil
	}
	if f.junit != "" {
		data, err := gate.JUnit(vs, suite, started)
		if err == nil {
			err = result.WriteFile(f.junit, data, "the JUnit report")
		}
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if f.summary != "" {
		if err := appendFile(f.summary, gate.Markdown(vs, suite)); err != nil {
			return fmt.Errorf("--summary-md: %w", err)
		}
	}
	if n := gate.Failed(vs); n > 0 {
		e := gateFailed{failed: n, total: len(vs), stopped: stop.where()}
		for _, v := range vs {
			if !v.Pass {
				e.first = v
				break
			}
		}
		return e
	}
	return nil
}

// appendFile adds data to path, as CI step summaries are written: several
// steps append to one file.
func appendFile(path string, data []byte) error {
	fl, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := fl.Write(data); err != nil {
		fl.Close()
		return err
	}
	return fl.Close()
}

// suiteName names a run's JUnit suite: "tlsbench connect".
func suiteName(spec plan.Spec) string {
	names := make([]string, len(spec.Experiments))
	for i, e := range spec.Experiments {
		names[i] = string(e)
	}
	return strings.TrimSpace("tlsbench " + strings.Join(names, " "))
}
