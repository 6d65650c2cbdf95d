package wire

import (
	"slices"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestDescribe: a decoded capture records where its packets came from, the
// command with its secrets removed, the kernel's drops and how the command
// ended.
func TestDescribe(t *testing.T) {
	c := &CommandCapture{Interface: "lo", File: "/tmp/kept.pcap", Keep: true, Command: []string{"psql", "postgres://u:xxxxx@h/db"},
		Stats: LiveStats{Method: "af_packet", SnapLen: 262144, Packets: 40, Dropped: 3}, Outcome: Outcome{Exit: -1, Elapsed: 1500 * time.Millisecond}}
	r := &result.Result{}
	c.Describe(r)
	if r.Capture.Source != "live lo" || r.Spec.Target != "live lo" || !slices.Equal(r.Capture.Command, c.Command) || r.Capture.Unseen["dropped"] != 3 || r.Capture.SnapLen != 262144 {
		t.Errorf("capture %+v, target %q", r.Capture, r.Spec.Target)
	}
	want := []string{"captured on lo with af_packet (40 packets, 3 dropped by the kernel) while the command ran; it was ended by a signal after 1.50 s",
		"the capture is kept in /tmp/kept.pcap"}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
}
