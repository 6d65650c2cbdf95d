package bench

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Endpoint says where a variant connects: the address to dial and the host
// name to verify and to send.
type Endpoint func(v plan.Variant) (addr, host string)

// Configs builds every variant's driver.Config. A resuming variant gets a
// session cache of its own, so that variants never share tickets.
func Configs(spec plan.Spec, variants []plan.Variant, at Endpoint, roots *x509.CertPool, d *netx.Dialer) (map[string]driver.Config, error) {
	out := make(map[string]driver.Config, len(variants))
	for _, v := range variants {
		addr, host := at(v)
		_, port, _ := net.SplitHostPort(addr)
		cfg := driver.Config{
			Variant: v,
			Addr:    addr,
			Host:    net.JoinHostPort(host, port),
			Path:    spec.Path,
			Dialer:  d,
			Timeout: spec.Timeout,
		}
		if !v.Plain() {
			var sessions tls.ClientSessionCache
			if v.Resume {
				sessions = tls.NewLRUClientSessionCache(1024)
			}
			var err error
			cfg.TLS, err = tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: roots, Insecure: spec.Insecure, ServerName: host, Sessions: sessions})
			if err != nil {
				return nil, err
			}
		}
		out[v.ID] = cfg
	}
	return out, nil
}
