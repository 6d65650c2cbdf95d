package site

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// tunnels are what the tunnelled variants of a run go through: SSH
// connections (one per --via entry and RTT, opened when a variant first
// needs it), the lab's sshd when --via names no SSH server, and the
// middles (stunnel, poolers, proxies, ...) of the other entries. Each is
// found by the route its variants record (Variant.Route).
type tunnels struct {
	ctx  context.Context
	spec plan.Spec
	// routes are the spec's parsed --via entries, secrets included.
	routes map[plan.RouteInfo]plan.Route

	mu      sync.Mutex
	sshd    *lab.SSHD
	ssh     []*sshTunnel
	middles map[plan.RouteInfo]middle
	order   []plan.RouteInfo // middles in start order
}

type sshTunnel struct {
	via plan.RouteInfo
	rtt time.Duration
	*netx.SSHTunnel
}

// openTunnels starts the lab sshd and the middles the spec's --via entries
// need, and makes the site's tunnelled variants reach the server through
// their tunnel.
func (s *Site) openTunnels(ctx context.Context, spec plan.Spec) error {
	through := map[plan.RouteInfo][]plan.Variant{}
	for _, v := range spec.Variants() {
		if v.Route != (plan.RouteInfo{}) {
			through[v.Route] = append(through[v.Route], v)
		}
	}
	if len(through) == 0 {
		return nil
	}
	tu := &tunnels{ctx: ctx, spec: spec, routes: map[plan.RouteInfo]plan.Route{}, middles: map[plan.RouteInfo]middle{}}
	for _, r := range spec.Routes() {
		tu.routes[r.Info()] = r
		if r.Kind == plan.RouteSSH && r.URL == nil && len(through[r.Info()]) > 0 && tu.sshd == nil {
			var err error
			if tu.sshd, err = lab.StartSSHD(ctx); err != nil {
				return fmt.Errorf("starting the lab sshd for --via ssh: %w", err)
			}
		}
	}
	for _, r := range spec.Routes() {
		start, vs := middleStarters[r.Kind], through[r.Info()]
		if start == nil || len(vs) == 0 {
			continue
		}
		m, err := start(ctx, s, r, vs)
		if err != nil {
			tu.close()
			return fmt.Errorf("starting --via %s: %w", r.Label(), err)
		}
		tu.middles[r.Info()] = m
		tu.order = append(tu.order, r.Info())
		s.notes = append(s.notes, m.Notes()...)
	}
	s.tunnels = tu
	// Locate, CPU, Alive and Stop cover the tunnels once s.tunnels is set.
	if tu.sshd != nil {
		s.notes = append(s.notes, fmt.Sprintf("ssh tunnels: a throw-away %s on %s, one SSH connection per tunnelled variant and RTT, one direct-tcpip channel per database connection (as ssh -L does); server CPU includes sshd's", tu.sshd.Version(), tu.sshd.Addr()))
	}
	return nil
}

// route sends a tunnelled variant's connections through its tunnel.
func (tu *tunnels) route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	if m := tu.middles[v.Route]; m != nil {
		return m.Route(v, ep)
	}
	via, ok := tu.routes[v.Route]
	if !ok {
		return ep, fmt.Errorf("variant %s: no --via entry %q in this run", v.ID, v.Tunnel)
	}
	t, err := tu.sshTunnel(via, v.RTT)
	ep.Via = t
	return ep, err
}

// sshTunnel returns the SSH connection of one --via entry at one RTT,
// opening it the first time.
func (tu *tunnels) sshTunnel(via plan.Route, rtt time.Duration) (netx.Tunnel, error) {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	for _, t := range tu.ssh {
		if t.via == via.Info() && t.rtt == rtt {
			return t.SSHTunnel, nil
		}
	}
	cfg := netx.SSHConfig{}
	if via.URL == nil {
		cfg = tu.sshd.Config(via.Cipher)
	} else {
		var err error
		if cfg, err = sshConfig(via, tu.spec.Insecure); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(tu.ctx, tu.spec.Timeout)
	defer cancel()
	t, err := netx.DialSSH(ctx, &netx.Dialer{RTT: rtt}, cfg)
	if err != nil {
		return nil, err
	}
	tu.ssh = append(tu.ssh, &sshTunnel{via: via.Info(), rtt: rtt, SSHTunnel: t})
	return t, nil
}

func (tu *tunnels) serverCPU() (time.Duration, error) {
	var d time.Duration
	if tu.sshd != nil {
		c, err := tu.sshd.CPU()
		if err != nil {
			return 0, err
		}
		d += c
	}
	for _, r := range tu.order {
		c, err := tu.middles[r].CPU()
		if err != nil {
			return 0, err
		}
		d += c
	}
	return d, nil
}

func (tu *tunnels) alive() error {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	// A tunnel that is gone says all: its sshd's own death would only
	// repeat it with a log.
	for _, t := range tu.ssh {
		if err := t.Err(); err != nil {
			return err
		}
	}
	var errs []error
	if tu.sshd != nil {
		errs = append(errs, tu.sshd.Alive())
	}
	for _, r := range tu.order {
		errs = append(errs, tu.middles[r].Alive())
	}
	return errors.Join(errs...)
}

// results describes the tunnels for the result file.
func (tu *tunnels) results() []result.Tunnel {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	var out []result.Tunnel
	for _, t := range tu.ssh {
		a := t.Algorithms()
		r := result.Tunnel{Label: tu.routes[t.via].Label(), RTT: t.rtt, Addr: t.Addr(), Server: t.ServerVersion(),
			KeyExchange: a.KeyExchange, HostKey: a.HostKey, Cipher: a.Write.Cipher}
		if !netx.SSHAEAD(r.Cipher) {
			r.MAC = a.Write.MAC // an AEAD cipher authenticates by itself
		}
		for _, p := range t.Setup().Phases {
			r.Setup = append(r.Setup, result.SetupPhase{Name: p.Name, Duration: p.Duration, RoundTrips: p.RoundTrips})
		}
		r.BytesSent, r.BytesReceived = t.Counters()
		out = append(out, r)
	}
	for _, r := range tu.order {
		out = append(out, tu.middles[r].Results()...)
	}
	return out
}

func (tu *tunnels) close() {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	for _, t := range tu.ssh {
		t.Close()
	}
	for _, r := range slices.Backward(tu.order) {
		tu.middles[r].Stop()
	}
	if tu.sshd != nil {
		tu.sshd.Stop()
	}
}

// sshConfig is how to log in to the SSH server a --via URL names (see
// netx.SSHConfigFromURL); a URL that cannot be used is an error in the
// spec.
func sshConfig(via plan.Route, insecure bool) (netx.SSHConfig, error) {
	cfg, err := netx.SSHConfigFromURL(via.URL, via.Cipher, insecure)
	var ue *netx.SSHURLError
	switch {
	case errors.Is(err, netx.ErrNoSSHAuth):
		return cfg, plan.Errorf("⟨via⟩ %s: %v", plan.Redact(via.URL.String()), err)
	case errors.As(err, &ue):
		return cfg, plan.Errorf("⟨via⟩: %v", err)
	}
	return cfg, err
}

// appendNew appends s to list unless it is there.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
