package plan

import (
	"slices"
	"strconv"
)

// MaxPerConn bounds the operations one connection of the connect
// experiment runs before it closes (Spec.PerConn).
const MaxPerConn = 100000

// perConn validates Spec.PerConn. Its default, nil, is one operation per
// connection, the connect experiment as it always was (PerConnections),
// and stays nil so that a run without --per-conn records no field.
func (s *Spec) perConn() error {
	if len(s.PerConn) > 0 && !slices.Contains(s.Experiments, Connect) {
		return errorf("⟨per_conn⟩ applies to the connect experiment (new connections): pool and stream keep theirs open; run connect")
	}
	for _, n := range s.PerConn {
		if n < 1 || n > MaxPerConn {
			return errorf("⟨per_conn⟩: %d is out of range: use 1 to %d operations per connection", n, MaxPerConn)
		}
	}
	if err := twice("⟨per_conn⟩", s.PerConn, strconv.Itoa); err != nil {
		return err
	}
	if most := slices.Max(append([]int{1}, s.PerConn...)); s.Count > 0 && s.Count < int64(most) {
		return errorf("⟨count⟩ %d is fewer operations than one connection runs (⟨per_conn⟩ %d): give ⟨count⟩ %d or more", s.Count, most, most)
	}
	return nil
}

// PerConnections lists the operations per connection the connect
// experiment runs, one trial cell each: [1] for a spec written before
// Spec.PerConn (and for e, an experiment other than connect, which keeps
// its connections open).
func (s Spec) PerConnections(e Experiment) []int {
	if e != Connect || len(s.PerConn) == 0 {
		return []int{1}
	}
	return s.PerConn
}

// PerConnLabel is the text of a per-connection column or row in tables.
func PerConnLabel(n int) string { return "per-conn " + strconv.Itoa(n) }
