package wire

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Outcome is how a command run under a capture ended.
type Outcome struct {
	Err     error          // its exit status or signal, as os/exec says it
	Exit    int            // its exit status, -1 if a signal ended it
	Signal  syscall.Signal // the signal that ended it, 0 if it exited
	Elapsed time.Duration
}

// CommandCapture is a capture taken while a command ran (tlsbench wire
// --capture IFACE -- COMMAND).
type CommandCapture struct {
	Interface string
	File      string // the pcap file
	Keep      bool   // File is the caller's, kept; else a temporary one
	Command   []string
	Stats     LiveStats
	Outcome
}

// StartError is a capture that could not start: the interface, the
// method, a PermissionError.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// CaptureCommand captures as o says (o.File "": to a temporary file) while
// run runs command and says how it ended; running it (a process group, the
// terminal, signals) is the caller's. An error of run's own (the command
// did not start) is returned as it is, the capture stopped and removed.
func CaptureCommand(ctx context.Context, o LiveOptions, command []string, run func(context.Context) (Outcome, error)) (*CommandCapture, error) {
	c := &CommandCapture{Interface: o.Interface, File: o.File, Keep: o.File != "", Command: plan.RedactArgs(command)}
	if !c.Keep {
		tmp, err := os.CreateTemp("", "tlsbench-wire-*.pcap")
		if err != nil {
			return nil, err
		}
		tmp.Close()
		c.File, o.File = tmp.Name(), tmp.Name()
	}
	live, err := StartLive(ctx, o)
	if err != nil {
		c.Remove()
		return nil, &StartError{err}
	}
	if c.Outcome, err = run(ctx); err != nil {
		live.Stop()
		c.Remove()
		return nil, err
	}
	if c.Stats, err = live.Stop(); err != nil {
		c.Remove()
		return nil, err
	}
	return c, nil
}

// Describe records in r, decoded from the capture, where its packets came
// from and how the command ended.
func (c *CommandCapture) Describe(r *result.Result) {
	if r.Capture == nil {
		r.Capture = &result.Capture{}
	}
	r.Capture.Source = "live " + c.Interface
	r.Spec.Target, r.Target.URL = r.Capture.Source, r.Capture.Source
	r.Capture.Command = c.Command
	r.Capture.SnapLen = c.Stats.SnapLen
	if c.Stats.Dropped > 0 {
		if r.Capture.Unseen == nil {
			r.Capture.Unseen = map[string]int64{}
		}
		r.Capture.Unseen["dropped"] += c.Stats.Dropped
	}
	status := fmt.Sprintf("exited with status %d", c.Exit)
	if c.Exit < 0 {
		status = "was ended by a signal"
	}
	r.Notes = append(r.Notes, fmt.Sprintf("captured on %s with %s (%d packets, %d dropped by the kernel) while the command ran; it %s after %.2f s",
		c.Interface, c.Stats.Method, c.Stats.Packets, c.Stats.Dropped, status, c.Elapsed.Seconds()))
	if c.Keep {
		r.Notes = append(r.Notes, "the capture is kept in "+c.File)
	}
}

// Remove deletes a capture not asked to be kept.
func (c *CommandCapture) Remove() {
	if !c.Keep && c.File != "" {
		os.Remove(c.File)
	}
}
