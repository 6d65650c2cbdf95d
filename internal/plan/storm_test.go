package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestStormSpec: a storm's clients default to DefaultStormClients and
// are its concurrencies; its flags apply to it alone.
func TestStormSpec(t *testing.T) {
	s, err := New(Spec{Experiments: []Experiment{Storm}, TLS: []string{"off"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Clients, []int{DefaultStormClients}) || !slices.Equal(s.ConcurrencyFor(Storm), s.Clients) || !slices.Equal(s.ConcurrencyFor(Pool), s.Concurrency) {
		t.Errorf("clients %v, storm concurrencies %v, pool's %v", s.Clients, s.ConcurrencyFor(Storm), s.ConcurrencyFor(Pool))
	}
	for _, tt := range []struct {
		spec Spec
		want string
	}{
		{Spec{Experiments: []Experiment{Pool}, Clients: []int{10}}, "clients applies to the storm experiment"},
		{Spec{Experiments: []Experiment{Connect}, FirstOp: true}, "first_op applies to the storm experiment"},
		{Spec{Experiments: []Experiment{Storm}, Clients: []int{-1}}, "clients: -1 is out of range"},
		{Spec{Experiments: []Experiment{Storm}, Clients: []int{2, 2}}, "clients: 2 is given twice"},
	} {
		_, err := New(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.spec, err, tt.want)
		}
	}
}
