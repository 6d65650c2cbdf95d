package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// loopbackSources is how many source addresses connect loops spread over.
const loopbackSources = 64

// run measures raw against its target, saves the result (also the part that
// finished when interrupted or failed) and prints the tables.
func run(ctx context.Context, raw plan.Spec, output string, argv []string, stdout, stderr io.Writer) (err error) {
	spec, err := plan.New(raw)
	if err != nil {
		return err
	}
	out, err := openResultFile(output)
	if err != nil {
		return err
	}
	defer out.discard()
	res := newResult(argv)
	res.Spec = spec
	res.Variants = spec.Variants()
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
	st, err := site.Open(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	defer st.Stop()
	res.Target = st.Target()
	dialer := &netx.Dialer{Sources: netx.LoopbackSources(loopbackSources)}
	runner := &bench.Runner{Spec: spec, Variants: res.Variants, Scheme: st.Engine(), Before: st.Before}
	if _, err := st.CPU(); !errors.Is(err, bench.ErrNoServerCPU) {
		runner.ServerCPU = st.CPU
	}
	runner.Configs, err = bench.Configs(spec, res.Variants, st.Locate, st.ClientTLS(), dialer)
	if err != nil {
		return err
	}
	res.Notes = append(res.Notes, dialer.PortNote())
	for _, rtt := range spec.RTT {
		if n := dialer.WithRTT(rtt).RTTNote(); n != "" && !slices.Contains(res.Notes, n) {
			res.Notes = append(res.Notes, n)
		}
	}
	if slices.Contains(spec.Experiments, plan.Connect) && (st.Engine() == "http" || st.Engine() == "builtin") {
		res.Notes = append(res.Notes, "connect: each request says Connection: close and the client reads until the server closes, so TIME_WAIT stays with the server")
	}
	if strings.HasPrefix(spec.Target, "lab:") {
		if err := prepareData(ctx, runner, spec, stderr); err != nil {
			if ctx.Err() != nil {
				return errInterrupted
			}
			return err
		}
	}
	res.Checks, err = runner.Check(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	var ceilingNotes []string
	if res.Ceilings, ceilingNotes, err = ceilings(ctx, spec, res.Variants); err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	res.Notes = append(res.Notes, ceilingNotes...)

	res.PlannedTrials = runner.Total()
	bar := newProgress(stderr, res.PlannedTrials)
	runner.Done = func(t result.Trial, done, total int) {
		res.Trials = append(res.Trials, t)
		bar.step(t, done)
	}
	runErr := runner.Run(ctx)
	bar.finish()
	res.Ended = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		res.Interrupted = true
	case runErr != nil:
		if gone := st.Alive(); gone != nil && !strings.Contains(runErr.Error(), gone.Error()) {
			runErr = fmt.Errorf("%w; %v", runErr, gone)
		}
		res.Error = runErr.Error()
	}
	res.Notes = append(res.Notes, st.Notes()...)
	res.Tunnels = st.Tunnels()
	var where string
	var pageErr, saveErr error
	if len(res.Trials) > 0 {
		where, pageErr, saveErr = out.save(res, stdout, stderr)
	}
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
	}
	return pageErr
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

// redactArgs removes secrets from a command line: passwords and credential
// parameters in whatever form (see plan.Redact), also in --flag=VALUE form.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		prefix, val := "", a
		if k := strings.Index(a, "="); strings.HasPrefix(a, "-") && k > 0 {
			prefix, val = a[:k+1], a[k+1:]
		}
		// Any argument may hold a secret: a URL, a libpq key=value
		// string, a DSN, a --via ssh:// URL.
		out[i] = prefix + plan.Redact(val)
	}
	return out
}

// prepareData fills a lab server with the sbtest data its workloads read,
// through the first variant's connection settings.
func prepareData(ctx context.Context, runner *bench.Runner, spec plan.Spec, stderr io.Writer) error {
	cfg := runner.Configs[runner.Variants[0].ID]
	// The data goes in over the bare link, whatever RTT the run emulates.
	cfg.Dialer = cfg.Dialer.WithRTT(0)
	d, err := driver.New(runner.Scheme, cfg)
	if err != nil {
		return err
	}
	p, ok := d.(driver.Preparer)
	if !ok {
		return nil
	}
	bar := newCountBar(stderr, "preparing data")
	defer bar.finish()
	if err := p.Prepare(ctx, spec.Tables, spec.Rows, bar.set); err != nil {
		return fmt.Errorf("preparing %d tables of %d rows: %w", spec.Tables, spec.Rows, err)
	}
	return nil
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
