package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in           string
		index, count int
		err          string
	}{
		{"0/1", 0, 1, ""},
		{"3/4", 3, 4, ""},
		{" 1/2 ", 1, 2, ""},
		{"3/2", 0, 0, "use 0/2 to 1/2"},
		{"2/2", 0, 0, "use 0/2 to 1/2"},
		{"-1/2", 0, 0, "use 0/2 to 1/2"},
		{"0/0", 0, 0, "use 0/1 to 0/1"},
		{"x", 0, 0, "not INDEX/COUNT"},
		{"1", 0, 0, "not INDEX/COUNT"},
		{"a/2", 0, 0, "not INDEX/COUNT"},
	}
	for _, tt := range tests {
		i, n, err := ParseShard(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseShard(%q) error %v, want one with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || i != tt.index || n != tt.count {
			t.Errorf("ParseShard(%q) = %d, %d, %v; want %d, %d", tt.in, i, n, err, tt.index, tt.count)
		}
	}
}

func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 300e6, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"2026-03-01T12:05:00Z", time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), false},
		{"2026-03-01T14:05:00+02:00", time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), false},
		{"+30s", time.Date(2026, 3, 1, 12, 0, 31, 0, time.UTC), false}, // rounded up to the second
		{"+0s", time.Time{}, true},
		{"+-5s", time.Time{}, true},
		{"tomorrow", time.Time{}, true},
		{"12:05", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := ParseStartAt(tt.in, now)
		if tt.bad != (err != nil) || !got.Equal(tt.want) {
			t.Errorf("ParseStartAt(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

// The shares of every shard add up to the plan, the remainder going to the
// lowest indexes; rates split evenly.
func TestShare(t *testing.T) {
	spec := Spec{Concurrency: []int{4, 7}, Count: 10, Rates: []float64{90}, MaxInflight: 5}
	for _, n := range []int{1, 2, 3, 4} {
		var conc [2]int
		var count int64
		var rate float64
		var inflight int
		for i := range n {
			s := spec
			s.Shard = &Shard{Index: i, Count: n}
			sh := s.Share()
			if i > 0 && sh.Concurrency[1] > s.Share().Concurrency[1] {
				t.Errorf("%d/%d: more than a lower shard", i, n)
			}
			conc[0] += sh.Concurrency[0]
			conc[1] += sh.Concurrency[1]
			count += sh.Count
			rate += sh.Rates[0]
			inflight += sh.MaxInflight
		}
		if conc != [2]int{4, 7} || count != 10 || rate != 90 || inflight != 5 {
			t.Errorf("%d shards add up to c %v, count %d, rate %v, max-inflight %d; want [4 7], 10, 90, 5", n, conc, count, rate, inflight)
		}
	}
	s := spec
	s.Shard = &Shard{Index: 0, Count: 3}
	if got := s.Share().Concurrency; !slices.Equal(got, []int{2, 3}) {
		t.Errorf("shard 0/3 of c 4,7: %v, want [2 3]", got)
	}
	s.Shard.Index = 2
	if got := s.Share().Concurrency; !slices.Equal(got, []int{1, 2}) {
		t.Errorf("shard 2/3 of c 4,7: %v, want [1 2]", got)
	}
	if spec.Share().Concurrency[0] != 4 {
		t.Error("a whole run's share is not itself")
	}
}

func TestSlot(t *testing.T) {
	warm := 2 * time.Second
	s := Spec{Duration: 5 * time.Second, Warmup: &warm, Timeout: 3 * time.Second}
	if got, want := s.Slot(Connect, 10), SlotSetup+10*SlotPerConn+5*time.Second; got != want {
		t.Errorf("connect slot %v, want %v", got, want)
	}
	if got, want := s.Slot(Pool, 10), SlotSetup+10*SlotPerConn+7*time.Second; got != want {
		t.Errorf("pool slot %v, want %v", got, want)
	}
	s.FirstOp = true
	if got, want := s.Slot(Storm, 100), SlotSetup+100*SlotPerConn+6*time.Second; got != want {
		t.Errorf("storm slot %v, want %v", got, want)
	}
	s.RTT = []time.Duration{0, 50 * time.Millisecond}
	if got, want := s.Slot(Connect, 10), SlotSetup+10*SlotPerConn+5*time.Second+SlotRTTs*50*time.Millisecond; got != want {
		t.Errorf("connect slot at RTT 50ms %v, want %v", got, want)
	}
}

func TestShardErrors(t *testing.T) {
	url := "http://127.0.0.1:9/"
	soon := time.Now().Add(time.Hour)
	tests := []struct {
		name string
		raw  Spec
		want string
	}{
		{"builtin", Spec{Target: Builtin, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "give the URL of one server"},
		{"lab", Spec{Lab: "postgres", Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "give the URL of one server"},
		{"no start", Spec{Target: url, Shard: &Shard{Index: 0, Count: 2}}, "shard needs start_at"},
		{"past", Spec{Target: url, Shard: &Shard{Index: 0, Count: 2, StartAt: time.Now().Add(-time.Second)}}, "is in the past"},
		{"index", Spec{Target: url, Shard: &Shard{Index: 2, Count: 2, StartAt: soon}}, "use 0/2 to 1/2"},
		{"too few workers", Spec{Target: url, Concurrency: []int{2, 8}, Shard: &Shard{Index: 0, Count: 4, StartAt: soon}}, "concurrency 2 split over 4 shards leaves shard 3 none"},
		{"too few clients", Spec{Target: url, Experiments: []Experiment{Storm}, Clients: []int{3}, Shard: &Shard{Index: 0, Count: 4, StartAt: soon}}, "clients 3 split"},
		{"count without time", Spec{Target: url, Concurrency: []int{2}, Count: 100, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "needs duration"},
		{"too small count", Spec{Target: url, Concurrency: []int{2}, Count: 1, Duration: time.Second, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "count 1 split"},
		{"knee", Spec{Target: url, Experiments: []Experiment{Pool}, Concurrency: []int{2}, Knee: &Knee{From: 10, To: 100}, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "fixed rates"},
		// The README's sharded connect (-c 64) with --rate auto: the
		// conflict is the search, not -c.
		{"knee with -c", Spec{Target: url, Experiments: []Experiment{Connect}, Concurrency: []int{64}, Knee: &Knee{From: KneeFrom, To: MaxRate}, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "shard with a rate search"},
		{"inflight", Spec{Target: url, Rates: []float64{100}, MaxInflight: 1, Shard: &Shard{Index: 0, Count: 2, StartAt: soon}}, "max_inflight 1 split"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.raw)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	ok := Spec{Target: url, Concurrency: []int{4}, Count: 10, Duration: time.Second, Shard: &Shard{Index: 3, Count: 4, StartAt: soon}}
	if _, err := New(ok); err != nil {
		t.Errorf("4 workers and 10 operations over 4 shards: %v", err)
	}
}
