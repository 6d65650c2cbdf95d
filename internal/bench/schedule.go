package bench

import (
	"context"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// slots is a shard's schedule (plan.Shard): trial k starts when the slots
// of the k trials before it have passed since StartAt, whenever they
// really ended, so that every shard runs trial k at the same moment. A
// trial that begins late or overruns is marked, not moved or cut: its
// figures are whole, and the merge's skew and the report say how far the
// shards missed one another. A nil *slots is a whole run: no waiting.
type slots struct {
	plan  plan.Spec // the whole plan, not the shard's share
	next  time.Time
	cur   result.Slot
	marks []result.Slot
}

func newSlots(spec plan.Spec) *slots {
	if spec.Shard == nil {
		return nil
	}
	return &slots{plan: spec, next: spec.Shard.StartAt}
}

// length is the slot of every trial of experiment e: plan.Slot at the
// largest of e's concurrency cells of the whole plan, the same on every
// shard.
func (s *slots) length(e plan.Experiment) time.Duration {
	return s.plan.Slot(e, slices.Max(s.plan.ConcurrencyFor(e)))
}

// wait takes the next slot for a trial of e and sleeps until it begins.
func (s *slots) wait(ctx context.Context, e plan.Experiment) error {
	if s == nil {
		return nil
	}
	s.cur = result.Slot{Start: s.next, Length: s.length(e)}
	s.next = s.next.Add(s.cur.Length)
	if d := time.Until(s.cur.Start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if late := time.Since(s.cur.Start); late > result.SlotTolerance {
		s.cur.Late = late
	}
	return ctx.Err()
}

// end marks the trial of the current slot done.
func (s *slots) end() {
	if s == nil {
		return
	}
	if over := time.Since(s.cur.Start.Add(s.cur.Length)); over > result.SlotTolerance {
		s.cur.Overrun = over
	}
	s.marks = append(s.marks, s.cur)
}

// shard is the result's account of the schedule so far.
func (s *slots) shard() *result.Shard {
	if s == nil {
		return nil
	}
	sh := s.plan.Shard
	return &result.Shard{Index: sh.Index, Count: sh.Count, StartAt: sh.StartAt, Slots: slices.Clone(s.marks)}
}
