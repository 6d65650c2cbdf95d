package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shard is one client machine's part of a run split over Count machines
// (--shard INDEX/COUNT): it runs its share of the plan's workers,
// connections, counts and rates (Share), every trial in a slot of fixed
// wall-clock time from StartAt (Slot), so that trial k runs at the same
// moment on every shard with no coordination beyond synchronized clocks.
// `tlsbench merge` joins the shards' results.
type Shard struct {
	// Index counts from 0, as Kubernetes' JOB_COMPLETION_INDEX.
	Index   int       `json:"index"`
	Count   int       `json:"count"`
	StartAt time.Time `json:"start_at"`
}

// Setup allowances of a trial's slot (see Slot).
const (
	// SlotSetup is every trial's allowance for its setup and for the
	// operations in flight at its end.
	SlotSetup = time.Second
	// SlotPerConn is the allowance for each connection of the whole plan
	// a trial opens or holds (pool's sessions, a storm's clients).
	SlotPerConn = time.Millisecond
	// SlotRTTs is how many emulated round trips the setup allows on top.
	SlotRTTs = TimeoutRTTs
)

// ParseShard reads --shard INDEX/COUNT: INDEX counts from 0.
func ParseShard(v string) (index, count int, err error) {
	i, n, ok := strings.Cut(strings.TrimSpace(v), "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q is not INDEX/COUNT: give e.g. 0/2 (INDEX counts from 0, as JOB_COMPLETION_INDEX)", v)
	}
	if count < 1 || index < 0 || index >= count {
		return 0, 0, fmt.Errorf("%s: INDEX counts from 0 to COUNT-1: use 0/%d to %d/%d", v, max(count, 1), max(count, 1)-1, max(count, 1))
	}
	return index, count, nil
}

// ParseStartAt reads --start-at: an RFC 3339 time, or +DURATION from now
// rounded up to the next whole second (processes started together agree).
// Each machine resolves +DURATION by its own clock, so shards started
// apart in time must be given one RFC 3339 time.
func ParseStartAt(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if rel, ok := strings.CutPrefix(v, "+"); ok {
		d, err := time.ParseDuration(rel)
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("%q is not a time: give RFC 3339 (2025-06-01T12:00:00Z) or +DURATION from now (+30s)", v)
		}
		return now.Add(d).Truncate(time.Second).Add(time.Second).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time: give RFC 3339 (2025-06-01T12:00:00Z) or +DURATION from now (+30s)", v)
	}
	return t.UTC(), nil
}

// share is index's part of total over count shards, the remainder going
// to the lowest indexes.
func share(total, index, count int) int {
	n := total / count
	if index < total%count {
		n++
	}
	return n
}

// Share is the spec a shard runs: its part of the workers and
// connections (⟨concurrency⟩, ⟨clients⟩, ⟨max_inflight⟩), of ⟨count⟩ and
// of ⟨rates⟩. Without a Shard it is s itself.
func (s Spec) Share() Spec {
	sh := s.Shard
	if sh == nil || sh.Count == 1 {
		return s
	}
	split := func(list []int) []int {
		out := make([]int, len(list))
		for i, c := range list {
			out[i] = share(c, sh.Index, sh.Count)
		}
		return out
	}
	s.Concurrency, s.Clients = split(s.Concurrency), split(s.Clients)
	if s.MaxInflight > 0 {
		s.MaxInflight = share(s.MaxInflight, sh.Index, sh.Count)
	}
	if s.Count > 0 {
		s.Count = int64(share(int(s.Count), sh.Index, sh.Count))
	}
	if len(s.Rates) > 0 {
		rates := make([]float64, len(s.Rates))
		for i, r := range s.Rates {
			rates[i] = r / float64(sh.Count)
		}
		s.Rates = rates
	}
	return s
}

// Slot is the wall-clock time a trial of experiment e at the plan's
// concurrency c gets on every shard: a setup allowance (SlotSetup, plus
// SlotPerConn per connection of c, plus SlotRTTs of the largest emulated
// RTT), the warm-up of experiments that warm up, and the trial's time
// bound: -d, or for a storm, which ends when its slowest client is done,
// ⟨timeout⟩ per step (connect, then the first operation).
func (s Spec) Slot(e Experiment, c int) time.Duration {
	slot := SlotSetup + time.Duration(c)*SlotPerConn
	if len(s.RTT) > 0 {
		slot += SlotRTTs * slices.Max(s.RTT)
	}
	switch e {
	case Pool, Stream:
		slot += s.WarmupTime() + s.Duration
	case Storm:
		slot += s.Timeout
		if s.FirstOp {
			slot += s.Timeout
		}
	default:
		slot += s.Duration
	}
	return slot
}

// shardSearch refuses a rate search split over shards. It runs before the
// open-loop checks (rate), whose complaints (e.g. about ⟨concurrency⟩ at a
// rate) would hide that the search itself cannot be sharded.
func (s *Spec) shardSearch() error {
	if s.Shard != nil && s.Knee != nil {
		return errorf("⟨shard⟩ with a rate search (⟨rates⟩ auto or FROM..TO): each step depends on what the last trial saw, which shards cannot agree on: search on one client machine, or give the shards fixed ⟨rates⟩ (e.g. --rate 200,400, split evenly over them)")
	}
	return nil
}

// shard validates Shard; raw is the duration given, before its default.
func (s *Spec) shard(t Target, raw time.Duration, now time.Time) error {
	sh := s.Shard
	if sh == nil {
		return nil
	}
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return errorf("⟨shard⟩ %d/%d: the index counts from 0 to COUNT-1: use 0/%d to %d/%d", sh.Index, sh.Count, max(sh.Count, 1), max(sh.Count, 1)-1, max(sh.Count, 1))
	}
	if t.Builtin || t.Lab != "" {
		return errorf("⟨shard⟩ splits the clients of a run over machines and a server tlsbench starts runs on one of them: give the URL of one server (e.g. of tlsbench serve or tlsbench lab there)")
	}
	if sh.StartAt.IsZero() {
		return errorf("⟨shard⟩ needs ⟨start_at⟩, the moment every shard starts its first trial (RFC 3339, the same on every shard)")
	}
	if !sh.StartAt.After(now) {
		return errorf("⟨start_at⟩ %s is in the past (now %s): give a later time", sh.StartAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if s.Preset != "" && s.Preset != PresetDefault {
		return errorf("⟨shard⟩ does not apply to ⟨preset⟩ %s, whose loops run one client at a time: run connect or pool", s.Preset)
	}
	if s.Count > 0 && raw == 0 {
		return errorf("⟨shard⟩ with ⟨count⟩ needs ⟨duration⟩ too: it bounds each trial's slot, which every shard keeps whatever its count")
	}
	tooFew := func(field string, n int) error {
		return errorf("⟨%s⟩ %d split over %d shards leaves shard %d none: give fewer shards or a larger ⟨%s⟩", field, n, sh.Count, sh.Count-1, field)
	}
	for _, e := range s.Experiments {
		field := "concurrency"
		switch {
		case e == Storm:
			field = "clients"
		case e == Connect && s.OpenLoop():
			field = "max_inflight"
		}
		for _, c := range s.ConcurrencyFor(e) {
			if c < sh.Count {
				return tooFew(field, c)
			}
		}
	}
	if s.Count > 0 && s.Count < int64(sh.Count) {
		return tooFew("count", int(s.Count))
	}
	if s.MaxInflight > 0 && s.MaxInflight < sh.Count {
		return tooFew("max_inflight", s.MaxInflight)
	}
	return nil
}
