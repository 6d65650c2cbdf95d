package site

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { middleStarters[plan.RouteStunnel] = startStunnel }

// stunnel is the lab's stunnel pair as a middle: a service per key.
type stunnel struct{ *lab.Stunnel }

func startStunnel(ctx context.Context, s *Site, _ plan.Route, vs []plan.Variant) (middle, error) {
	var keys []string
	for _, v := range vs {
		keys = appendNew(keys, v.Key)
	}
	// stunnel's server instance talks plaintext to the server's plaintext
	// port, as a plain variant reaches it.
	ep, err := s.direct(plan.Variant{TLS: "off"})
	if err != nil {
		return nil, err
	}
	st, err := lab.StartStunnel(ctx, ep.Addr, keys)
	if err != nil {
		return nil, err
	}
	return stunnel{st}, nil
}

func (st stunnel) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	var err error
	ep.Addr, err = st.Addr(v.Key)
	return ep, err
}

func (st stunnel) CPU() (time.Duration, error) { return st.ServerCPU() }

func (st stunnel) Results() []result.Tunnel {
	info := st.Info()
	var out []result.Tunnel
	for _, k := range slices.Sorted(maps.Keys(info.Endpoints)) {
		out = append(out, result.Tunnel{Label: plan.RouteStunnel, Addr: info.Endpoints[k], Server: "stunnel " + info.Version})
	}
	return out
}

func (st stunnel) Notes() []string {
	return []string{"stunnel: a client instance (plaintext in) and a server instance (TLS out to the server's plaintext port), Debian's stunnel4 " + st.Info().Version + "; one TLS connection between them per database connection, with stunnel's default client session reuse, so most are resumed; server CPU includes the server instance's, not the client instance's"}
}
