package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// Part is one shard's result as merge reads it, with where it came from
// (a file, or a file and the frame in it) for the messages.
type Part struct {
	Name   string
	Result *Result
}

// mergeHists adds histograms exactly, from their HDR encodings (their
// counts add).
func mergeHists(hs ...Hist) (Hist, error) {
	in := make([]stats.Hist, len(hs))
	for i, h := range hs {
		in[i] = stats.Hist(h)
	}
	sum, err := stats.MergeHists(in...)
	return Hist(sum), err
}

// Skew bounds of Merge: the shards' measured windows of one trial may
// start this far apart (SkewShare of the trial's duration, at least
// SkewFloor) before the merge warns that they did not run as one trial.
const (
	SkewShare = 0.05
	SkewFloor = 20 * time.Millisecond
)

// Merge joins the results of the shards of one run (--shard I/N) into the
// result of the whole run: the same plan (spec but the shard index, the
// same start), shards 0 to N-1 each once. Operations, counts, CPU and
// rates add; histograms merge exactly; each shard's machine and
// schedule is kept in Shards, and the spread of the trials' starts and
// ends across shards in Skew. Trials that not every shard finished are
// left out, and said in Error. command is the merge's command line.
func Merge(parts []Part, command []string) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("no shard results to merge")
	}
	for _, p := range parts {
		if p.Result.Shard == nil {
			return nil, fmt.Errorf("%s is not a shard's result (it was run without --shard)", p.Name)
		}
		if p.Result.Capture != nil || len(p.Result.WireChecks) > 0 || len(p.Result.Crypto) > 0 {
			return nil, fmt.Errorf("%s: only connect, pool, stream and storm runs are sharded and merged", p.Name)
		}
	}
	n := parts[0].Result.Shard.Count
	byIndex := make([]*Part, n)
	for i := range parts {
		p := &parts[i]
		sh := p.Result.Shard
		if sh.Count != n {
			return nil, fmt.Errorf("%s is shard %d/%d but %s is shard %d/%d: not one run", p.Name, sh.Index, sh.Count, parts[0].Name, parts[0].Result.Shard.Index, n)
		}
		if sh.Index < 0 || sh.Index >= n {
			return nil, fmt.Errorf("%s: shard index %d is out of 0 to %d", p.Name, sh.Index, n-1)
		}
		if prev := byIndex[sh.Index]; prev != nil {
			return nil, fmt.Errorf("shard %d/%d is given twice: %s and %s", sh.Index, n, prev.Name, p.Name)
		}
		byIndex[sh.Index] = p
	}
	for i, p := range byIndex {
		if p == nil {
			return nil, fmt.Errorf("shard %d/%d is missing: merge needs every shard, 0 to %d", i, n, n-1)
		}
	}
	first := byIndex[0]
	for _, p := range byIndex[1:] {
		if err := samePlan(first, p); err != nil {
			return nil, err
		}
	}

	out := New()
	r0 := first.Result
	out.Tool, out.Env, out.Command = r0.Tool, r0.Env, command
	out.Spec, out.Variants, out.Target = r0.Spec, r0.Variants, r0.Target
	out.Spec.Shard = nil // the whole run: Shards has each part
	out.Checks, out.Tunnels, out.Ceilings, out.PlannedTrials = r0.Checks, r0.Tunnels, r0.Ceilings, r0.PlannedTrials
	trials := len(r0.Trials)
	var errs []string
	for _, p := range byIndex {
		r := p.Result
		if out.Started.IsZero() || r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Ended.After(out.Ended) {
			out.Ended = r.Ended
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("shard %d: %s", r.Shard.Index, r.Error))
		}
		for _, note := range r.Notes {
			if !slices.Contains(out.Notes, note) {
				out.Notes = append(out.Notes, note)
			}
		}
		for _, w := range r.Warnings {
			if !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		trials = min(trials, len(r.Trials))
		sh := *r.Shard
		env := r.Env
		sh.Env, sh.Command, sh.Started, sh.Ended = &env, r.Command, r.Started, r.Ended
		sh.Interrupted, sh.Error = r.Interrupted, r.Error
		out.Shards = append(out.Shards, sh)
	}
	for _, p := range byIndex {
		if left := len(p.Result.Trials) - trials; left > 0 {
			errs = append(errs, fmt.Sprintf("shard %d finished %d trials the others did not: left out", p.Result.Shard.Index, left))
		}
	}
	out.Error = strings.Join(errs, "; ")

	skew := &Skew{Bound: max(SkewFloor, time.Duration(SkewShare*float64(r0.Spec.Duration)))}
	for k := range trials {
		ts := make([]Trial, n)
		for i, p := range byIndex {
			ts[i] = p.Result.Trials[k]
		}
		t, err := mergeTrial(ts)
		if err != nil {
			return nil, fmt.Errorf("trial %d (%s %s round %d): %w", k, ts[0].Experiment, ts[0].Variant, ts[0].Round, err)
		}
		out.Trials = append(out.Trials, t)
		start, end := spread(ts)
		skew.StartSpread, skew.EndSpread = max(skew.StartSpread, start), max(skew.EndSpread, end)
	}
	out.Skew = skew
	note := fmt.Sprintf("%d client machines (shards merged): the trials' measured windows started up to %s apart across shards and ended up to %s apart",
		n, skew.StartSpread.Round(time.Microsecond), skew.EndSpread.Round(time.Microsecond))
	if skew.StartSpread > skew.Bound {
		note += fmt.Sprintf("; warning: above the bound of %s (%g%% of -d, at least %s): the shards' clocks or setups disagree, and their trials did not run as one", skew.Bound, 100*SkewShare, SkewFloor)
	}
	out.Notes = append(out.Notes, note)
	if out.Target.Server == nil {
		out.Notes = append(out.Notes, "server CPU: not measured (each shard measured only its own client CPU, summed here)")
	}
	return out, nil
}

// samePlan refuses a shard whose plan differs from shard 0's: its spec
// but the index (the start included), or its variants.
func samePlan(a, b *Part) error {
	sa, sb := a.Result.Spec, b.Result.Spec
	if !sa.Shard.StartAt.Equal(sb.Shard.StartAt) {
		return fmt.Errorf("%s starts at %s but %s at %s: shards of one run share --start-at", b.Name, sb.Shard.StartAt.Format(time.RFC3339Nano), a.Name, sa.Shard.StartAt.Format(time.RFC3339Nano))
	}
	if field := specDiff(sa, sb); field != "" {
		return fmt.Errorf("%s ran another plan than %s: spec.%s differs", b.Name, a.Name, field)
	}
	if !reflect.DeepEqual(a.Result.Variants, b.Result.Variants) {
		return fmt.Errorf("%s ran other variants than %s", b.Name, a.Name)
	}
	return nil
}

// specDiff names the first JSON field in which two specs differ, the
// shard index aside; "" if none.
func specDiff(a, b any) string {
	fields := func(v any) map[string]json.RawMessage {
		data, _ := json.Marshal(v)
		var m map[string]json.RawMessage
		json.Unmarshal(data, &m)
		if sh, ok := m["shard"]; ok {
			var s map[string]any
			json.Unmarshal(sh, &s)
			delete(s, "index")
			m["shard"], _ = json.Marshal(s)
		}
		return m
	}
	fa, fb := fields(a), fields(b)
	var keys []string
	for k := range fa {
		keys = append(keys, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if string(fa[k]) != string(fb[k]) {
			return k
		}
	}
	return ""
}

// spread is how far apart the shards' measured windows of one trial
// started and ended.
func spread(ts []Trial) (start, end time.Duration) {
	s0, s1 := ts[0].Start, ts[0].Start
	e0, e1 := ts[0].Start.Add(ts[0].Elapsed), ts[0].Start.Add(ts[0].Elapsed)
	for _, t := range ts[1:] {
		e := t.Start.Add(t.Elapsed)
		s0, s1 = earliest(s0, t.Start), latest(s1, t.Start)
		e0, e1 = earliest(e0, e), latest(e1, e)
	}
	return s1.Sub(s0), e1.Sub(e0)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeTrial joins the shards' parts of one trial: the same experiment,
// variant, round and operations per connection on every shard.
func mergeTrial(ts []Trial) (Trial, error) {
	t := ts[0]
	t.Errors, t.ErrorSamples = nil, nil
	t.Ops, t.Queries, t.Conns, t.Resumed, t.BytesSent, t.BytesReceived = 0, 0, 0, 0, 0, 0
	t.ClientCPU, t.ServerCPU, t.Concurrency = 0, 0, 0
	t.Phases, t.Negotiated = nil, nil
	var rate float64
	var end time.Time
	for _, p := range ts {
		if p.Experiment != t.Experiment || p.Variant != t.Variant || p.Round != t.Round || p.PerConn != t.PerConn {
			return t, fmt.Errorf("a shard ran %s %s round %d there: not one plan", p.Experiment, p.Variant, p.Round)
		}
		if p.Wire != nil {
			return t, errors.New("a wire trial cannot be merged")
		}
		t.Start = earliest(t.Start, p.Start)
		end = latest(end, p.Start.Add(p.Elapsed))
		rate += p.Throughput()
		t.Concurrency += p.Concurrency
		t.Ops += p.Ops
		t.Queries += p.Queries
		t.Conns += p.Conns
		t.Resumed += p.Resumed
		t.BytesSent += p.BytesSent
		t.BytesReceived += p.BytesReceived
		t.ClientCPU += p.ClientCPU
		t.ServerCPU += p.ServerCPU
		for kind, n := range p.Errors {
			if t.Errors == nil {
				t.Errors, t.ErrorSamples = map[string]int64{}, map[string]string{}
			}
			t.Errors[kind] += n
			if _, ok := t.ErrorSamples[kind]; !ok {
				t.ErrorSamples[kind] = p.ErrorSamples[kind]
			}
		}
		if t.Negotiated == nil {
			t.Negotiated = p.Negotiated
		}
		if t.ServerMemory == nil {
			t.ServerMemory = p.ServerMemory
		}
		// Each shard chose how its workers waited: the distinct choices.
		switch {
		case p.ClientWait == "" || slices.Contains(strings.Split(t.ClientWait, "; "), p.ClientWait):
		case t.ClientWait == "":
			t.ClientWait = p.ClientWait
		default:
			t.ClientWait += "; " + p.ClientWait
		}
	}
	// Throughput is the sum of the shards' rates: each shard's operations
	// over its own window, which the shards' clocks agree on only so far.
	t.Elapsed = end.Sub(t.Start)
	if rate > 0 {
		t.Elapsed = time.Duration(float64(t.Ops) / rate * float64(time.Second))
	}
	var err error
	if t.Latency, err = mergeHists(pick(ts, func(t Trial) Hist { return t.Latency })...); err != nil {
		return t, fmt.Errorf("latency: %w", err)
	}
	if t.Phases, err = mergePhases(ts); err != nil {
		return t, err
	}
	if t.Open, err = mergeOpen(ts); err != nil {
		return t, err
	}
	if t.Storm, err = mergeStorm(ts); err != nil {
		return t, err
	}
	return t, nil
}

func pick[T any](ts []Trial, f func(Trial) T) []T {
	out := make([]T, 0, len(ts))
	for _, t := range ts {
		out = append(out, f(t))
	}
	return out
}

// mergePhases joins phases by name, in the order they first appear: their
// histograms merge, round trips keep the extremes and weigh the means by
// the samples.
func mergePhases(ts []Trial) ([]Phase, error) {
	var names []string
	for _, t := range ts {
		for _, p := range t.Phases {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	var out []Phase
	for _, name := range names {
		var hs []Hist
		ph := Phase{Name: name}
		var samples int64
		var sum float64
		for _, t := range ts {
			for _, p := range t.Phases {
				if p.Name != name {
					continue
				}
				hs = append(hs, p.Latency)
				if samples == 0 || p.RoundTrips.Min < ph.RoundTrips.Min {
					ph.RoundTrips.Min = p.RoundTrips.Min
				}
				ph.RoundTrips.Max = max(ph.RoundTrips.Max, p.RoundTrips.Max)
				samples += p.Latency.Count
				sum += p.RoundTrips.Mean * float64(p.Latency.Count)
			}
		}
		if samples > 0 {
			ph.RoundTrips.Mean = sum / float64(samples)
		}
		var err error
		if ph.Latency, err = mergeHists(hs...); err != nil {
			return nil, fmt.Errorf("phase %s: %w", name, err)
		}
		out = append(out, ph)
	}
	return out, nil
}

// mergeOpen joins the open-loop figures of a trial at a rate: the shards'
// rates, slots, arrivals, drops and schedule counts add, their lag
// histograms merge; the window is the longest. The schedule is kept only
// if every shard measured it.
func mergeOpen(ts []Trial) (*OpenLoop, error) {
	if ts[0].Open == nil {
		return nil, nil
	}
	o := *ts[0].Open
	o.Offered, o.Slots, o.Arrivals, o.Dropped, o.Window = 0, 0, 0, 0, 0
	o.Schedule = &Schedule{}
	var hs, lags []Hist
	for _, t := range ts {
		p := t.Open
		if p == nil {
			return nil, errors.New("a shard ran it as a closed loop, another at a rate")
		}
		o.Offered += p.Offered
		o.Slots += p.Slots
		o.Arrivals += p.Arrivals
		o.Dropped += p.Dropped
		o.Window = max(o.Window, p.Window)
		hs = append(hs, p.Service)
		if s := p.Schedule; s != nil && o.Schedule != nil {
			o.Schedule.Due += s.Due
			o.Schedule.Started += s.Started
			o.Schedule.Late1ms += s.Late1ms
			o.Schedule.Late10ms += s.Late10ms
			lags = append(lags, s.Lag)
		} else {
			o.Schedule = nil
		}
	}
	var err error
	if o.Service, err = mergeHists(hs...); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	if o.Schedule != nil {
		if o.Schedule.Lag, err = mergeHists(lags...); err != nil {
			return nil, fmt.Errorf("schedule lag: %w", err)
		}
	}
	return &o, nil
}

// mergeStorm joins a storm's figures: clients add, the times until all
// were done and the dial spreads are the longest (each shard's own
// clock), the holds merge; the listen-queue counters are each machine's
// own, of which the largest is kept.
func mergeStorm(ts []Trial) (*Storm, error) {
	if ts[0].Storm == nil {
		return nil, nil
	}
	var s Storm
	var holds, toDials []Hist
	for _, t := range ts {
		p := t.Storm
		if p == nil {
			continue
		}
		if p.ToDial != nil {
			toDials = append(toDials, *p.ToDial)
		}
		s.Clients += p.Clients
		s.Connected += p.Connected
		s.FirstOps += p.FirstOps
		s.AllConnected, s.LastFirstOp = max(s.AllConnected, p.AllConnected), max(s.LastFirstOp, p.LastFirstOp)
		s.DialSpread = max(s.DialSpread, p.DialSpread)
		if p.Hold != nil {
			holds = append(holds, *p.Hold)
		}
		if l := p.Listen; l != nil && (s.Listen == nil || l.Overflows+l.Drops > s.Listen.Overflows+s.Listen.Drops) {
			c := *l
			s.Listen = &c
		}
	}
	if len(holds) > 0 {
		h, err := mergeHists(holds...)
		if err != nil {
			return nil, fmt.Errorf("storm hold: %w", err)
		}
		s.Hold = &h
	}
	if len(toDials) > 0 {
		h, err := mergeHists(toDials...)
		if err != nil {
			return nil, fmt.Errorf("storm to dial: %w", err)
		}
		s.ToDial = &h
	}
	return &s, nil
}
