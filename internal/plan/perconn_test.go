package plan

import (
	"slices"
	"strings"
	"testing"
)

func TestPerConn(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []int  // PerConn after New
		err  string // part of the error, "" for none
	}{
		{"default: one per connection", Spec{}, nil, ""},
		{"a sweep, kept in order", Spec{PerConn: []int{100, 1, 10}}, []int{100, 1, 10}, ""},
		{"the most", Spec{PerConn: []int{MaxPerConn}}, []int{MaxPerConn}, ""},
		{"pool only: none", Spec{Experiments: []Experiment{Pool}}, nil, ""},
		{"pool and connect", Spec{Experiments: []Experiment{Pool, Connect}, PerConn: []int{3}}, []int{3}, ""},
		{"zero", Spec{PerConn: []int{0}}, nil, "per_conn: 0 is out of range: use 1 to 100000 operations per connection"},
		{"too many", Spec{PerConn: []int{MaxPerConn + 1}}, nil, "per_conn: 100001 is out of range"},
		{"twice", Spec{PerConn: []int{1, 3, 1}}, nil, "per_conn: 1 is given twice"},
		{"pool", Spec{Experiments: []Experiment{Pool}, PerConn: []int{3}}, nil, "per_conn applies to the connect experiment"},
		{"count below one connection", Spec{PerConn: []int{1, 100}, Count: 50}, nil, "count 50 is fewer operations than one connection runs (per_conn 100): give count 100 or more"},
		{"count of one connection", Spec{PerConn: []int{100}, Count: 100}, []int{100}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.spec)
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			case tt.err != "":
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is more than one line", err)
				}
				return
			}
			if !slices.Equal(s.PerConn, tt.want) {
				t.Errorf("PerConn = %v, want %v", s.PerConn, tt.want)
			}
			if want := append([]int{1}, tt.want...)[min(1, len(tt.want)):]; !slices.Equal(s.PerConnections(Connect), want) {
				t.Errorf("PerConnections(connect) = %v, want %v", s.PerConnections(Connect), want)
			}
			if got := s.PerConnections(Connect); len(tt.want) > 0 && !slices.Equal(got, tt.want) {
				t.Errorf("PerConnections(connect) = %v, want %v", got, tt.want)
			}
			if got := s.PerConnections(Pool); !slices.Equal(got, []int{1}) {
				t.Errorf("PerConnections(pool) = %v, want [1]", got)
			}
		})
	}
}
