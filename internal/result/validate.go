package result

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// validate checks the figures of r that reports compute and draw with:
// numbers finite, counts, durations and rates not negative, concurrency at
// least 1, round trips in order, and every trial's variant among
// r.Variants. JSON has no NaN or infinity, but a file edited by hand, cut
// short by a bug or crafted can hold a negative count or a latency of
// -1 ms; such a file is damaged, and saying so beats drawing it. The error
// names the first bad field by its JSON path: trials[3].latency.p95_ms is -1.
func (r *Result) validate() error {
	c := &checker{}
	for i, d := range r.Spec.RTT {
		c.duration(fmt.Sprintf("spec.rtt_ns[%d]", i), d)
	}
	for i, d := range r.Spec.PredictRTT {
		c.duration(fmt.Sprintf("spec.predict_rtt_ns[%d]", i), d)
	}
	c.count("environment.cores", int64(r.Env.Cores))
	c.count("planned_trials", int64(r.PlannedTrials))
	ids := make([]string, len(r.Variants))
	for i, v := range r.Variants {
		ids[i] = v.ID
		c.duration(fmt.Sprintf("variants[%d].rtt_ns", i), v.RTT)
	}
	for i, t := range r.Trials {
		f := fmt.Sprintf("trials[%d].", i)
		if !slices.Contains(ids, t.Variant) {
			c.fail(f+"variant", strconv.Quote(t.Variant), "not the id of any entry of variants")
		}
		if t.Concurrency < 1 {
			c.fail(f+"concurrency", strconv.Itoa(t.Concurrency), "less than 1")
		}
		c.count(f+"per_conn", int64(t.PerConn))
		if o := t.Open; o != nil {
			c.count(f+"open_loop.arrivals", o.Arrivals)
			c.count(f+"open_loop.dropped", o.Dropped)
			c.duration(f+"open_loop.window_ns", o.Window)
			if s := o.Schedule; s != nil {
				c.count(f+"open_loop.schedule.due", s.Due)
				c.count(f+"open_loop.schedule.started", s.Started)
				c.count(f+"open_loop.schedule.late_1ms", s.Late1ms)
				c.count(f+"open_loop.schedule.late_10ms", s.Late10ms)
				c.hist(f+"open_loop.schedule.lag", s.Lag)
			}
		}
		c.count(f+"round", int64(t.Round))
		c.duration(f+"elapsed_ns", t.Elapsed)
		c.count(f+"ops", t.Ops)
		c.count(f+"queries", t.Queries)
		for _, kind := range sortedKeys(t.Errors) {
			c.count(fmt.Sprintf("%serrors[%q]", f, kind), t.Errors[kind])
		}
		c.count(f+"conns", t.Conns)
		c.count(f+"resumed", t.Resumed)
		c.count(f+"bytes_sent", t.BytesSent)
		c.count(f+"bytes_received", t.BytesReceived)
		c.duration(f+"client_cpu_ns", t.ClientCPU)
		c.duration(f+"server_cpu_ns", t.ServerCPU)
		c.hist(f+"latency", t.Latency)
		for j, p := range t.Phases {
			pf := fmt.Sprintf("%sphases[%d].", f, j)
			rt := p.RoundTrips
			c.count(pf+"round_trips.min", int64(rt.Min))
			c.count(pf+"round_trips.max", int64(rt.Max))
			if rt.Min > rt.Max {
				c.fail(pf+"round_trips.min", strconv.Itoa(rt.Min), fmt.Sprintf("more than round_trips.max (%d)", rt.Max))
			}
			c.float(pf+"round_trips.mean", rt.Mean)
			c.hist(pf+"latency", p.Latency)
		}
	}
	for i, t := range r.Tunnels {
		f := fmt.Sprintf("tunnels[%d].", i)
		c.duration(f+"rtt_ns", t.RTT)
		for j, s := range t.Setup {
			c.duration(fmt.Sprintf("%ssetup[%d].duration_ns", f, j), s.Duration)
			c.count(fmt.Sprintf("%ssetup[%d].round_trips", f, j), int64(s.RoundTrips))
		}
		c.count(f+"bytes_sent", t.BytesSent)
		c.count(f+"bytes_received", t.BytesReceived)
	}
	for i, cl := range r.Ceilings {
		c.float(fmt.Sprintf("ceilings[%d].sign_per_sec", i), cl.SignPerSec)
		c.count(fmt.Sprintf("ceilings[%d].cores", i), int64(cl.Cores))
	}
	for i, p := range r.Crypto {
		c.count(fmt.Sprintf("crypto[%d].size", i), int64(p.Size))
		c.count(fmt.Sprintf("crypto[%d].key_share", i), int64(p.KeyShare))
		c.float(fmt.Sprintf("crypto[%d].per_core", i), p.PerCore)
		c.float(fmt.Sprintf("crypto[%d].all_cores", i), p.AllCores)
	}
	if c.err != nil {
		return c.err
	}
	return nil
}

// fieldError is one value a result cannot hold.
type fieldError struct {
	field, value, why string
}

func (e *fieldError) Error() string {
	s := e.field + " is " + e.value
	if e.why != "" {
		s += ", " + e.why
	}
	return s
}

// checker keeps the first field that fails.
type checker struct{ err *fieldError }

func (c *checker) fail(field, value, why string) {
	if c.err == nil {
		c.err = &fieldError{field, value, why}
	}
}

func (c *checker) count(field string, n int64) {
	if n < 0 {
		c.fail(field, strconv.FormatInt(n, 10), "")
	}
}

func (c *checker) duration(field string, d time.Duration) { c.count(field, int64(d)) }

// float checks a measured figure: finite and not negative.
func (c *checker) float(field string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		c.fail(field, strconv.FormatFloat(x, 'g', -1, 64), "")
	}
}

func (c *checker) hist(field string, h Hist) {
	c.count(field+".count", h.Count)
	for _, x := range []struct {
		name string
		v    float64
	}{{"mean_ms", h.Mean}, {"stddev_ms", h.StdDev}, {"p50_ms", h.P50}, {"p95_ms", h.P95}, {"p99_ms", h.P99}, {"max_ms", h.Max}} {
		c.float(field+"."+x.name, x.v)
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
