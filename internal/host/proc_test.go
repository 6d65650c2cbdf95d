package host

import "testing"

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat    string
		want    Stat
		wantErr bool
	}{
		{"1234 (tlsbench) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 10 5 20 0 8 0 100 0 0", Stat{State: "S", PPID: 1, Ticks: 340, ChildTicks: 15, Threads: 8, Start: 100}, false},
		{"1234 (a) b) c) R 1 77 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 8 0 100 0 0", Stat{State: "R", PPID: 1, Ticks: 3, Threads: 8, Start: 100}, false},
		{"1234 tlsbench S 1", Stat{}, true},
		{"1234 (tlsbench) S 1 2 3", Stat{}, true},
		{"1234 (tlsbench) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 10 5", Stat{}, true},
		{"1234 (tlsbench) S 1 1234 1234 0 -1 4194560 100 0 0 0 x 75 0 0 20 0 8 0 100 0 0", Stat{}, true},
		{"1234 (tlsbench) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 10 5 20 0 8 0 x 0 0", Stat{}, true},
	}
	for _, tt := range tests {
		got, err := ParseStat([]byte(tt.stat))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v, error %v", tt.stat, got, err, tt.want, tt.wantErr)
		}
	}
}
