package site

import (
	"context"
	"errors"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { middleStarters[plan.RouteOpenSSH] = startOpenSSH }

// openssh is OpenSSH's own client (ssh -N -L) through a throw-away sshd of
// its own, which offers the client's cipher (CBC ones included).
type openssh struct {
	label  string
	sshd   *lab.SSHD
	tunnel *lab.OpenSSHTunnel
}

func startOpenSSH(ctx context.Context, s *Site, via plan.Route, _ []plan.Variant) (middle, error) {
	target, err := s.direct(plan.Variant{TLS: "off"})
	if err != nil {
		return nil, err
	}
	var extra []string
	if via.Arg != "" {
		extra = []string{via.Arg}
	}
	sshd, err := lab.StartSSHD(ctx, extra...)
	if err != nil {
		return nil, err
	}
	t, err := lab.StartOpenSSHTunnel(ctx, sshd, target.Addr, via.Arg)
	if err != nil {
		sshd.Stop()
		return nil, err
	}
	return &openssh{label: via.Label(), sshd: sshd, tunnel: t}, nil
}

// Route sends a variant's connections to ssh's local port: a plain TCP
// connection there, a channel beyond it.
func (o *openssh) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	return through(ep, o.tunnel.Addr(), false), nil
}

// CPU is sshd's: it runs beside the server. The ssh client's runs beside
// the client, and is in the result's tunnel row.
func (o *openssh) CPU() (time.Duration, error) { return o.sshd.CPU() }

func (o *openssh) Alive() error {
	if err := o.tunnel.Alive(); err != nil {
		return err
	}
	return o.sshd.Alive()
}

func (o *openssh) Results() []result.Tunnel {
	n := o.tunnel.Negotiated()
	r := result.Tunnel{Label: o.label, Addr: o.sshd.Addr(), Server: o.sshd.Version(), KeyExchange: n.KeyExchange, HostKey: n.HostKey,
		Cipher: n.Cipher, MAC: n.MAC, Setup: []result.SetupPhase{{Name: "ssh -N -L", Duration: o.tunnel.Setup()}}}
	if c, err := o.tunnel.CPU(); err == nil {
		r.ClientCPU = c
	}
	return []result.Tunnel{r}
}

func (o *openssh) Notes() []string {
	return []string{o.label + ": OpenSSH's own client (" + o.tunnel.Version() + ", ssh -N -L) through a throw-away " + o.sshd.Version() +
		" offering its cipher; every connection to ssh's local port is a channel of its one SSH connection; its setup (start to a listening forward: key exchange and login) timed once; server CPU includes sshd's, and the ssh client's CPU is in the tunnel's row, not in tlsbench's"}
}

func (o *openssh) Stop() error {
	return errors.Join(o.tunnel.Stop(), o.sshd.Stop())
}
