package export

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Grafana dashboard queries only series the exporters emit, and
// every one of them.
func TestDashboardNames(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/tlsbench.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana/tlsbench.json: %v", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("%d queries in the dashboard", len(exprs))
	}
	used := map[string]bool{}
	name := regexp.MustCompile(`\btlsbench_[a-z_]+`)
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			// A summary's (histogram's) series add _count and _sum.
			if base, ok := strings.CutSuffix(n, "_count"); ok && slices.Contains([]string{LatencySeconds, PhaseSeconds}, base) {
				n = base
			} else if base, ok := strings.CutSuffix(n, "_sum"); ok && slices.Contains([]string{LatencySeconds, PhaseSeconds}, base) {
				n = base
			}
			if !slices.Contains(Names, n) {
				t.Errorf("the dashboard queries %s, which tlsbench does not export: %s", n, e)
			}
			used[n] = true
		}
	}
	for _, n := range Names {
		if !used[n] {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
}
