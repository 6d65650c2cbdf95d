package advise

import (
	"slices"
	"testing"

	"github.com/tlsbench/tlsbench/internal/report"
)

// TestChangeIDs: every change the advice gives has an ID of its own that
// a gate's selector names (advise[tls1.3]), as report lists them.
func TestChangeIDs(t *testing.T) {
	var ids []string
	for _, c := range changes {
		id := report.AdviceID(c.name)
		if !slices.Contains(report.AdviceIDs, id) {
			t.Errorf("change %q has no ID in report.adviceIDs (it would be %q)", c.name, id)
		}
		if slices.Contains(ids, id) {
			t.Errorf("ID %q names two changes", id)
		}
		ids = append(ids, id)
	}
	if len(ids) != len(report.AdviceIDs) {
		t.Errorf("report.AdviceIDs has %d IDs, the advice %d changes", len(report.AdviceIDs), len(ids))
	}
}
