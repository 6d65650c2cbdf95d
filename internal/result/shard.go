package result

import "time"

// Shard is a run's part of a run split over client machines (--shard
// I/N): its place, the common start and every trial's slot. In a merged
// result (tlsbench merge), Result.Shards holds each shard's, with the
// machine it ran on and how its run ended.
type Shard struct {
	Index   int       `json:"index"` // from 0, as JOB_COMPLETION_INDEX
	Count   int       `json:"count"`
	StartAt time.Time `json:"start_at"`
	// Slots are the trials' slots in the order of Trials (a trial that
	// failed to start has none).
	Slots []Slot `json:"slots,omitempty"`

	// Merged results only: the shard's machine, command line and run.
	Env         *Env      `json:"environment,omitempty"`
	Command     []string  `json:"command,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Ended       time.Time `json:"ended,omitzero"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// Slot is the wall-clock time one trial had on every shard. Late is how
// long after Start it began (a shard that started late, or a trial after
// one that overran), Overrun how long after Start+Length it ended; each
// is kept only beyond SlotTolerance, so that a zero is on time.
type Slot struct {
	Start   time.Time     `json:"start"`
	Length  time.Duration `json:"length_ns"`
	Late    time.Duration `json:"late_ns,omitempty"`
	Overrun time.Duration `json:"overrun_ns,omitempty"`
}

// SlotTolerance is how far a trial may miss its slot's edges and count as
// on time: a timer's wake-up and the trial's own bookkeeping on a loaded
// machine (20 ms seen with two shards on two shared cores).
const SlotTolerance = 50 * time.Millisecond

// Missed counts the slots a shard started late or overran.
func (s Shard) Missed() (late, overrun int) {
	for _, sl := range s.Slots {
		if sl.Late > 0 {
			late++
		}
		if sl.Overrun > 0 {
			overrun++
		}
	}
	return late, overrun
}

// Skew is what a merged result shows of the shards' clocks: for each
// trial, the spread across shards of when its measured window started and
// ended (their clocks' offsets plus their setups' jitter); the largest of
// each. Above Bound, the shards' windows did not overlap as one trial and
// the merge says so in a note.
type Skew struct {
	StartSpread time.Duration `json:"start_spread_ns"`
	EndSpread   time.Duration `json:"end_spread_ns"`
	Bound       time.Duration `json:"bound_ns"`
}
