package advise

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// Options are what the advice needs beside the capture.
type Options struct {
	// ServerKey is the server's key type (plan.KeyTypes), for TLS 1.3,
	// which encrypts the certificate; "" assumes rsa2048, and says so.
	ServerKey string
	// Engine is the server's engine (Engines) for an endpoint whose
	// capture does not tell it (TLS from the first byte, without ALPN, on
	// a port no engine uses by default); "" leaves it unknown.
	Engine string
	// Calibration is a tlsbench connect result on the same engine, in the
	// lab, whose CPU per connection per variant the CPU figures come
	// from; nil: no CPU figure. CalibrationSource is its file.
	Calibration       *result.Result
	CalibrationSource string
	// Lab are the calibrations advise --lab ran on this machine, by the
	// endpoint (address:port) each was run for: an endpoint's own is
	// taken before Calibration.
	Lab map[string]*result.Result
}

// Engines are the engines advise knows, as a driver names them.
var Engines = []string{"postgres", "mysql", "redis", "mongodb", "http"}

// Collector gathers decoded connections by server endpoint: give its Add
// to wire.Options.Conn.
type Collector struct {
	byServer map[netip.AddrPort][]*wire.Conn
	order    []netip.AddrPort
}

// Add keeps one decoded connection.
func (c *Collector) Add(conn *wire.Conn) {
	if c.byServer == nil {
		c.byServer = map[netip.AddrPort][]*wire.Conn{}
	}
	if _, ok := c.byServer[conn.Server]; !ok {
		c.order = append(c.order, conn.Server)
	}
	c.byServer[conn.Server] = append(c.byServer[conn.Server], conn)
}

// NoConnError is a capture in which no connection completed: Info says
// what it held instead.
type NoConnError struct{ Info result.Capture }

func (e *NoConnError) Error() string {
	u := e.Info.Unseen
	var held []string
	for _, k := range []struct{ key, words string }{
		{"began-before-capture", "began before the capture (no SYN)"},
		{"ended-after-capture", "were still open at its end"},
		{"lost", "miss bytes the capture did not see"},
		{"no-answer", "were never answered"},
		{"undecodable", "could not be decoded"},
	} {
		if n := u[k.key]; n > 0 {
			held = append(held, fmt.Sprintf("%d %s", n, k.words))
		}
	}
	if len(held) == 0 {
		return fmt.Sprintf("no TCP connection to advise on among its %d packets (%d on other ports): is it a capture of clients' connections to a server? (--port selects the server's)", e.Info.Packets, u["other-ports"])
	}
	return fmt.Sprintf("no connection completes in the capture (%s): capture from before the first connection opens until the last one closes", strings.Join(held, ", "))
}

// Advise profiles each server endpoint's connections and gives the advice
// for it, endpoints in the order their first connection ended.
func (c *Collector) Advise(info result.Capture, o Options) ([]result.Advised, error) {
	if len(c.order) == 0 {
		return nil, &NoConnError{Info: info}
	}
	if o.ServerKey != "" && !slices.Contains(plan.KeyTypes, o.ServerKey) {
		return nil, fmt.Errorf("--server-key: unknown key type %q: use %s", o.ServerKey, strings.Join(plan.KeyTypes, ", "))
	}
	if o.Engine != "" && !slices.Contains(Engines, o.Engine) {
		return nil, fmt.Errorf("--engine: unknown engine %q: use %s", o.Engine, strings.Join(Engines, ", "))
	}
	var cal *calibration
	if o.Calibration != nil {
		var err error
		if cal, err = newCalibration(o.Calibration, o.CalibrationSource); err != nil {
			return nil, err
		}
	}
	var out []result.Advised
	for _, server := range c.order {
		p := newProfile(server, c.byServer[server], o.ServerKey, o.Engine)
		cal := cal
		if r, ok := o.Lab[server.String()]; ok {
			var err error
			if cal, err = newCalibration(r, "advise --lab"); err != nil {
				return nil, err
			}
			cal.info.Lab = true
		}
		if cal != nil && p.Engine != "" && cal.engine != p.Engine {
			return nil, fmt.Errorf("--calibration %s is a run on %s, but %s: calibrate on the same engine", cal.info.Source, cmp.Or(cal.engine, "an unknown engine"), p.describe())
		}
		a := result.Advised{Profile: p.Profile, Advice: p.advise(cal)}
		if cal != nil {
			info := cal.info
			info.RTT = cal.rttNear(p.RTT.P50)
			a.Calibration = &info
		}
		a.Calibrate = p.calibrate(a.Advice, cal)
		out = append(out, a)
	}
	return out, nil
}

// calibrate is the command that would measure the CPU figures the advice
// lacks, "" when it lacks none.
func (p *profile) calibrate(advice []result.Change, cal *calibration) string {
	lacking := false
	var pairs [][2]sel
	for _, a := range advice {
		i := slices.IndexFunc(changes, func(c change) bool { return c.name == a.Change })
		from, to := changes[i].pair(p, p.like())
		pairs = append(pairs, [2]sel{from, to})
		lacking = lacking || !a.NotApplicable && (cal == nil || len(a.Missing) > 0)
	}
	if !lacking {
		return ""
	}
	return calibrateCommand(p, advice, pairs)
}

// ErrNotAdvisable says that a result file cannot be advised on.
var ErrNotAdvisable = errors.New("a wire result keeps each variant's means, not each connection's RTT, start and operations the profile needs: give the capture file itself (tlsbench advise CAPTURE.pcap)")

// Result is the advice as a tlsbench result (experiment advise): the
// capture it read and, per endpoint, its profile and advice.
func Result(info result.Capture, advised []result.Advised) *result.Result {
	r := result.New()
	r.Capture = &info
	r.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Advise}, Target: info.Source, Concurrency: []int{1}, Trials: 1}
	r.Target = result.Target{URL: info.Source, Kind: string(plan.Advise)}
	r.Advise = advised
	r.Notes = append(r.Notes, notes(info, advised)...)
	return r
}

// notes say what the capture held that the profiles leave out.
func notes(info result.Capture, advised []result.Advised) []string {
	var out []string
	if n := info.Unseen["began-before-capture"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections began before the capture (no SYN): counted, and left out of the profiles", n))
	}
	if n := info.Unseen["ended-after-capture"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections were still open when the capture ended: left out of the profiles", n))
	}
	if n := info.Unseen["lost"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections miss bytes the capture did not see: left out of the profiles", n))
	}
	replayed := slices.ContainsFunc(advised, func(a result.Advised) bool {
		return slices.ContainsFunc(a.Advice, func(c result.Change) bool { return c.RoundTripsMeasured != nil || c.Setup.Measured != nil })
	})
	check := "not yet checked by a lab replay of the profile (--confirm)"
	if replayed {
		check = "checked by a lab replay of the profile (--confirm): measured savings are paired round by round against now's variant, scaled to the share of connections each change changes"
	}
	out = append(out, "predictions, "+check+": round trips are the protocols' own counts, each at the connection's RTT at the capture point; CPU figures come only from a lab calibration and transfer to another machine only as ratios")
	return out
}
