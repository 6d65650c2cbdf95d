package site

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { middleStarters[plan.RouteWireGuard] = startWireGuard }

// wantsWireGuard reports whether a run goes through a WireGuard VPN, which
// must be up before the lab server starts: the server listens on its
// tunnel address.
func wantsWireGuard(spec plan.Spec) bool {
	return slices.ContainsFunc(spec.Routes(), func(r plan.Route) bool { return r.Kind == plan.RouteWireGuard })
}

// wireguard is the VPN as a middle: connections are made in its client
// namespace, to the server's tunnel address.
type wireguard struct {
	label string
	*lab.WireGuard
}

func startWireGuard(_ context.Context, s *Site, via plan.Route, _ []plan.Variant) (middle, error) {
	if s.vpn == nil {
		return nil, errors.New("wireguard: the tunnel was not built before the server")
	}
	return wireguard{label: via.Label(), WireGuard: s.vpn}, nil
}

func (w wireguard) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	_, port, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return ep, err
	}
	ep = through(ep, net.JoinHostPort(w.ServerAddr(), port), false)
	ep.Host, ep.Netns = w.ServerAddr(), w.Netns()
	return ep, nil
}

// CPU is the server side's wireguard-go: it runs beside the server. The
// client side's is in the tunnel's row.
func (w wireguard) CPU() (time.Duration, error) { return w.ServerCPU() }

func (w wireguard) Results() []result.Tunnel {
	info := w.Info()
	r := result.Tunnel{Label: w.label, Addr: w.ServerAddr(), Server: "wireguard-go " + w.Version(), Cipher: "ChaCha20-Poly1305 (WireGuard)",
		KeyExchange: "Noise_IK (Curve25519)", Setup: w.Setup(), Settings: info.Settings}
	if c, err := w.ClientCPU(); err == nil {
		r.ClientCPU = c
	}
	return []result.Tunnel{r}
}

func (w wireguard) Notes() []string {
	return []string{w.label + ": wireguard-go " + w.Version() + " (user space; no WireGuard kernel module here) in a network namespace of tlsbench's, joined to the root namespace's by a veth pair, and beside the server; tlsbench makes its sockets in that namespace, where the server's tunnel address " + w.ServerAddr() + " is reachable only through the tunnel; the server listens there too and sees clients from " + w.ClientAddr() + "; the tunnel is built once (its steps in the tunnels table); server CPU includes the server side's wireguard-go, the client side's is in the tunnel's row"}
}
