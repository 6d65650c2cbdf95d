package bench

import (
	"crypto/tls"
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Endpoint is where a variant connects.
type Endpoint struct {
	Addr string // host:port to dial
	Host string // name to verify and to send (SNI, HTTP Host)
	// URL carries credentials and engine options, for engines that log in.
	URL *url.URL
	// Via, when set, is the tunnel connections go through (Addr as the
	// tunnel's far end sees it).
	Via netx.Tunnel
	// Netns, when set, is the network namespace connections are made in
	// (/run/netns/NAME): a VPN's or a delay link's client side.
	Netns string
	// Delayed says the path itself delays by the variant's RTT (a delay
	// link): the dialer adds none of its own.
	Delayed bool
	// ServerTLS, when set, is whether the server itself must see TLS where
	// an intermediary makes the connection to it (a pooler); nil: as the
	// variant.
	ServerTLS *bool
	// CAFile is the PEM file of the CA that signs the server's
	// certificate, where tlsbench made it (a lab server's), for a client
	// stack other than Go's, which reads a file; "" is the spec's CAFile.
	CAFile string
}

// Locate finds the endpoint of a variant.
type Locate func(v plan.Variant) (Endpoint, error)

// Configs builds every variant's driver.Config. A resuming variant gets a
// session cache of its own, so that variants never share tickets. Every
// variant dials through d with its own RTT (variants of one RTT share a
// dialer; the Sources are d's).
func Configs(spec plan.Spec, variants []plan.Variant, at Locate, tlsOpts tlsx.ClientOptions, d *netx.Dialer) (map[string]driver.Config, error) {
	out := make(map[string]driver.Config, len(variants))
	dialers := map[time.Duration]*netx.Dialer{}
	for _, v := range variants {
		vd, ok := dialers[v.RTT]
		if !ok {
			vd = d.WithRTT(v.RTT)
			dialers[v.RTT] = vd
		}
		ep, err := at(v)
		if err != nil {
			return nil, err
		}
		if ep.Via != nil {
			// The tunnel's own connection carries the variant's RTT.
			vd = &netx.Dialer{Via: ep.Via}
		}
		if ep.Netns != "" {
			vd = &netx.Dialer{RTT: v.RTT, Netns: ep.Netns}
			if ep.Delayed {
				vd.RTT = 0
			}
		}
		_, port, _ := net.SplitHostPort(ep.Addr)
		cfg := driver.Config{
			Variant:   v,
			Addr:      ep.Addr,
			Host:      net.JoinHostPort(ep.Host, port),
			Path:      spec.RequestPath(),
			Dialer:    vd,
			Timeout:   spec.Timeout,
			URL:       ep.URL,
			ServerTLS: ep.ServerTLS,
			Answered:  new(atomic.Bool),
			Workload: driver.Workload{
				Name: spec.Workload, QueryMode: spec.QueryMode, Tables: spec.Tables, Rows: spec.Rows,
				User:    spec.UserWorkload(),
				Scripts: spec.ScriptMix(),
			},
		}
		if !v.Plain() {
			o := tlsOpts
			o.ServerName = ep.Host
			o.Sessions = nil
			if v.Resume {
				o.Sessions = tls.NewLRUClientSessionCache(1024)
			}
			if cfg.TLS, err = tlsx.ClientConfig(v, o); err != nil {
				return nil, err
			}
		}
		out[v.ID] = cfg
	}
	return out, nil
}
