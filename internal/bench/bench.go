// Package bench is the one trial engine: every experiment (connect, pool,
// stream, storm, the MongoDB seed's loops; each registers itself), closed
// loops of workers and open loops of arrivals, trials and the interleaving
// of variants, the Go runtime fitted to each trial (tune.go), checks, and
// the run pipeline that turns a spec and a site into a result.
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/script"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Runner runs every trial of a Spec against one target.
type Runner struct {
	Spec     plan.Spec
	Variants []plan.Variant
	Scheme   string                   // driver registry key
	Configs  map[string]driver.Config // by Variant.ID
	// ServerCPU reads the server's CPU time, when tlsbench runs the server.
	ServerCPU func() (time.Duration, error)
	// ServerMemory reads the memory of the server's processes, when
	// tlsbench runs the server (see storm.go).
	ServerMemory func() (bytes int64, kind string, err error)
	// Before, when set, readies the server for a variant before its check
	// and each of its trials (a lab server switches its certificate).
	Before func(ctx context.Context, v plan.Variant) error
	// Begin, when set, is called as a trial begins, with its TrialLabel
	// and the trials finished so far; Done after every finished trial,
	// with the progress so far.
	Begin func(label string, done, total int)
	Done  func(t result.Trial, done, total int)
	// NewDriver makes the driver of a variant; nil is driver.New. Tests of
	// the Runner's own logic give it a stand-in.
	NewDriver func(scheme string, cfg driver.Config) (driver.Driver, error)
	// StartClient starts the client of a variant whose Client is a stack
	// other than Go's (stacks.go); nil is clientstack.Start. Tests of the
	// Runner's own logic give it a stand-in program.
	StartClient func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error)
	// Locate finds a variant's endpoint again, for what a client stack
	// reads from files (the lab's CA); nil: the spec's CA file.
	Locate Locate
	// LeftOut says, one line each, which variants Check left out: those
	// the server refused (driver.ErrRefused) where Spec.TLSByDefault, not
	// asked for by name.
	LeftOut []string
	// Warn, when set, is told what a run finds wrong that the user should
	// see though it goes on: a client stack whose connections the server
	// counted otherwise than the stack reported (stackcount.go).
	Warn func(string)
	// Notes are facts about how the trials were done that a reader of
	// the figures needs, each once.
	Notes []string
	// Pick, when set, keeps the cells the run measures: a variant in an
	// experiment (Options.Pick); nil runs every variant in every one.
	Pick func(plan.Experiment, plan.Variant) bool
	// Untuned leaves the Go runtime as it is (tune.go): no GOMAXPROCS
	// fitted to a trial, no collector held off in its measured span, no
	// probe of a pool's wait modes. Those settings are process-wide and
	// serve the figures; tests of the Runner's logic turn them off.
	Untuned bool

	drivers map[driverKey]driver.Driver
	// stacks are the client stacks the variants with a Client run through
	// (stacks.go); Close stops them.
	stacks stacks

	// Open loops (rate.go): trials run so far, for their schedules'
	// seeds, and a test's view of every intended start.
	openTrials int
	arrived    func(at time.Time)

	// slots is a shard's schedule (schedule.go); nil runs at once.
	slots *slots
}

type driverKey struct {
	variant string
	reuse   bool
	perConn int
}

// Total is the number of trials Run will run.
func (r *Runner) Total() int {
	cells := 0
	for _, e := range r.Spec.Experiments {
		cells += len(r.Spec.PerConnections(e)) * len(r.Spec.RatesFor(e)) * len(r.Spec.ConcurrencyFor(e)) * len(r.variants(e))
	}
	if r.Spec.Knee != nil { // at most: the search stops where the SLO breaks
		return 2 * cells * len(r.Spec.Knee.Steps()) // a step over the SLO runs twice
	}
	return r.Spec.Trials * cells
}

// variants are those the run measures in experiment e (Pick).
func (r *Runner) variants(e plan.Experiment) []plan.Variant {
	if r.Pick == nil {
		return r.Variants
	}
	return slices.DeleteFunc(slices.Clone(r.Variants), func(v plan.Variant) bool { return !r.Pick(e, v) })
}

// Run runs all trials, variants interleaved within each round (A B C A B C
// ...) so that drift of the machine hits every variant alike. It stops at
// the first trial that cannot run; trials already done were passed to Done.
func (r *Runner) Run(ctx context.Context) error {
	if r.Spec.Knee != nil {
		return r.knee(ctx)
	}
	total, done := r.Total(), 0
	for round := 0; round < r.Spec.Trials; round++ {
		for _, e := range r.Spec.Experiments {
			for _, n := range r.Spec.PerConnections(e) {
				for _, rate := range r.Spec.RatesFor(e) {
					for _, c := range r.Spec.ConcurrencyFor(e) {
						for _, v := range r.variants(e) {
							if err := r.slots.wait(ctx, e); err != nil {
								return err
							}
							r.begin(e, v, c, n, rate, done, total)
							t, err := r.TrialAt(ctx, e, v, c, n, rate)
							r.slots.end()
							if err != nil && !Kept(err) {
								return err
							}
							t.Round = round
							done++
							if r.Done != nil {
								r.Done(t, done, total)
							}
							if err != nil {
								return err // kept, and the run ends here
							}
						}
					}
				}
			}
		}
	}
	return nil
}

// prime runs one unrecorded operation on a new connection of a resuming
// variant before its trial, so that the trial starts with a session
// cached, as a running client's would: a lab server that switched its
// certificate for another variant (Before) issues new ticket keys, and at
// a rate every arrival within the first handshake would make a full one.
// Its failure is the trial's to meet.
func prime(ctx context.Context, d driver.Driver) {
	s, err := d.Open(ctx)
	if err != nil {
		return
	}
	_ = s.Do(ctx) // a TLS 1.3 ticket arrives after the handshake
	_ = s.Close()
}

// begin tells Begin, if set, that a trial begins.
func (r *Runner) begin(e plan.Experiment, v plan.Variant, c, n int, rate float64, done, total int) {
	if r.Begin != nil {
		r.Begin(TrialLabel(e, v, c, n, rate), done, total)
	}
}

func (r *Runner) driver(v plan.Variant, reuse bool, perConn int) (driver.Driver, error) {
	k := driverKey{v.ID, reuse, perConn}
	if d, ok := r.drivers[k]; ok {
		return d, nil
	}
	cfg, ok := r.Configs[v.ID]
	if !ok {
		return nil, fmt.Errorf("no connection settings for variant %s", v.ID)
	}
	cfg.Reuse, cfg.PerConn = reuse, perConn
	d, err := r.newDriver(r.Scheme, cfg)
	if err != nil {
		return nil, err
	}
	if r.drivers == nil {
		r.drivers = map[driverKey]driver.Driver{}
	}
	r.drivers[k] = d
	return d, nil
}

// newDriver makes a driver with NewDriver, or driver.New.
func (r *Runner) newDriver(scheme string, cfg driver.Config) (driver.Driver, error) {
	if r.NewDriver != nil {
		return r.NewDriver(scheme, cfg)
	}
	return driver.New(scheme, cfg)
}

// Trial runs one experiment on one variant at concurrency c.
func (r *Runner) Trial(ctx context.Context, e plan.Experiment, v plan.Variant, c int) (result.Trial, error) {
	return r.TrialPerConn(ctx, e, v, c, 1)
}

// TrialPerConn is Trial with n operations per new connection (connect
// --per-conn; other experiments take 1).
func (r *Runner) TrialPerConn(ctx context.Context, e plan.Experiment, v plan.Variant, c, n int) (result.Trial, error) {
	return r.TrialAt(ctx, e, v, c, n, 0)
}

// TrialLabel names a trial as its errors and the progress display do:
// "connect tls1.3 c=4", with per-conn= and rate= where they apply.
func TrialLabel(e plan.Experiment, v plan.Variant, c, n int, rate float64) string {
	where := fmt.Sprintf("%s %s c=%d", e, v.ID, c)
	switch {
	case experiments[e].alone:
		// The seed's loops run one client at a time: no c= to name.
		where = fmt.Sprintf("%s %s", e, v.ID)
	case n > 1:
		where += fmt.Sprintf(" per-conn=%d", n)
	}
	if rate > 0 {
		where += " rate=" + plan.RateLabel(rate)
	}
	return where
}

// TrialAt is TrialPerConn with arrivals at rate per second (connect and
// pool, rate.go); 0 is the closed loop of c workers.
func (r *Runner) TrialAt(ctx context.Context, e plan.Experiment, v plan.Variant, c, n int, rate float64) (result.Trial, error) {
	x, ok := experiments[e]
	if !ok {
		return result.Trial{}, fmt.Errorf("unknown experiment %q", e)
	}
	if !x.perConn || n < 1 {
		n = 1
	}
	where := TrialLabel(e, v, c, n, rate)
	tr := &trial{v: v, c: c, n: n, rate: rate, where: where}
	if v.Client == "" {
		if err := x.open(r, tr); err != nil {
			return result.Trial{}, err
		}
	}
	if r.Before != nil {
		if err := r.Before(ctx, v); err != nil {
			return result.Trial{}, fmt.Errorf("%s: %w", v.ID, err)
		}
	}
	if v.Resume && tr.d != nil {
		prime(ctx, tr.d)
	}
	var t result.Trial
	var err error
	if v.Client != "" {
		t, err = r.stackTrial(ctx, e, v, c, n)
	} else {
		undo := r.fitProcs(c)
		t, err = x.run(ctx, r, tr)
		undo()
	}
	t.Experiment, t.Variant, t.Concurrency = e, v.ID, c
	if n > 1 {
		t.PerConn = n
	}
	if t.Negotiated != nil {
		t.Negotiated.ClientCert = tlsx.ClientCertKey(r.Configs[v.ID].TLS)
	}
	if n, ok := tr.d.(driver.MultiStatement); ok {
		t.Queries = t.Ops * int64(n.Statements())
	}
	var gaveUp *GaveUp
	if err != nil && !errors.As(err, &gaveUp) {
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		if v.Client != "" {
			return t, fmt.Errorf("%s: %w", where, err) // the stack's own words
		}
		return t, fmt.Errorf("%s: %w", where, r.explain(err, v))
	}
	// Too many failures say more than a worker that gave up.
	if err := checkErrors(r.Spec, t); err != nil {
		return t, fmt.Errorf("%s: %w", where, err)
	}
	if gaveUp != nil {
		return t, fmt.Errorf("%s: %w", where, gaveUp)
	}
	return t, nil
}

// Kept reports whether err fails a trial that ran (TooManyErrors, GaveUp):
// the trial is kept in the result, and the run ends after it.
func Kept(err error) bool {
	var many *TooManyErrors
	var gaveUp *GaveUp
	return errors.As(err, &many) || errors.As(err, &gaveUp)
}

// TooManyErrors fails a trial whose share of failed operations passed
// Spec.MaxErrorRate: its figures describe a failing server. The trial is
// kept in the result; the run ends after it.
type TooManyErrors struct {
	Failed, Total int64
	Max           float64
	// Warmup says the failures were the warm-up's (see warmedUp).
	Warmup bool
	// First is the first message of the most frequent kind of error.
	Kind, First string
}

func (e *TooManyErrors) Error() string {
	ops := "operations"
	if e.Warmup {
		ops = "operations of the warm-up"
	}
	return fmt.Sprintf("%d of %d %s failed (%.1f%%, above --max-error-rate %s), most with %s: %s",
		e.Failed, e.Total, ops, 100*float64(e.Failed)/float64(e.Total), plan.FormatRate(e.Max), e.Kind, e.First)
}

// checkErrors returns a *TooManyErrors when the trial's failed operations
// are more than spec.MaxErrorRate of all it attempted.
func checkErrors(spec plan.Spec, t result.Trial) error {
	var failed int64
	kind := ""
	for k, n := range t.Errors {
		failed += n
		if kind == "" || n > t.Errors[kind] || (n == t.Errors[kind] && k < kind) {
			kind = k
		}
	}
	total := failed + t.Ops
	if failed == 0 || float64(failed) <= spec.ErrorRate()*float64(total) {
		return nil
	}
	return &TooManyErrors{Failed: failed, Total: total, Max: spec.ErrorRate(), Kind: kind, First: t.ErrorSamples[kind]}
}

// PanicError is a panic caught in a worker or a run: a bug, in tlsbench or
// in a driver, reported as an error so that the finished trials are saved
// and the servers stopped.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	where := ""
	if site := panicSite(e.Stack); site != "" {
		where = " at " + site
	}
	return fmt.Sprintf("internal error%s: %v (a bug: please report it with the command line)", where, e.Value)
}

// panicSite is the file:line of the frame that panicked, from a
// debug.Stack taken in the deferred recover: the first frame after the
// runtime's panic call.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "panic(") || i+3 >= len(lines) {
			continue
		}
		// Skip runtime frames (a nil dereference panics in runtime code).
		for j := i + 2; j+1 < len(lines); j += 2 {
			file := strings.TrimSpace(lines[j+1])
			if strings.Contains(file, "/src/runtime/") {
				continue
			}
			if k := strings.LastIndex(file, " +0x"); k > 0 {
				file = file[:k]
			}
			return filepath.Base(file)
		}
	}
	return ""
}

// Check opens one session per variant, runs one operation and verifies that
// the connection is what the variant asked for, as the client and, where
// the engine can tell, as the server sees it (TLS version, server key), so
// that a misconfiguration is one clear error before any figure is taken.
// Where the variants are the target's default comparison
// (Spec.TLSByDefault), one the server refuses as such (driver.ErrRefused:
// plaintext where it demands TLS, say) is left out of r.Variants, with a
// line in r.LeftOut, unless it is the last.
func (r *Runner) Check(ctx context.Context) ([]result.Check, error) {
	var checks []result.Check
	var kept []plan.Variant
	var refused []error
	for _, v := range r.Variants {
		c, err := r.check(ctx, v)
		switch {
		case err != nil && ctx.Err() != nil:
			return checks, ctx.Err()
		case err != nil && r.Spec.TLSByDefault && errors.Is(err, driver.ErrRefused):
			refused = append(refused, fmt.Errorf("%s: %w", v.ID, err))
			r.LeftOut = append(r.LeftOut, v.ID+" not measured, "+driver.Why(err))
			continue
		case err != nil:
			return checks, fmt.Errorf("%s: %w", v.ID, err)
		}
		checks = append(checks, c)
		kept = append(kept, v)
	}
	if len(kept) == 0 && len(refused) > 0 {
		r.LeftOut = nil
		return checks, refused[0]
	}
	if len(refused) > 0 {
		ids := make([]string, len(kept))
		for i, v := range kept {
			ids[i] = v.ID
		}
		for i := range r.LeftOut {
			r.LeftOut[i] += "; measuring " + strings.Join(ids, ", ") + " only"
		}
		plan.MarkBaseline(kept)
		r.Variants = kept
	}
	return checks, nil
}

// checkPasses is how many passes the check tries where the run allows
// failed operations: a script that fails 1 pass in 5 (a division by zero,
// a unique key) fails all 5 one run in 3,000.
const checkPasses = 5

// checkPass runs the check's operation on s. Where --max-error-rate lets
// operations fail, a pass the server answered with an error (not a failed
// connection) is tried again, up to checkPasses times: one that succeeds
// shows the variant works, as the trials will count the rest.
func (r *Runner) checkPass(ctx context.Context, s driver.Session) error {
	var err error
	for range checkPasses {
		// A script's \sleep lasts at most a trial here: the pass ran as
		// far as a trial would have let it.
		err = s.Do(script.WithEnd(ctx, time.Now().Add(r.Spec.Duration)))
		if err == nil || errors.Is(err, script.ErrCut) {
			return nil
		}
		if r.Spec.ErrorRate() == 0 || !driver.Answered(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (r *Runner) check(ctx context.Context, v plan.Variant) (result.Check, error) {
	if v.Client != "" {
		return r.checkStack(ctx, v)
	}
	c := result.Check{Variant: v.ID}
	d, err := r.driver(v, false, 1)
	if err != nil {
		return c, err
	}
	if r.Before != nil {
		if err := r.Before(ctx, v); err != nil {
			return c, err
		}
	}
	s, err := d.Open(ctx)
	if err != nil {
		return c, r.explain(err, v)
	}
	defer s.Close()
	cfg := r.Configs[v.ID]
	sent, err := verifyClientCert(v, cfg.TLS, s, r.Scheme, cfg.Addr)
	if err != nil {
		return c, err
	}
	if err := r.checkPass(ctx, s); err != nil {
		return c, r.explain(err, v)
	}
	if a := r.Configs[v.ID].Answered; a != nil {
		// From now on a connection closed before a word is the
		// server's doing, not a port of the other protocol.
		a.Store(true)
	}
	if dc, ok := s.(driver.DataChecker); ok {
		if err := dc.CheckData(ctx); err != nil {
			return c, r.explain(err, v)
		}
	}
	if state, ok := s.TLS(); ok {
		n := negotiated(state)
		c.Client = &n
	}
	if nc := s.Conn(); nc != nil {
		c.Remote = nc.RemoteAddr().String()
	}
	var view *driver.ServerView
	if sc, ok := s.(driver.ServerChecker); ok {
		sv, err := sc.ServerTLS(ctx)
		if err != nil {
			return c, fmt.Errorf("asking the server about the connection's TLS: %w", err)
		}
		view = &sv
		c.Server = &result.ServerView{TLS: sv.TLS, Version: sv.Version, Cipher: sv.Cipher, Auth: sv.Auth, ClientCert: sv.ClientCert}
	}
	if sent && view != nil && view.ClientCertKnown && view.ClientCert == "" {
		// A resumed handshake asks for nothing: the server's own view
		// must have seen the certificate of the one it resumes.
		return c, tlsx.CertNotRequested(cfg.Addr, r.Scheme, v, cfg.TLS)
	}
	if c.Client != nil && sent {
		c.Client.ClientCert = tlsx.ClientCertKey(cfg.TLS)
	}
	return c, verify(v, s, view, r.Configs[v.ID].ServerTLS)
}

func (r *Runner) explain(err error, v plan.Variant) error {
	var oe *driver.OpError
	if errors.As(err, &oe) && oe.Phase == netx.PhaseTCP && !tlsx.FileLimit(err) {
		hint := ""
		var family *netx.SourceFamilyError
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			hint = " (is the server running and listening there?)"
		case errors.As(err, &family):
			hint = ": give --source an address of the server's family, or --source auto"
		}
		// The innermost cause reads best: "connection refused", not
		// "dial tcp 127.0.0.1:1: connect: connection refused".
		var ne *net.OpError
		var se *os.SyscallError
		switch {
		case errors.As(err, &se):
			err = se.Err
		case errors.As(err, &ne) && ne.Err != nil:
			err = ne.Err
		}
		return fmt.Errorf("cannot connect to %s: %w%s", r.Configs[v.ID].Addr, err, hint)
	}
	if errors.Is(err, driver.ErrSourceRefused) {
		fix := "give --source with an address the server allows (e.g. --source 127.0.0.1), or allow this one on the server (pg_hba.conf, the user's host)"
		if from := r.Spec.Source; from != plan.SourceAuto {
			if from == plan.SourceSpread {
				from = "127.0.1.1-127.0.1.64"
			}
			fix = "use --source auto (the kernel's address, 127.0.0.1 for a loopback server), or allow " + from + " on the server (pg_hba.conf, the user's host)"
		}
		return fmt.Errorf("%w: the server refuses connections from this source address: %s", err, fix)
	}
	if errors.Is(err, driver.ErrMissingData) {
		return fmt.Errorf("%w: the workload's tables are missing: run tlsbench prepare URL --tables %d --rows %d first", err, r.Spec.Tables, r.Spec.Rows)
	}
	return tlsx.ExplainClient(err, r.Configs[v.ID].Addr, r.Scheme, v, r.Configs[v.ID].TLS)
}

// verify checks the negotiated facts of a session against its variant, and
// against what the server says when it can: a "plain" connection that is
// really encrypted, or a TLS one that fell back, is an error, not a figure.
func verify(v plan.Variant, s driver.Session, server *driver.ServerView, hopTLS *bool) error {
	if hopTLS != nil && server != nil {
		// An intermediary's own connection is what the server sees.
		switch {
		case *hopTLS && !server.TLS:
			return errors.New("the intermediary should reach the server over TLS, but the server reports a plaintext connection")
		case !*hopTLS && server.TLS:
			return fmt.Errorf("the intermediary should reach the server in plaintext, but the server reports %s %s", server.Version, server.Cipher)
		}
		server = nil
	}
	state, ok := s.TLS()
	switch {
	case v.Plain() && ok:
		return errors.New("the plain variant negotiated TLS")
	case v.Plain() && server != nil && server.TLS:
		return fmt.Errorf("the plain variant is encrypted: the server reports %s %s (does the client turn TLS on by default?)", server.Version, server.Cipher)
	case v.Plain():
		return nil
	case !ok:
		return errors.New("a TLS variant connected without TLS")
	case server != nil && !server.TLS:
		return errors.New("the client negotiated TLS but the server reports a plaintext connection")
	}
	if got, _ := plan.GroupName(state.CurveID.String()); v.Group != "" && state.CurveID != 0 && got != v.Group {
		return fmt.Errorf("asked for the %s key-exchange group, negotiated %s", v.Group, state.CurveID)
	}
	want := map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[v.TLS]
	if want != 0 && state.Version != want {
		return fmt.Errorf("asked for TLS %s, negotiated %s", v.TLS, tls.VersionName(state.Version))
	}
	if server != nil && server.Version != "" && versionNumber(server.Version) != versionNumber(tls.VersionName(state.Version)) {
		return fmt.Errorf("the client negotiated %s, the server reports %s", tls.VersionName(state.Version), server.Version)
	}
	if v.Key != "" && len(state.PeerCertificates) > 0 {
		if got := tlsx.KeyTypeOf(tlsx.PeerKey(state.PeerCertificates[0])); got != v.Key {
			return fmt.Errorf("asked for a %s server key, the server presented %s", v.Key, tlsx.PeerKey(state.PeerCertificates[0]))
		}
	}
	return nil
}

// verifyClientCert checks a session whose client config c presents a
// client certificate, and says whether it was sent: a full handshake sent
// it only if the server asked for it (a CertificateRequest, which the
// session's Conn notes, whatever the engine); a resumed one carries the
// identity of the handshake it resumes (the server's own view, where it
// can tell, must then have seen one: see check). A certificate given that
// the server never asked for is an error: the figures would be those of
// TLS without it. engine is the driver registry key, for the remedy.
func verifyClientCert(v plan.Variant, c *tls.Config, s driver.Session, engine, addr string) (sent bool, err error) {
	if tlsx.ClientCertKey(c) == "" {
		return false, nil
	}
	state, ok := s.TLS()
	if !ok {
		return false, nil // verify says that a TLS variant connected without TLS
	}
	if nc := s.Conn(); nc != nil && !state.DidResume && !nc.CertRequested() {
		return false, tlsx.CertNotRequested(addr, engine, v, c)
	}
	return true, nil
}

// versionNumber is the "1.3" of "TLS 1.3" (Go) and "TLSv1.3" (OpenSSL).
func versionNumber(name string) string {
	return strings.TrimLeft(name, "TLSv ")
}

// spanCPU measures client (and server) CPU over a span of a trial.
// The span runs with the garbage collector held off (holdGC), unless the
// Runner is Untuned.
type spanCPU struct {
	serverCPU func() (time.Duration, error)
	keepGC    bool // the collector runs as it would (Runner.Untuned)
	client    time.Duration
	server    time.Duration
	releaseGC func()
}

func (s *spanCPU) start() {
	if !s.keepGC {
		s.releaseGC = holdGC()
	}
	s.client = host.ProcessCPU()
	if s.serverCPU != nil {
		s.server, _ = s.serverCPU()
	}
}

func (s *spanCPU) stop(t *result.Trial) {
	t.ClientCPU = host.ProcessCPU() - s.client
	if s.releaseGC != nil {
		s.releaseGC()
	}
	if s.serverCPU != nil {
		if end, err := s.serverCPU(); err == nil {
			t.ServerCPU = end - s.server
		}
	}
}

// limits decide when a worker stops: time, count, cancellation, or too
// many failures in a row (a dead server must not be hammered for minutes).
type limits struct {
	ctx      context.Context
	deadline time.Time
	count    int64
	issued   atomic.Int64
}

const maxConsecutiveErrors = 50

func (l *limits) next() bool { return l.take(1) }

// take reserves n operations (a connection of connect --per-conn n): all
// of them or, when fewer are left of the count, none.
func (l *limits) take(n int64) bool {
	if l.ctx.Err() != nil || !time.Now().Before(l.deadline) {
		return false
	}
	if l.count == 0 {
		return true
	}
	for {
		cur := l.issued.Load()
		if cur+n > l.count {
			return false
		}
		if l.issued.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}
