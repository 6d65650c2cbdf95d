package advise

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A calibration advise runs itself (advise --lab): a lab connect run on
// the profile's engine with the variants its changes' CPU figures need
// (each change's from and to, as a calibration given with --calibration
// would hold them), at the capture's load (load: its rate and RTT, on
// which a connection's CPU depends), whose CPU per connection the
// advice's CPU figures then come from; for pooling, a pool of the
// variant like the observed beside it.

// LabCalibration is the plan of one endpoint's calibration run.
type LabCalibration struct {
	// Spec is the run, before plan.New.
	Spec plan.Spec
	need []sel
	// pool is the variant pooling's figures need pooled, if any.
	pool *sel
	// Left says which changes it cannot calibrate on this lab, and why.
	Left []string
}

// NewLabCalibration plans the calibration the advice a needs on lab
// (--lab: postgres, postgres:18, mariadb, redis, mongodb or builtin): a
// *NoLabError for an engine the lab has no server of, an error for a lab
// of another engine than the capture's.
func NewLabCalibration(a result.Advised, lab string, o ReplayOptions) (*LabCalibration, error) {
	p := profileOf(a.Profile)
	own, ok := labEngine[p.Engine]
	if !ok {
		return nil, &NoLabError{Engine: p.Engine}
	}
	engine, version, _ := strings.Cut(lab, ":")
	if engine != own {
		return nil, fmt.Errorf("--lab %s: the capture's endpoint %s is %s: calibrate on the same engine (--lab %s)", lab, p.Server, p.Engine, own)
	}
	major, _ := strconv.Atoi(version)
	direct := engine == "postgres" && major >= 17
	c := &LabCalibration{}
	like := p.like()
	for _, ch := range a.Advice {
		i := slices.IndexFunc(changes, func(x change) bool { return x.name == ch.Change })
		if ch.NotApplicable || i < 0 {
			continue
		}
		from, to := changes[i].pair(p, like)
		switch {
		case (isHybrid(from.group) || isHybrid(to.group)) && engine != plan.Builtin:
			c.Left = append(c.Left, ch.Change+": the lab's "+engine+" server has no X25519MLKEM768 (OpenSSL before 3.5)")
			continue
		case (from.negotiation == plan.NegotiationDirect || to.negotiation == plan.NegotiationDirect) && !direct:
			c.Left = append(c.Left, ch.Change+": direct TLS needs PostgreSQL 17+ (--lab postgres:18 calibrates it)")
			continue
		}
		for _, s := range []sel{p.replayed(from), p.replayed(to)} {
			if s.perConn == -1 {
				c.pool = &s
				continue
			}
			if !slices.Contains(c.need, s) {
				c.need = append(c.need, s)
			}
		}
	}
	c.Spec = labSpec(lab, o)
	if len(c.need) > 0 {
		dimsOf(p.Engine, c.need).apply(&c.Spec)
	}
	if c.pool != nil {
		c.Spec.Experiments = append(c.Spec.Experiments, plan.Pool)
	}
	p.load(&c.Spec, "the calibration", "") // its notes are the replay's too; the result says its load
	return c, nil
}

// Pick keeps the cells of the calibration's matrix the advice needs: the
// changes' variants' connections, and the pool pooling needs.
func (c *LabCalibration) Pick(e plan.Experiment, v plan.Variant) bool {
	if e == plan.Pool {
		return c.pool != nil && c.pool.is(v)
	}
	return slices.ContainsFunc(c.need, func(s sel) bool { return s.is(v) })
}

// Empty reports whether no change the advice gives needs a CPU figure
// this lab can calibrate.
func (c *LabCalibration) Empty() bool { return len(c.need) == 0 }
