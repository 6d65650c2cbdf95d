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
	Slots int `json:"slots"`
	// Arrivals is how many the client dispatched in the window (to a
	// worker, to the queue, or dropped).
	Arrivals int64 `json:"arrivals"`
	// Dropped arrivals found no free slot: counted, never delayed.
	Dropped int64 `json:"dropped"`
	// Window is the arrivals' time: -d, or the span of -n's arrivals.
	Window time.Duration `json:"window_ns"`
	// Schedule is how well the client kept the arrivals' schedule; nil in
	// results of a tlsbench before it was measured.
	Schedule *Schedule `json:"schedule,omitempty"`
	// Service is each arrival's time from its actual start, beside
	// Trial.Latency's from its intended start: their gap is queueing.
	Service Hist `json:"service"`
}

// Schedule is what the client made of the arrivals' schedule: how many
// were due and started, and how late they started (pgbench --rate's
// "schedule lag"). An arrival starts when connect's worker begins its
// dial, or when pool's dispatcher queues it for a connection (its wait
// there for a free connection is queueing, in Latency, not lag).
type Schedule struct {
	// Due is the schedule's arrivals in the window: those dispatched and
	// those the client fell too far behind to dispatch before it ended.
	// A poisson schedule's count varies around offered × window.
	Due int64 `json:"due"`
	// Started is the arrivals that started (a dial begun, an operation
	// begun on its connection): what reached the server.
	Started int64 `json:"started"`
	// Lag is each started arrival's time from its intended start to its
	// start; Late1ms and Late10ms count those more than 1 ms and 10 ms
	// late.
	Lag      Hist  `json:"lag"`
	Late1ms  int64 `json:"late_1ms"`
	Late10ms int64 `json:"late_10ms"`
}

// Started is the arrivals that reached the server: Schedule.Started, or
// in an older result the arrivals less drops (all it recorded).
func (o OpenLoop) Started() int64 {
	if o.Schedule != nil {
		return o.Schedule.Started
	}
	return o.Arrivals - o.Dropped
}

// Achieved is the measured arrival rate: the arrivals that started (what
// reached the server) per second of the window. A poisson schedule's own
// count varies around the offered rate, and this follows it.
func (o OpenLoop) Achieved() float64 {
	if o.Window <= 0 {
		return 0
	}
	return float64(o.Started()) / o.Window.Seconds()
}

// The shares beyond which a rate is not sustained (OverSLO) or the client
// did not keep its schedule (Behind).
const (
	// MaxDropShare and MaxFailShare: more than 1% of arrivals dropped or
	// failed.
	MaxDropShare = 0.01
	MaxFailShare = 0.01
	// MinAchievedShare: a client that started less than 90% of the
	// arrivals its schedule had due did not offer the rate.
	MinAchievedShare = 0.9
	// MaxLateShare: more than 5% of the arrivals started over 10 ms late
	// (Schedule.Late10ms) is a schedule the client did not keep: the
	// server saw bursts the schedule did not have. (A loaded 2-core
	// machine sends about 1% that late.)
	MaxLateShare = 0.05
)

// Behind says how the client failed to keep the schedule (less than
// MinAchievedShare of the arrivals due started, drops aside, or more than MaxLateShare
// of them started over 10 ms late), "" when it kept it or the result does
// not say.
func (o OpenLoop) Behind() string {
	s := o.Schedule
	if why := o.unstarted(); why != "" || s == nil {
		return why
	}
	if float64(s.Late10ms) > MaxLateShare*float64(s.Started) {
		return fmt.Sprintf("%d of %d arrivals started over 10 ms late", s.Late10ms, s.Started)
	}
	return ""
}

// unstarted says so when less than MinAchievedShare of the arrivals due
// started, drops aside (those found the slots full, a slow server's
// doing): the client did not offer the rate.
func (o OpenLoop) unstarted() string {
	s := o.Schedule
	if s == nil || float64(s.Started) >= MinAchievedShare*float64(s.Due-o.Dropped) {
		return ""
	}
	return fmt.Sprintf("the client started %d of the %d arrivals its schedule had due", s.Started, s.Due)
}

// OverSLO says why the trial's rate is not sustained within slo (its p99
// from the intended start above slo, drops, failures, or a rate the client
// could not generate), "" when it is. A closed-loop trial is never over.
// Arrivals that started late but started are charged in the p99 (it counts
// from the intended start), not refused here.
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
	case o.unstarted() != "":
		return o.unstarted()
	case t.Latency.P99 > float64(slo)/1e6:
		return fmt.Sprintf("p99 %.1f ms above %v", t.Latency.P99, slo)
	}
	return ""
}
