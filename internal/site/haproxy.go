package site

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { middleStarters[plan.RouteHAProxy] = startHAProxy }

// haproxy is the lab's HAProxy as a middle: a TLS frontend per key, and a
// plain one.
type haproxy struct {
	label string
	*lab.HAProxy
}

func startHAProxy(ctx context.Context, s *Site, via plan.Route, vs []plan.Variant) (middle, error) {
	if s.srv == nil {
		return nil, errors.New("haproxy needs a server tlsbench starts")
	}
	// HAProxy's backend is the server's plaintext port, as a plain
	// variant reaches it.
	backend, err := s.direct(plan.Variant{TLS: "off"})
	if err != nil {
		return nil, err
	}
	o := lab.HAProxyOptions{Backend: backend.Addr, CertDir: filepath.Dir(s.srv.CAFile())}
	for _, v := range vs {
		if v.Plain() {
			o.Plain = true
		} else {
			o.Keys = appendNew(o.Keys, v.Key)
		}
	}
	switch s.engine {
	case "builtin", "http":
		o.ALPN = "http/1.1"
	case "postgres":
		o.ALPN = "postgresql" // what a direct TLS client offers
	}
	h, err := lab.StartHAProxy(ctx, o)
	if err != nil {
		return nil, err
	}
	return haproxy{label: via.Label(), HAProxy: h}, nil
}

func (h haproxy) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	key := v.Key
	if v.Plain() {
		key = ""
	}
	addr, err := h.Addr(key)
	if err != nil {
		return ep, err
	}
	return through(ep, addr, false), nil
}

func (h haproxy) CPU() (time.Duration, error) { return h.HAProxy.CPU() }

func (h haproxy) Results() []result.Tunnel {
	info := h.Info()
	var out []result.Tunnel
	for _, k := range append([]string{""}, plan.KeyTypes...) { // the plain frontend, then one per key
		if addr, ok := info.Endpoints[k]; ok {
			set := map[string]string{"frontend": "plain"}
			if k != "" {
				set["frontend"] = "tls " + k
			}
			for n, v := range info.Settings {
				set[n] = v
			}
			out = append(out, result.Tunnel{Label: h.label, Addr: addr, Server: "HAProxy " + info.Version, Settings: set})
		}
	}
	return out
}

func (h haproxy) Notes() []string {
	return []string{"haproxy: Debian's HAProxy " + h.Info().Version + " in TCP mode before the server's plaintext port, terminating TLS with the lab certificate of each variant's key (a frontend per key, and a plain one for the proxy's cost alone); the server sees HAProxy's plaintext connection; server CPU includes HAProxy's"}
}
