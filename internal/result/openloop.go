package result

import (
	"fmt"
	"time"
)

// OpenLoop is what a trial at an arrival rate offered and achieved. An
// arrival is one operation (pool) or one new connection (connect, with
// its --per-conn operations).
type OpenLoop struct {
	Offered float64 `json:"offered"` // arrivals per second asked for
	Process string  `json:"process"` // poisson or uniform
	// Slots is the most arrivals in flight (--max-inflight): connect's
	// connections opening at once, pool's arrivals queued for its
	// connections.
	Slots    int   `json:"slots"`
	Arrivals int64 `json:"arrivals"` // arrivals due in the window
	// Dropped arrivals found no free slot: counted, never delayed.
	Dropped int64 `json:"dropped"`
	// Window is the arrivals' time: -d, or the span of -n's arrivals.
	Window time.Duration `json:"window_ns"`
	// Lag is how far behind its intended start the last arrival was
	// dispatched (pgbench's schedule lag): near 0 while the client keeps
	// the pace; a client that cannot falls further behind every arrival.
	Lag time.Duration `json:"lag_ns"`
	// Service is each arrival's time from its actual start, beside
	// Trial.Latency's from its intended start: their gap is queueing.
	Service Hist `json:"service"`
}

// Achieved is the rate of arrivals the client dispatched to a slot: the
// offered rate less the share dropped, stretched by the time it fell
// behind (Lag). (The schedule's own count of a poisson process varies
// around the offered rate; Achieved does not count that as missed.)
func (o OpenLoop) Achieved() float64 {
	if o.Arrivals == 0 || o.Window <= 0 {
		return 0
	}
	served := float64(o.Arrivals-o.Dropped) / float64(o.Arrivals)
	return o.Offered * served * o.Window.Seconds() / (o.Window + max(o.Lag, 0)).Seconds()
}

// The shares beyond which a rate is not sustained (OverSLO).
const (
	// MaxDropShare and MaxFailShare: more than 1% of arrivals dropped or
	// failed.
	MaxDropShare = 0.01
	MaxFailShare = 0.01
	// MinAchievedShare: a client that dispatched less than 90% of the
	// offered rate did not offer it.
	MinAchievedShare = 0.9
)

// OverSLO says why the trial's rate is not sustained within slo (its p99
// from the intended start above slo, drops, failures, or a rate the client
// could not generate), "" when it is. A closed-loop trial is never over.
func (t Trial) OverSLO(slo time.Duration) string {
	o := t.Open
	if o == nil {
		return ""
	}
	var failed int64
	for _, n := range t.Errors {
		failed += n
	}
	switch n := float64(max(o.Arrivals, 1)); {
	case float64(o.Dropped) > MaxDropShare*n:
		return fmt.Sprintf("%d of %d arrivals dropped", o.Dropped, o.Arrivals)
	case float64(failed) > MaxFailShare*n:
		return fmt.Sprintf("%d of %d arrivals failed", failed, o.Arrivals)
	case o.Achieved() < MinAchievedShare*o.Offered:
		return fmt.Sprintf("the client dispatched %.0f of %.0f arrivals/s", o.Achieved(), o.Offered)
	case t.Latency.P99 > float64(slo)/1e6:
		return fmt.Sprintf("p99 %.1f ms above %v", t.Latency.P99, slo)
	}
	return ""
}
