package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Site is where a run measures, as the run needs it: how each variant
// reaches the target, and the servers tlsbench started for it (site.Site
// is one). Each stage reads a part of it.
type Site interface {
	Locator
	Meter
	Lifecycle
	Describer
}

// Locator is how a run reaches the target: the configs of its variants
// and Prepare read it.
type Locator interface {
	// Engine is the driver registry key.
	Engine() string
	// Locate finds the endpoint of a variant.
	Locate(v plan.Variant) (Endpoint, error)
	// ClientTLS is what every TLS variant's client trusts and offers.
	ClientTLS() tlsx.ClientOptions
}

// Meter is the server side's use of the machine, which the trials read.
type Meter interface {
	// CPU is the CPU time the server side has used so far;
	// ErrNoServerCPU when tlsbench did not start the server.
	CPU() (time.Duration, error)
	// Memory is what the server's processes hold in memory now, and
	// what that sums ("pss" or "rss"); ErrNoServerCPU when tlsbench did
	// not start the server.
	Memory() (bytes int64, kind string, err error)
}

// Lifecycle is what the trials ask of the servers and tunnels tlsbench
// started.
type Lifecycle interface {
	// Before readies the server for a variant before its check and each
	// of its trials (a lab server switches its certificate).
	Before(ctx context.Context, v plan.Variant) error
	// Alive reports why a server or tunnel tlsbench started is gone.
	Alive() error
}

// Describer is what the result records of the site.
type Describer interface {
	// Target describes what is measured, for the result.
	Target() result.Target
	// Notes are facts about the site a reader of the figures needs; read
	// after the trials (some are learned while they run).
	Notes() []string
	// Tunnels describes the tunnels variants went through.
	Tunnels() []result.Tunnel
}

// ErrNoServerCPU is a Site's CPU when tlsbench did not start the server:
// its CPU is not measured.
var ErrNoServerCPU = errors.New("the server's CPU is not measured: tlsbench did not start it")

// LoopbackSources is how many source addresses a run's connections to a
// loopback server spread over, where spec.Source asks for that.
const LoopbackSources = 64

// Stage is a step of a run, as a progress display shows it.
type Stage string

// The stages of a run, in order; a run without a lab server prepares no
// data, one without Options.Ceilings measures none.
const (
	StagePrepare  Stage = "prepare"  // a lab server is filled with the workload's data
	StageCheck    Stage = "check"    // one connection per variant is checked
	StageCeilings Stage = "ceilings" // the signing ceilings are measured
	StageTrials   Stage = "trials"   // the trials run
)

// Progress is how far a run is: the stage it is in, with what is done of
// its total (rows prepared, Total -1 while unknown; trials finished), and
// in StageTrials the trial just finished (nil as the stage begins and as
// a trial begins) or the TrialLabel of the one beginning (Next).
type Progress struct {
	Stage       Stage
	Done, Total int64
	Trial       *result.Trial
	Next        string
	// Stacks is, in StageCheck, how many of the variants run through a
	// client stack other than Go's: after its one connection, each holds
	// a pool of one open for StackHold while the server is asked what it
	// saw of it, where the server can say.
	Stacks int64
}

// Options are what a run takes besides its spec and site.
type Options struct {
	// Dialer is every variant's base dialer (see Configs); nil spreads
	// connections over LoopbackSources loopback source addresses.
	Dialer *netx.Dialer
	// Ceilings measures the signing ceilings of the keys of a run's
	// variants before the trials, with notes on what it could not
	// measure (lab.Ceilings); nil measures none.
	Ceilings func(ctx context.Context, spec plan.Spec, variants []plan.Variant) ([]result.Ceiling, []string, error)
	// Progress, when set, is told each stage as it begins and every
	// finished trial.
	Progress func(Progress)
	// NewDriver makes the drivers (Runner.NewDriver); nil is driver.New.
	NewDriver func(scheme string, cfg driver.Config) (driver.Driver, error)
	// StartClient starts the client stacks (Runner.StartClient); nil is
	// clientstack.Start.
	StartClient func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error)
	// Warn, when set, is told each warning as the run finds it (a variant
	// the server refused, left out); res.Warnings keeps them too.
	Warn func(string)
	// Pick, when set, keeps the cells of the spec's matrix the run
	// measures: a variant in an experiment (a lab replay measures one
	// variant per change, not the matrix's every combination, and a pool
	// of now's variant only); nil keeps them all. A variant no experiment
	// keeps is left out of the result.
	Pick func(plan.Experiment, plan.Variant) bool
}

// Execute runs the spec of res (made by plan.New) against s: the notes on
// how it measures, the data a lab server needs, the check of every
// variant, the ceilings, then every trial, interleaved. It fills res with
// the variants, the target, the notes, checks and ceilings, the planned
// trial count, each trial as it finishes (so that a caller that catches a
// panic still has them) and how the run ended (Ended, Interrupted, Error),
// also when it returns an error: an error in a trial keeps the trials
// finished before it, and says why the server is gone if it is.
func Execute(ctx context.Context, res *result.Result, s Site, o Options) (err error) {
	spec := res.Spec
	res.Variants = spec.Variants()
	res.Target = s.Target()
	defer func() { res.End(ctx, err) }()
	if o.Pick != nil {
		res.Variants = slices.DeleteFunc(res.Variants, func(v plan.Variant) bool {
			return !slices.ContainsFunc(spec.Experiments, func(e plan.Experiment) bool { return o.Pick(e, v) })
		})
		if len(res.Variants) == 0 {
			return errors.New("the run picks none of its variants")
		}
		plan.MarkBaseline(res.Variants)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	d := o.Dialer
	if d == nil {
		d = sourceDialer(spec, res.Target)
	}
	// A shard runs its share of the plan, in the plan's slots (schedule.go).
	r := &Runner{Spec: spec.Share(), Variants: res.Variants, Scheme: s.Engine(), Before: s.Before, NewDriver: o.NewDriver,
		StartClient: o.StartClient, Locate: s.Locate, Pick: o.Pick, slots: newSlots(spec)}
	r.Warn = func(w string) {
		res.Warnings = append(res.Warnings, w)
		if o.Warn != nil {
			o.Warn(w)
		}
	}
	defer func() { res.Notes = append(res.Notes, r.Notes...) }()
	defer func() { res.Shard = r.slots.shard() }()
	// Every client stack's process is stopped and reaped however the run
	// ends (an error, Ctrl-C); what they said of themselves is kept.
	defer func() {
		res.Clients = r.Clients()
		if cerr := r.Close(); err == nil && cerr != nil && ctx.Err() == nil {
			err = cerr
		}
	}()
	if _, err := s.CPU(); !errors.Is(err, ErrNoServerCPU) {
		r.ServerCPU = s.CPU
	}
	if _, _, err := s.Memory(); !errors.Is(err, ErrNoServerCPU) {
		r.ServerMemory = s.Memory
	}
	if r.Configs, err = Configs(spec, res.Variants, s.Locate, s.ClientTLS(), d); err != nil {
		return err
	}
	portNote := d.PortNote()
	if spec.Source == plan.SourceSpread && ipv6Target(spec.ParsedTarget()) {
		portNote = "ephemeral ports: the server's address is IPv6, whose loopback is one address (::1): --source spread has no source addresses to spread over there, and the kernel picks them"
	}
	res.Notes = append(res.Notes, portNote)
	for _, rtt := range spec.RTT {
		if n := d.WithRTT(rtt).RTTNote(); n != "" && spec.DialerRTT() && !slices.Contains(res.Notes, n) {
			res.Notes = append(res.Notes, n)
		}
		if rtt > 0 && spec.OtherClients() && spec.DialerRTT() {
			res.Notes = append(res.Notes, netx.RelayNote(rtt))
		}
	}
	if slices.Contains(spec.Experiments, plan.Connect) && (r.Scheme == "http" || r.Scheme == "builtin") {
		res.Notes = append(res.Notes, "connect: each request says Connection: close and the client reads until the server closes, so TIME_WAIT stays with the server")
		if slices.ContainsFunc(spec.PerConnections(plan.Connect), func(n int) bool { return n > 1 }) {
			res.Notes = append(res.Notes, "connect --per-conn N: the first N-1 requests of a connection keep it open (HTTP/1.1's default), the last asks for Connection: close")
		}
	}
	if spec.ParsedTarget().Lab != "" {
		if err := r.prepareData(ctx, progress); err != nil {
			return err
		}
	}
	var stacks int64
	for _, v := range res.Variants {
		if v.Client != "" {
			stacks++
		}
	}
	progress(Progress{Stage: StageCheck, Total: int64(len(res.Variants)), Stacks: stacks})
	res.Checks, err = r.Check(ctx)
	res.Variants = r.Variants
	for _, w := range r.LeftOut {
		res.Warnings = append(res.Warnings, w)
		if o.Warn != nil {
			o.Warn(w)
		}
	}
	if err != nil {
		return err
	}
	if o.Ceilings != nil {
		progress(Progress{Stage: StageCeilings})
		var notes []string
		if res.Ceilings, notes, err = o.Ceilings(ctx, spec, res.Variants); err != nil {
			return err
		}
		res.Notes = append(res.Notes, notes...)
	}

	res.PlannedTrials = r.Total()
	progress(Progress{Stage: StageTrials, Total: int64(res.PlannedTrials)})
	r.Begin = func(label string, done, total int) {
		progress(Progress{Stage: StageTrials, Done: int64(done), Total: int64(total), Next: label})
	}
	r.Done = func(t result.Trial, done, total int) {
		res.Trials = append(res.Trials, t)
		progress(Progress{Stage: StageTrials, Done: int64(done), Total: int64(total), Trial: &t})
	}
	err = r.Run(ctx)
	if err == nil && spec.Knee != nil {
		// A rate search stops where the SLO breaks: what it ran was all.
		res.PlannedTrials = len(res.Trials)
	}
	if err != nil && ctx.Err() == nil {
		// A server or intermediary that was killed closes its sockets
		// before it has exited: the run may fail first. Give it a moment
		// to be seen gone.
		gone := s.Alive()
		_, cpuErr := s.CPU() // ErrNoServerCPU: tlsbench started nothing to wait for
		for wait := 0; gone == nil && !errors.Is(cpuErr, ErrNoServerCPU) && wait < 10; wait++ {
			time.Sleep(100 * time.Millisecond)
			gone = s.Alive()
		}
		if gone != nil && !strings.Contains(err.Error(), gone.Error()) {
			err = fmt.Errorf("%w; %v", err, gone)
		}
	}
	res.Notes = append(res.Notes, s.Notes()...)
	res.Tunnels = s.Tunnels()
	return err
}

// prepareData fills a lab server with the data its workloads read,
// through the first variant's connection settings, over the bare link
// whatever RTT the run emulates.
func (r *Runner) prepareData(ctx context.Context, progress func(Progress)) error {
	// One server per Server of the variants (several when a run compares
	// lab servers), through the first variant of each.
	seen := map[string]bool{}
	for _, v := range r.Variants {
		if seen[v.Server] {
			continue
		}
		seen[v.Server] = true
		cfg := r.Configs[v.ID]
		cfg.Dialer = cfg.Dialer.WithRTT(0)
		d, err := r.newDriver(r.Scheme, cfg)
		if err != nil {
			return err
		}
		err = prepare(ctx, r.Spec, d, func(done, total int64) {
			progress(Progress{Stage: StagePrepare, Done: done, Total: total})
		})
		var pe *prepareError
		switch {
		case errors.Is(err, ErrNothingToPrepare):
			return nil
		case errors.As(err, &pe):
			return fmt.Errorf("preparing %d tables of %d rows: %w", r.Spec.Tables, r.Spec.Rows, pe.err)
		case err != nil:
			return err
		}
	}
	return nil
}

// ErrNothingToPrepare is Prepare's answer for an engine whose workloads
// read no data of tlsbench's (HTTP).
var ErrNothingToPrepare = errors.New("nothing to prepare for this engine")

// Prepare fills the server s locates with the data spec's workloads read
// (sysbench's sbtest tables, Redis keys, MongoDB's YCSB usertable),
// through spec's first variant, telling progress the rows done so far
// (first 0 of -1, as it begins). Its own failure is wrapped as "preparing
// TARGET: ...".
func Prepare(ctx context.Context, spec plan.Spec, s Locator, progress func(done, total int64)) error {
	v := spec.Variants()[0]
	cfgs, err := Configs(spec, []plan.Variant{v}, s.Locate, s.ClientTLS(), &netx.Dialer{})
	if err != nil {
		return err
	}
	d, err := driver.New(s.Engine(), cfgs[v.ID])
	if err != nil {
		return err
	}
	err = prepare(ctx, spec, d, progress)
	var pe *prepareError
	if errors.As(err, &pe) {
		return fmt.Errorf("preparing %s: %w", spec.Target, pe.err)
	}
	return err
}

// prepareError is a Preparer's own failure, apart from not getting to it.
type prepareError struct{ err error }

func (e *prepareError) Error() string { return e.err.Error() }
func (e *prepareError) Unwrap() error { return e.err }

// prepare fills the server behind d, if its engine reads data of
// tlsbench's: ErrNothingToPrepare if not, a *prepareError if it fails.
func prepare(ctx context.Context, spec plan.Spec, d driver.Driver, progress func(done, total int64)) error {
	p, ok := d.(driver.Preparer)
	if !ok {
		return ErrNothingToPrepare
	}
	progress(0, -1)
	if err := p.Prepare(ctx, spec.Tables, spec.Rows, progress); err != nil {
		return &prepareError{err}
	}
	return nil
}

// ipv6Target reports whether a URL target names an IPv6 address ([::1]),
// where the source addresses of --source spread (127.0.1.x) do not apply.
func ipv6Target(t plan.Target) bool {
	host, _, err := net.SplitHostPort(t.Host)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is6() && !a.Is4In6()
}

// sourceDialer is the base dialer of spec.Source: spread over
// LoopbackSources for a loopback server (auto: only a server tlsbench
// started, which accepts them; a user's server may allow 127.0.0.1 only, as
// Debian's stock pg_hba.conf does), one address to bind, or the kernel's.
func sourceDialer(spec plan.Spec, t result.Target) *netx.Dialer {
	switch spec.Source {
	case plan.SourceSpread:
		return &netx.Dialer{Sources: netx.LoopbackSources(LoopbackSources)}
	case plan.SourceAuto, "":
		if t.Server != nil {
			return &netx.Dialer{Sources: netx.LoopbackSources(LoopbackSources)}
		}
		return &netx.Dialer{}
	}
	if a := spec.SourceAddr(); a.IsValid() {
		return &netx.Dialer{Bind: a}
	}
	return &netx.Dialer{}
}
