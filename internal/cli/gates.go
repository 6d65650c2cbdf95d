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
}

func (e gateFailed) Error() string {
	gates := "gates"
	if e.total == 1 {
		gates = "gate"
	}
	return fmt.Sprintf("%d of %d %s failed: %s (see the gates table)", e.failed, e.total, gates, e.first.Name)
}

// errGateAbort is the cause of a run stopped by --gate-abort.
var errGateAbort = errors.New("a gate failed (--gate-abort)")

// register adds the gate flags of compare, replicate and advise (the run
// commands take them from the options table); gate is --gate's usage.
func (f *gateFlags) register(cmd *cobra.Command, gate string) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.exprs, "gate", nil, gate)
	fs.StringVar(&f.file, "gates", "", "a YAML file of gates: a list of expressions or {name: NAME, gate: EXPR}")
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

// abortWhen wraps a run's progress so that, with --gate-abort, the run
// is cancelled (cause errGateAbort) after the first trial at which a gate
// fails on the trials so far; gates without a figure yet (a cell not
// measured, no interval) wait.
func (f gateFlags) abortWhen(gs []gate.Gate, res *result.Result, cancel context.CancelCauseFunc) func() {
	if !f.abort || len(gs) == 0 {
		return func() {}
	}
	return func() {
		for _, v := range gate.Evaluate(gs, report.Quantities(res)) {
			if !v.Pass && v.Why == "" {
				cancel(errGateAbort)
				return
			}
		}
	}
}

// finish writes the verdicts' files and says whether a gate failed.
func (f gateFlags) finish(vs []result.Gate, suite, started string) error {
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
		e := gateFailed{failed: n, total: len(vs)}
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
