package plan

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/host"
)

// TestClientCPUList: New keeps --client-cpus parsed, sorted, beside its
// canonical spelling.
func TestClientCPUList(t *testing.T) {
	avail := host.CPUs()
	want := avail[:min(2, len(avail))]
	var given []string // last first
	for _, c := range slices.Backward(want) {
		given = append(given, strconv.Itoa(c))
	}
	s, err := New(Spec{ClientCPUs: strings.Join(given, ",")})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ClientCPUList(); !slices.Equal(got, want) || s.ClientCPUs != host.FormatCPUList(want) {
		t.Errorf("ClientCPUs %q: ClientCPUList() = %v, ClientCPUs %q; want %v", given, got, s.ClientCPUs, want)
	}
	if s, err := New(Spec{}); err != nil || s.ClientCPUList() != nil {
		t.Errorf("without --client-cpus: %v, %v", s.ClientCPUList(), err)
	}
}
