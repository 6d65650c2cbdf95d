package plan

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Open-loop arrivals (Spec.Rates, Spec.Knee): arrivals come at a rate,
// whether or not the server has answered the ones before, as pgbench
// --rate and wrk2 -R send them.

// The processes Spec.Arrivals names.
const (
	ArrivalsPoisson = "poisson" // exponential gaps, pgbench --rate's
	ArrivalsUniform = "uniform" // a constant gap of 1/rate
)

// Defaults and bounds of open-loop runs.
const (
	// DefaultMaxInflight bounds connect's arrivals in flight at a rate: a
	// server that takes longer than 1024/rate per connection drops
	// arrivals instead of growing an unbounded crowd of sockets.
	DefaultMaxInflight = 1024
	MaxInflight        = 65536
	MaxRate            = 1e6
	// DefaultSLO is the p99 a rate search keeps under.
	DefaultSLO = 50 * time.Millisecond
	// DefaultKneeDuration is a search step's trial (-d sets it).
	DefaultKneeDuration = 2 * time.Second
	// A search with ⟨rate⟩ auto starts at KneeFrom per second and steps
	// ×KneeFactor up to MaxRate, at most MaxKneeSteps steps.
	KneeFrom     = 20
	KneeFactor   = 1.5
	MaxKneeSteps = 40
)

// Knee is a search for the highest rate a variant sustains: rates from
// From, ×Factor each step, up to To, until the p99 passes Spec.SLO or
// arrivals are dropped or fail (result.Trial.OverSLO).
type Knee struct {
	From   float64 `json:"from"`
	To     float64 `json:"to"`
	Factor float64 `json:"factor"`
}

// Steps lists the rates the search tries, in order: From, then ×Factor
// each step, written with two significant digits (68, not 67.5; 150, not
// 151.875) up from 100.
func (k Knee) Steps() []float64 {
	var out []float64
	for r := k.From; r <= k.To*(1+1e-9) && len(out) < MaxKneeSteps; r *= k.Factor {
		step := r
		if r >= 100 {
			unit := math.Pow(10, math.Floor(math.Log10(r))-1)
			step = math.Round(r/unit) * unit
		} else if len(out) > 0 {
			step = math.Round(r)
		}
		if len(out) == 0 || step > out[len(out)-1] {
			out = append(out, step)
		}
	}
	return out
}

// ParseRates reads --rate: "auto", a range "FROM..TO" (a search), or
// one or more rates per second "100,200".
func ParseRates(text string) (rates []float64, knee *Knee, err error) {
	text = strings.TrimSpace(text)
	if text == "auto" {
		return nil, &Knee{From: KneeFrom, To: MaxRate, Factor: KneeFactor}, nil
	}
	if from, to, ok := strings.Cut(text, ".."); ok {
		a, err1 := strconv.ParseFloat(strings.TrimSpace(from), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(to), 64)
		if err1 != nil || err2 != nil {
			return nil, nil, errorf("⟨rates⟩ %q: a search range is FROM..TO in arrivals per second, e.g. 100..5000", text)
		}
		return nil, &Knee{From: a, To: b, Factor: KneeFactor}, nil
	}
	for _, f := range strings.Split(text, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, nil, errorf("⟨rates⟩ %q: give arrivals per second (100 or 100,200), a range 100..5000 or auto", f)
		}
		rates = append(rates, r)
	}
	return rates, nil, nil
}

// OpenLoop reports whether the run's arrivals come at a rate (fixed or
// searched) rather than from a closed loop of workers.
func (s Spec) OpenLoop() bool { return len(s.Rates) > 0 || s.Knee != nil }

// RatesFor lists the fixed arrival rates of experiment e, one trial cell
// each; [0] is the closed loop (no rate, or an experiment without one).
func (s Spec) RatesFor(e Experiment) []float64 {
	if len(s.Rates) == 0 || !experimentKinds[e].openLoop {
		return []float64{0}
	}
	return s.Rates
}

// ConcurrencyFor lists the concurrency cells of experiment e: connect at
// a rate has one, its bound on arrivals in flight; the others ⟨concurrency⟩.
func (s Spec) ConcurrencyFor(e Experiment) []int {
	if e == Storm {
		return s.Clients
	}
	if e == Connect && s.OpenLoop() {
		return []int{s.MaxInflight}
	}
	return s.Concurrency
}

// RateLabel is the text of a rate in tables: "200/s".
func RateLabel(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) + "/s" }

// checkRates validates fixed rates or a search's range (filling its
// factor's default): the open loop of any experiment.
func checkRates(rates []float64, k *Knee) error {
	if len(rates) > 0 && k != nil {
		return errorf("⟨rates⟩: give fixed rates or a search (auto, FROM..TO), not both")
	}
	for _, r := range rates {
		if !(r > 0 && r <= MaxRate) {
			return errorf("⟨rates⟩: %v is out of range: give arrivals per second above 0 and up to %v, e.g. --rate 200", r, MaxRate)
		}
	}
	if err := twice("⟨rates⟩", rates, RateLabel); err != nil {
		return err
	}
	if k == nil {
		return nil
	}
	if !(k.From > 0 && k.To <= MaxRate && k.From < k.To) {
		return errorf("⟨rates⟩ %v..%v: a search range goes up from above 0 to at most %v, e.g. 100..5000", k.From, k.To, MaxRate)
	}
	if k.Factor == 0 {
		k.Factor = KneeFactor
	}
	if !(k.Factor > 1) {
		return errorf("⟨rates⟩: a search steps up by a factor above 1, not %v", k.Factor)
	}
	return nil
}

// rate validates the open-loop fields and fills their defaults; it runs
// before Duration's default, which a search makes short.
func (s *Spec) rate() error {
	open := s.OpenLoop()
	if !open {
		switch {
		case s.Arrivals != "":
			return errorf("⟨arrivals⟩ shapes the arrivals of an open loop: give ⟨rates⟩ too (e.g. --rate 200)")
		case s.MaxInflight != 0:
			return errorf("⟨max_inflight⟩ bounds the arrivals in flight of an open loop: give ⟨rates⟩ too (e.g. --rate 200)")
		case s.SLO != 0:
			return errorf("⟨slo⟩ is the bound of a rate search: give ⟨rates⟩ auto or a range such as 100..5000")
		}
		return nil
	}
	if s.Preset != "" {
		return errorf("⟨rates⟩ does not apply to ⟨preset⟩ %s: run connect or pool with ⟨rates⟩", s.Preset)
	}
	for _, e := range s.Experiments {
		if !experimentKinds[e].openLoop {
			return errorf("⟨rates⟩ applies to connect and pool: %s reads one large result at a time; run it without ⟨rates⟩", e)
		}
	}
	if err := checkRates(s.Rates, s.Knee); err != nil {
		return err
	}
	if s.Knee != nil {
		if s.SLO == 0 {
			s.SLO = DefaultSLO
		}
		if s.Duration == 0 && s.Count == 0 {
			s.Duration = DefaultKneeDuration
		}
		if s.Trials == 0 {
			s.Trials = 1 // a search runs each step once
		}
	} else if s.SLO != 0 {
		return errorf("⟨slo⟩ is the bound of a rate search: give ⟨rates⟩ auto or a range such as 100..5000")
	}
	if s.SLO < 0 {
		return errorf("⟨slo⟩: %v is negative: give the p99 to keep under, e.g. 50ms", s.SLO)
	}
	switch s.Arrivals {
	case "":
		s.Arrivals = ArrivalsPoisson
	case ArrivalsPoisson, ArrivalsUniform:
	default:
		return errorf("⟨arrivals⟩ %q: use poisson or uniform", s.Arrivals)
	}
	if s.MaxInflight == 0 {
		s.MaxInflight = DefaultMaxInflight
	}
	if s.MaxInflight < 1 || s.MaxInflight > MaxInflight {
		return errorf("⟨max_inflight⟩: %d is out of range: use 1 to %d arrivals in flight", s.MaxInflight, MaxInflight)
	}
	if slices.Contains(s.Experiments, Connect) && !slices.Contains(s.Experiments, Pool) && !slices.Equal(s.Concurrency, []int{1}) {
		return errorf("⟨concurrency⟩ sets a closed loop's workers: at a rate, connect starts workers as arrivals need them, up to ⟨max_inflight⟩")
	}
	return nil
}
