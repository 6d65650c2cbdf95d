package report

import (
	"strings"
	"testing"
	"time"
)

// TestReplicateMoreNodes: a cluster of three nodes shows its third node's
// CPU per write beside the primary's and the replica's; one of two nodes
// shows no such column.
func TestReplicateMoreNodes(t *testing.T) {
	r := replicateResult(t)
	text := func() string {
		var b strings.Builder
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if s := text(); strings.Contains(s, "node 3") {
		t.Errorf("a two-node result shows a third node:\n%s", s)
	}
	for i := range r.Trials {
		r.Trials[i].Replication.NodeCPU = []time.Duration{time.Second, 300 * time.Millisecond, 150 * time.Millisecond}
	}
	if s := text(); !strings.Contains(s, "node 3 µs/write") {
		t.Errorf("a three-node result lacks the third node's CPU:\n%s", s)
	}
}
