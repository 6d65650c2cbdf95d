package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/export"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// runOutput is where a run's result goes, whether the run checks its
// phases against a capture of its own connections (connect --wire), and
// whether it keeps its progress to itself (--quiet).
type runOutput struct {
	path  string
	wire  bool
	quiet bool
	gate  gateFlags
	// export is where the run's series go live (--otlp,
	// --prometheus-push; export.go).
	export export.Config
}

// run measures raw against its target, saves the result (also the part that
// finished when interrupted or failed) and prints the tables.
func run(ctx context.Context, raw plan.Spec, o runOutput, argv []string, stdout, stderr io.Writer) (err error) {
	// Reading the spec can take a while (a long script): a signal ends it.
	spec, err := plan.NewContext(ctx, raw)
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case err != nil:
		return err
	}
	gates, err := o.gate.forRun(spec)
	if err != nil {
		return err
	}
	out, err := openResultFile(o.path)
	if err != nil {
		return err
	}
	defer out.discard()
	res := newResult(argv)
	res.Spec = spec
	feed, err := startExport(ctx, o.export, res)
	if err != nil {
		return err
	}
	defer feed.Close() // after endExport, nothing
	// A panic (a bug) still saves the finished trials; the servers are
	// stopped by the deferred stop below, which runs before this.
	defer func() {
		if p := recover(); p != nil {
			perr := &bench.PanicError{Value: p, Stack: debug.Stack()}
			res.Error, res.Ended = perr.Error(), time.Now().UTC()
			err = perr
			if len(res.Trials) > 0 {
				if where, _, serr := out.save(res, stdout, stderr); where != "" {
					err = fmt.Errorf("%w (the %d finished trials are in %s)", perr, len(res.Trials), where)
				} else {
					err = fmt.Errorf("%w; %v", perr, serr)
				}
			}
		}
	}()

	if site.StartsServers(spec) {
		sweepStale(stderr)
	}
	if res.Env.CPUs, err = site.PinCPUs(spec); err != nil {
		return err
	}
	bars := newRunProgress(stderr, o.quiet, fillUnit(spec))
	starts := startsWhat(spec)
	if starts != "" {
		bars.printf("starting %s", starts)
	}
	opened := time.Now()
	st, err := site.Open(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	defer st.Stop()
	if starts != "" {
		bars.printf("started in %.1f s%s", time.Since(opened).Seconds(), serversOf(st.Target()))
	}
	for _, w := range st.Warnings() {
		fmt.Fprintln(stderr, "warning: "+w)
		res.Warnings = append(res.Warnings, w)
	}
	var wc *wire.SelfCheck
	if o.wire {
		if wc, err = startWireCheck(ctx, spec, st); err != nil {
			return err
		}
		defer wc.Remove()
	}
	// A warning comes at the check, when no bar is drawn.
	warn := func(w string) { fmt.Fprintln(stderr, "warning: "+w) }
	// --gate-abort cancels the trials, not the run: what finished is
	// judged and saved as a run that ended early.
	trialsCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := o.gate.stopper(gates, cancel)
	progress := func(p bench.Progress) {
		bars.update(p)
		if p.Trial != nil {
			feed.Trial(*p.Trial) // handed over: the export is not the trial's time
			stop.afterTrial(res, *p.Trial)
		}
	}
	runErr := bench.Execute(trialsCtx, res, st, bench.Options{Ceilings: ceilings, Progress: progress, Warn: warn})
	bars.finish()
	runErr = stop.ended(ctx, res, runErr)
	if len(res.Trials) > 0 {
		recordVerdicts(gates, res)
	}
	var wireErr error // reported once the result is saved
	if wc != nil && len(res.Trials) > 0 {
		if wireErr = wc.Finish(res); wireErr != nil {
			wireErr = fmt.Errorf("--wire: %w", wireErr)
		}
	}
	var where string
	var pageErr, saveErr error
	if len(res.Trials) > 0 {
		where, pageErr, saveErr = out.save(res, stdout, stderr)
	}
	endExport(ctx, feed, res, stderr)
	switch {
	case saveErr != nil && runErr != nil:
		return fmt.Errorf("%w; %v", runErr, saveErr)
	case saveErr != nil:
		return saveErr
	case res.Interrupted:
		return errInterrupted
	case runErr != nil:
		if len(res.Trials) > 0 {
			return fmt.Errorf("%w (the %d finished trials are in %s)", runErr, len(res.Trials), where)
		}
		return runErr
	case wireErr != nil:
		return wireErr
	case pageErr != nil:
		return pageErr
	}
	return o.gate.finish(res.Gates, suiteName(spec), res.Started.Format(time.RFC3339), stop)
}

// newResult starts the result of a run: tool, machine, command line
// (credentials removed), start time.
func newResult(argv []string) *result.Result {
	res := result.New()
	res.Tool = result.Tool{Name: "tlsbench", Version: Version, Go: runtime.Version(), TLSLibrary: "Go crypto/tls " + runtime.Version()}
	res.Env = bench.Environment()
	res.Command = append([]string{"tlsbench"}, redactArgs(argv)...)
	res.Started = time.Now().UTC()
	return res
}

// redactArgs removes secrets from tlsbench's arguments (without the
// program's name), one string for each (see plan.RedactArgs).
func redactArgs(args []string) []string {
	return plan.RedactArgs(append([]string{"tlsbench"}, args...))[1:]
}

// sweepStale removes the lab directories (keys, passwords) and servers a
// tlsbench that did not stop cleanly left behind, and says so. The lab
// sweeps again at every start; this one is for the note.
func sweepStale(stderr io.Writer) {
	note, err := lab.SweepStale()
	if note != "" {
		fmt.Fprintln(stderr, "note: "+note)
	}
	if err != nil {
		fmt.Fprintln(stderr, "note: looking for lab directories left behind: "+oneLine(err.Error()))
	}
}

// startsWhat says what servers a run of spec starts ("the lab postgres
// server (key rsa2048) and the ssh tunnel"), "" for none.
func startsWhat(spec plan.Spec) string {
	t := spec.ParsedTarget()
	var what []string
	keys := ""
	if len(spec.Keys) > 0 {
		keys = " (keys " + strings.Join(spec.Keys, ", ") + ")"
	}
	switch {
	case t.Builtin:
		what = append(what, "the built-in server"+keys)
	case len(t.Labs()) > 1:
		what = append(what, "the lab "+strings.Join(t.Labs(), " and ")+" servers"+keys)
	case t.Lab != "":
		what = append(what, "the lab "+t.Lab+" server"+keys)
	}
	for _, r := range spec.Routes() {
		if r.StartsServer() {
			what = append(what, "the "+r.Label()+" path")
		}
	}
	return strings.Join(what, " and ")
}

// serversOf names the servers a run started, as the result records them:
// ": PostgreSQL 15.18 ...".
func serversOf(t result.Target) string {
	servers := t.Servers
	if len(servers) == 0 && t.Server != nil {
		servers = []result.Server{*t.Server}
	}
	var names []string
	for _, s := range servers {
		names = append(names, strings.TrimSpace(s.Software+" "+s.Version))
	}
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, ", ")
}

// fillUnit is what a fill of spec's engine counts.
func fillUnit(spec plan.Spec) string {
	switch spec.ParsedTarget().Engine() {
	case "redis":
		return "keys"
	case "mongodb":
		return "documents"
	}
	return "rows"
}
