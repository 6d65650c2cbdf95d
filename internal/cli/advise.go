package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/advise"
	"github.com/tlsbench/tlsbench/internal/gate"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// adviseFlags are the advise command's flags.
type adviseFlags struct {
	ports       []int
	serverKey   string
	engine      string
	calibration string
	// lab runs the calibration itself (advise_lab.go) on a lab server.
	lab    string
	output string
	format string
	// confirm replays each profile in the lab (confirm.go), trials and
	// duration sizing it; quiet keeps its progress off stderr.
	confirm  bool
	trials   int
	duration time.Duration
	quiet    bool
	gate     gateFlags // --gate, --gates, --gate-abort, --junit, --summary-md (gates.go)
	// client is the client stack --confirm replays through.
	client string
}

const adviseShort = "From a capture of your own traffic: its profile, and what each TLS change would save"

func newAdviseCmd(argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f adviseFlags
	cmd := &cobra.Command{
		Use:   "advise CAPTURE.pcap | RESULT.json",
		Short: adviseShort,
		Long: adviseShort + `.

tlsbench advise CAPTURE.pcap decodes a capture as tlsbench wire does and,
per server endpoint, profiles what it holds: the engine, new connections per
second, operations per connection, the RTT at the capture point, what TLS
negotiated (version, suite, group, HelloRetryRequests, resumption, client
certificates, the server's key where TLS 1.2 shows it) and where each phase's
time went. Then, for each change that applies — TLS 1.2 to 1.3, an ECDSA
server key, session resumption, avoiding a HelloRetryRequest, PostgreSQL
17+'s direct TLS, pooling, the post-quantum hybrid on or off, TLS off as the
bound — the round trips it saves per connection and the setup time it
predicts (mean and p95 over the connections' own RTTs, with an interval).

CPU figures (server and client CPU per connection, cores at the observed
rate, new connections per second per server core) come only from a lab run
on the same engine: --lab ENGINE runs it first, on this machine, with the
variants the advice needs (the observed version, key, group and
resumption) at the capture's load (its connection rate and RTT, on which
a connection's CPU depends; it says how long it takes), or --calibration
gives an earlier
tlsbench connect result; without either the output names the command that
makes one.

--confirm checks the predictions: it replays each profile against a lab
server of the same engine (the observed connection rate as Poisson
arrivals, at most 100/s; operations per connection; the median RTT
emulated), once as now (the observed TLS version, key, group and
negotiation) and once per change, in interleaved trials, and sets what it
measured beside what was predicted, with the error in percent.

advise RESULT.json renders an advise result again.

  tlsbench advise db.pcap --port 5432
  tlsbench advise db.pcap --port 5432 --lab postgres
  tlsbench advise db.pcap --port 5432 --calibration calibration.json --confirm`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("advise takes one capture file (pcap or pcapng) or advise result, got %d arguments", len(args))}
			}
			return adviseRun(cmd.Context(), f, args[0], argv, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.IntSliceVar(&f.ports, "port", nil, "server TCP ports whose connections are profiled, repeatable (default: every port it can decode, one profile per server endpoint)")
	fs.StringVar(&f.serverKey, "server-key", "", "the server's key type where TLS 1.3 hides its certificate: "+strings.Join(plan.KeyTypes, ", ")+" (default: rsa2048, said as assumed)")
	fs.StringVar(&f.engine, "engine", "", "the server's engine where the capture cannot tell it (TLS from the first byte on an unusual port): "+strings.Join(advise.Engines, ", "))
	fs.StringVar(&f.calibration, "calibration", "", "a tlsbench connect `RESULT.json` of a lab server of the same engine: the CPU figures' source")
	fs.StringVar(&f.lab, "lab", "", "run the CPU calibration first on a lab `ENGINE` of the capture's (postgres, postgres:18, mariadb, redis, mongodb, builtin)")
	fs.StringVarP(&f.output, "output", "o", "", "result file (default tlsbench-YYYYMMDD-HHMMSS.json)")
	fs.StringVar(&f.format, "format", "text", "output format: text, csv or json")
	fs.BoolVar(&f.confirm, "confirm", false, "replay each profile in the lab, now and once per change, and set the measured savings beside the predicted")
	fs.IntVar(&f.trials, "trials", advise.DefaultReplayTrials, "--confirm, --lab: trials of each variant, interleaved")
	fs.DurationVarP(&f.duration, "duration", "d", advise.DefaultReplayDuration, "--confirm, --lab: length of each trial")
	fs.StringVar(&f.client, "client", "", "--confirm: the client `STACK` the replay's connections are made by, as connect's --client (default go: tlsbench's own; a stack replays closed loops, without direct TLS, a chosen key share or round trips)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "--confirm, --lab: no progress lines on stderr")
	f.gate.register(cmd, "a gate the advice must pass, else exit 3, repeatable: advise[CHANGE|*].QUANTITY OP BOUND [UNIT] [@ci95], e.g. 'advise[tls1.3].saved.round_trips >= 1', 'advise[ecdsa-p256].error_pct.server_cpu < 10' with --confirm (docs/gates.md)",
		"with --confirm: stop the lab replay after the first trial after which a gate can no longer pass, before it if a prediction's cannot (the trials run are kept); error_pct. gates need the whole replay and never stop it")
	return cmd
}

// adviseRun decodes a capture, profiles it and saves the advice as a
// result; an advise result given instead is rendered again.
func adviseRun(ctx context.Context, f adviseFlags, file string, argv []string, stdout, stderr io.Writer) error {
	render, ok := reportFormats[f.format]
	if !ok {
		return usageError{fmt.Errorf("--format: unknown format %q: use text, csv or json", f.format)}
	}
	for _, p := range f.ports {
		if p <= 0 || p > 65535 {
			return usageError{fmt.Errorf("--port: %d is out of range: give the server's TCP port (1 to 65535)", p)}
		}
	}
	if strings.TrimSpace(file) == "" {
		return usageError{fmt.Errorf("advise: the file given is empty (an unset variable?)")}
	}
	if f.serverKey != "" && !slices.Contains(plan.KeyTypes, f.serverKey) {
		return usageError{fmt.Errorf("--server-key: unknown key type %q: use %s", f.serverKey, strings.Join(plan.KeyTypes, ", "))}
	}
	if f.trials < 1 || f.duration <= 0 {
		return usageError{fmt.Errorf("--trials %d, -d %s: give at least 1 trial of a positive duration", f.trials, f.duration)}
	}
	if f.client != "" && !f.confirm {
		return usageError{fmt.Errorf("--client chooses the client stack of the lab replay: give --confirm too")}
	}
	if f.lab != "" && f.calibration != "" {
		return usageError{fmt.Errorf("--lab runs a calibration, --calibration gives one: give one of them")}
	}
	if f.lab != "" && !slices.Contains(adviseLabs, f.lab) && !strings.HasPrefix(f.lab, "postgres:") {
		return usageError{fmt.Errorf("--lab: unknown lab engine %q: use %s", f.lab, strings.Join(adviseLabs, ", "))}
	}
	stored := filepath.Ext(file) == ".json"
	// A result given again has its replays or not: its figures decide.
	gates, err := f.gate.forAdvise(f.confirm || stored, f.trials)
	if err != nil {
		return err
	}
	if f.gate.abort && !f.confirm {
		return usageError{errors.New("--gate-abort stops the lab replay, which only --confirm runs: give --confirm with the capture, or drop --gate-abort")}
	}
	if stored {
		if f.confirm || f.lab != "" {
			return usageError{fmt.Errorf("--confirm and --lab work on a capture's profile: give the capture file (pcap or pcapng), not a result")}
		}
		return adviseResult(file, render, f.gate, gates, stdout)
	}
	if err := checkCaptureFile(file); err != nil {
		return err
	}
	if f.engine != "" && !slices.Contains(advise.Engines, f.engine) {
		return usageError{fmt.Errorf("--engine: unknown engine %q: use %s", f.engine, strings.Join(advise.Engines, ", "))}
	}
	o := advise.Options{ServerKey: f.serverKey, Engine: f.engine}
	if f.calibration != "" {
		cal, err := readResult(f.calibration)
		if err != nil {
			return fmt.Errorf("--calibration: %w", err)
		}
		o.Calibration, o.CalibrationSource = cal, f.calibration
	}
	out, err := openResultFile(f.output)
	if err != nil {
		return err
	}
	defer out.discard()
	var col advise.Collector
	c, err := wire.ReadFile(ctx, file, wire.Options{Ports: f.ports, Conn: col.Add})
	switch {
	case err != nil && ctx.Err() != nil:
		return errInterrupted
	case err != nil:
		return wireFileError(file, nil, err)
	}
	advised, err := col.Advise(c.Info, o)
	var ne *advise.NoConnError
	switch {
	case errors.As(err, &ne):
		return fmt.Errorf("%s: %w", file, err)
	case err != nil:
		return usageError{err}
	}
	var labNotes []string
	if f.lab != "" {
		if o.Lab, labNotes, err = calibrate(ctx, advised, f, stderr); err != nil {
			return err
		}
		if advised, err = col.Advise(c.Info, o); err != nil {
			return usageError{err}
		}
	}
	res := newResult(argv)
	var stop *gateStop
	if f.confirm {
		if stop, err = confirm(ctx, advised, f, gates, stderr); err != nil {
			return err
		}
	}
	r := advise.Result(c.Info, advised)
	r.Notes = append(r.Notes, labNotes...)
	r.Tool, r.Env, r.Command, r.Started = res.Tool, res.Env, res.Command, res.Started
	r.End(ctx, nil)
	_ = stop.ended(ctx, r, nil) // its note, if it stopped the replays
	recordVerdicts(gates, r)
	_, pageErr, err := out.saveAs(r, render, stdout, stderr)
	if err != nil {
		return err
	}
	if pageErr != nil {
		return pageErr
	}
	return f.gate.finish(r.Gates, "tlsbench advise", r.Started.Format(time.RFC3339), stop)
}

// adviseLabs are the lab servers --lab takes (and postgres:VERSION).
var adviseLabs = []string{"postgres", "mariadb", "redis", "mongodb", plan.Builtin}

// adviseResult renders an advise result again, judged by gates if given;
// any other result is refused in a line that says what to give instead.
func adviseResult(file string, render func(*report.Model, io.Writer) error, gf gateFlags, gates []gate.Gate, stdout io.Writer) error {
	r, err := readResult(file)
	if err != nil {
		return err
	}
	switch {
	case len(r.Advise) > 0:
		recordVerdicts(gates, r)
		if err := render(report.Build(r), stdout); err != nil {
			return err
		}
		return gf.finish(r.Gates, "tlsbench advise", r.Started.Format(time.RFC3339), nil)
	case r.Capture != nil:
		return usageError{fmt.Errorf("%s: %w", file, advise.ErrNotAdvisable)}
	}
	return usageError{fmt.Errorf("%s is a %s result, not a capture's: give the capture file (pcap or pcapng) of your own traffic; a connect result is given as --calibration", file, experimentsOf(r))}
}

func experimentsOf(r *result.Result) string {
	var es []string
	for _, e := range r.Spec.Experiments {
		es = append(es, string(e))
	}
	if len(es) == 0 {
		return "tlsbench"
	}
	return strings.Join(es, ", ")
}
