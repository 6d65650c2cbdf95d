package plan

import (
	"slices"
	"time"
)

// DefaultLagSLO is the heartbeat lag p99 a write-rate search of replicate
// keeps under (--lag-slo).
const DefaultLagSLO = time.Second

// rate validates replicate's open loop (--rate, --lag-slo, --slo) and
// fills its defaults; it runs before Duration's and Trials' defaults,
// which a search makes short and one.
func (r *Replication) rate() error {
	if r.Knee == nil {
		switch {
		case r.LagSLO != 0:
			return errorf("⟨lag_slo⟩ is the bound of a write-rate search: give ⟨rates⟩ auto or a range such as 100..5000")
		case r.SLO != 0:
			return errorf("⟨slo⟩ is the bound of a write-rate search: give ⟨rates⟩ auto or a range such as 100..5000")
		}
	}
	if err := checkRates(r.Rates, r.Knee); err != nil {
		return err
	}
	if r.Knee == nil {
		return nil
	}
	sync := slices.ContainsFunc(r.Sync, func(s string) bool { return s != "off" })
	switch {
	case r.LagSLO < 0 || r.SLO < 0:
		return errorf("⟨lag_slo⟩ %v, ⟨slo⟩ %v: give the p99 to keep under, e.g. 1s", r.LagSLO, r.SLO)
	case r.SLO != 0 && !sync:
		return errorf("⟨slo⟩ bounds a synchronous commit's p99: add ⟨sync⟩ on or remote_apply, or drop it (⟨lag_slo⟩ bounds the replica's lag)")
	}
	if r.LagSLO == 0 {
		r.LagSLO = DefaultLagSLO
	}
	if r.SLO == 0 && sync {
		r.SLO = DefaultSLO
	}
	if r.Duration == 0 && !r.Given("duration") {
		r.Duration = DefaultKneeDuration
	}
	if r.Trials == 0 && !r.Given("trials") {
		r.Trials = 1 // a search runs each step once
	}
	return nil
}

// RateCells are the write rates of a run's cells: Rates, or [0], the
// closed loop (a search's rates are its steps).
func (r Replication) RateCells() []float64 {
	if len(r.Rates) == 0 {
		return []float64{0}
	}
	return r.Rates
}

// SLOFor is the commit p99 bound of variant v in a search: SLO in a
// synchronous mode, 0 (none) in the asynchronous one, whose commit does
// not wait for the replica.
func (r Replication) SLOFor(v ReplicaVariant) time.Duration {
	if v.Sync == "off" {
		return 0
	}
	return r.SLO
}
