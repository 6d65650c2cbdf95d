package gate

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// entry is one gate of a --gates file: an expression, or a name and one.
type entry struct {
	Name string `json:"name"`
	Gate string `json:"gate"`
}

// ReadFile parses a --gates file: a YAML list whose items are expressions
// or {name: NAME, gate: EXPR}.
//
//   - connect[*].roundtrips.tls-handshake <= 1
//   - name: tls13-p99
//     gate: connect[tls1.3].overhead.p99 < 40% @ci95
func ReadFile(path string) ([]Gate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--gates: %w", err)
	}
	var items []json.RawMessage
	if err := yaml.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("--gates %s: not a YAML list of gates (%v): write one '- EXPR' or '- {name: N, gate: EXPR}' a line", path, err)
	}
	var gates []Gate
	for i, raw := range items {
		var e entry
		if err := json.Unmarshal(raw, &e.Gate); err != nil {
			if err := yaml.UnmarshalStrict(raw, &e); err != nil || e.Gate == "" {
				return nil, fmt.Errorf("--gates %s: item %d is neither an expression nor {name: N, gate: EXPR}", path, i+1)
			}
		}
		g, err := Parse(e.Gate)
		if err != nil {
			return nil, fmt.Errorf("--gates %s: item %d: %w", path, i+1, err)
		}
		if e.Name != "" {
			g.Name = e.Name
		}
		gates = append(gates, g)
	}
	if len(gates) == 0 {
		return nil, fmt.Errorf("--gates %s: no gates in it: list one '- EXPR' a line", path)
	}
	return gates, nil
}
