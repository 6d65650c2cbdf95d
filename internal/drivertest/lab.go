package drivertest

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// LabConfig is the driver config of variant v against the lab server srv,
// as a run makes it: srv's URL for v.Auth (its TLS port unless v is
// plain), a TLS config of v that trusts srv's CA and checks the name
// 127.0.0.1, with a session cache of its own when v resumes; a 10 s
// timeout and workload w.
func LabConfig(srv lab.Server, v plan.Variant, w driver.Workload) (driver.Config, error) {
	raw, err := srv.URL(v.Auth, !v.Plain())
	if err != nil {
		return driver.Config{}, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The URL holds the password: never quote it.
		return driver.Config{}, fmt.Errorf("the %s lab server's URL does not parse", srv.Engine())
	}
	cfg := driver.Config{
		Variant:  v,
		Addr:     u.Host,
		Host:     u.Hostname(),
		Dialer:   &netx.Dialer{},
		Timeout:  10 * time.Second,
		URL:      u,
		Workload: w,
	}
	if !v.Plain() {
		o := tlsx.ClientOptions{RootCAs: srv.RootCAs(), ServerName: "127.0.0.1"}
		if v.Resume {
			o.Sessions = tls.NewLRUClientSessionCache(8)
		}
		if cfg.TLS, err = tlsx.ClientConfig(v, o); err != nil {
			return driver.Config{}, err
		}
	}
	return cfg, nil
}
