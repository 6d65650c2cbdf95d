package site

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// startLink builds the delay link of a run with --rtt-via link, before the
// server: the server listens on the link's address. Its RTT is set per
// variant (Before).
func (s *Site) startLink(ctx context.Context) error {
	l, err := lab.StartDelayLink(ctx, lab.NewWireGuardNumber(), lab.DelayLinkOptions{Exe: builtinExe})
	if err != nil {
		return fmt.Errorf("building the delay link for --rtt-via link: %w", err)
	}
	s.link = l
	return nil
}

// viaLink is ep reached across the delay link: the server's address on the
// link, dialed from the link's namespace, without the dialer's delays, and
// verified as that address (the lab's certificates name it: a client stack
// such as pgjdbc verifies the address it connects to).
func (s *Site) viaLink(ep bench.Endpoint) (bench.Endpoint, error) {
	if s.link == nil {
		return ep, errors.New("--rtt-via link: the delay link was not built before the server")
	}
	_, port, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return ep, err
	}
	ep = at(ep, net.JoinHostPort(s.link.ServerAddr(), port))
	ep.Host, ep.Netns, ep.Delayed = s.link.ServerAddr(), s.link.Netns(), true
	return ep, nil
}

// linkRTT sets the link's RTT to v's for a variant that crosses it.
func (s *Site) linkRTT(ctx context.Context, v plan.Variant) error {
	if s.link == nil || v.RTTVia != plan.RTTViaLink || s.link.RTT() == v.RTT {
		return nil
	}
	return s.link.SetRTT(ctx, v.RTT)
}

// linkNotes say how the link makes its RTT and what its forwarder did
// (read once the run is over): nothing when the run has no link.
func (s *Site) linkNotes() []string {
	if s.link == nil {
		return nil
	}
	out := []string{s.link.Note()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.link.Stats(ctx)
	if err != nil {
		return append(out, "delay link: no counts from its forwarder: "+err.Error())
	}
	prio := "at real-time priority (SCHED_FIFO)"
	if !st[0].RealTime || !st[1].RealTime {
		prio = "at normal priority (the kernel refused real-time priority: on a loaded machine the packets wait for a CPU)"
	}
	cpu := ""
	if d, err := s.link.CPU(); err == nil {
		cpu = fmt.Sprintf(", using %.2f s of CPU", d.Seconds())
	}
	return append(out, fmt.Sprintf("delay link: %d packets forwarded to the server and %d back, %d and %d dropped (a full queue), %d and %d refused by the device; its threads ran %s%s",
		st[1].Forwarded, st[0].Forwarded, st[1].Dropped, st[0].Dropped, st[1].Failed, st[0].Failed, prio, cpu))
}

// linkAlive reports why the link's forwarder is gone, if it is.
func (s *Site) linkAlive() error {
	if s.link == nil {
		return nil
	}
	if err := s.link.Alive(); err != nil {
		return fmt.Errorf("the delay link: %w", err)
	}
	return nil
}
