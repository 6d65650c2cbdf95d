package site

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// clientCertKeys are the key types of the client certificates a lab server
// must issue for spec's --client-cert dimension ("off" needs none).
func clientCertKeys(spec plan.Spec) []string {
	var keys []string
	for _, k := range spec.ClientCerts {
		if k != plan.ClientCertOff {
			keys = append(keys, k)
		}
	}
	return keys
}

// labClientCerts loads the client certificates srv issued for spec into
// the options every TLS variant's client config is built from.
func (s *Site) labClientCerts(srv lab.Server, spec plan.Spec) error {
	keys := clientCertKeys(spec)
	if len(keys) == 0 {
		return nil
	}
	cc, ok := srv.(interface {
		ClientCert(key string) (tls.Certificate, error)
	})
	if !ok {
		return fmt.Errorf("the %s lab server cannot demand client certificates: leave --client-cert out", srv.Engine())
	}
	s.tls.ClientCerts = map[string]tls.Certificate{}
	for _, k := range keys {
		c, err := cc.ClientCert(k)
		if err != nil {
			return err
		}
		s.tls.ClientCerts[k] = c
	}
	return nil
}

// mtlsEndpoint is the built-in server's listener of key that demands a
// client certificate.
func (s *Site) mtlsEndpoint(srv lab.Server, key string) (bench.Endpoint, error) {
	b, ok := srv.(interface{ MTLSEndpoint(key string) string })
	if !ok || b.MTLSEndpoint(key) == "" {
		return bench.Endpoint{}, fmt.Errorf("the built-in server has no listener for %s with client certificates", key)
	}
	return bench.Endpoint{Addr: b.MTLSEndpoint(key), Host: "127.0.0.1"}, nil
}

// clientCertURL is how variant v, which presents a client certificate,
// logs in to a lab server.
func (s *Site) clientCertURL(srv lab.Server, v plan.Variant) (string, error) {
	cs, ok := srv.(lab.ClientCertServer)
	if !ok {
		return "", fmt.Errorf("the %s lab server cannot demand client certificates: leave --client-cert out", srv.Engine())
	}
	return cs.ClientCertURL(v.Auth)
}

// demandClientCert makes a lab server demand client certificates for the
// variants that present one and ask for none for their off twins,
// switching only when that changes; a note says once how.
func (s *Site) demandClientCert(ctx context.Context, v plan.Variant) error {
	cs, ok := s.srv.(lab.ClientCertServer)
	if !ok || v.ClientCert == "" || len(s.tls.ClientCerts) == 0 {
		return nil // no certificate to demand (--client-cert off alone)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	on := v.SendsClientCert()
	if on == s.demanding && s.saidDemand {
		return nil
	}
	how, err := cs.DemandClientCert(ctx, on)
	if err != nil {
		return err
	}
	s.demanding = on
	if !s.saidDemand {
		s.saidDemand = true
		s.notes = append(s.notes, "client certificates demanded in the mtls variants only: "+how)
	}
	return nil
}

// urlClientCert loads the client certificate a URL target's variants
// present (--cert/--cert-key or the URL's own parameters), and the
// verification the URL asks for (sslmode=verify-ca: the chain, not the
// host name).
func (s *Site) urlClientCert(spec plan.Spec, t plan.Target) error {
	s.tls.SkipHostname = t.SkipHostname
	if spec.CertFile == "" {
		return nil
	}
	c, err := tlsx.LoadClientCert(spec.CertFile, spec.CertKeyFile)
	var ce *tlsx.ClientCertError
	switch {
	case errors.As(err, &ce):
		// The user's file: an input error, as a bad --ca is.
		return plan.Errorf("%s: %v", spec.ClientCertField(t, ce.Part), err)
	case err != nil:
		return err
	}
	if w := tlsx.KeyExposed(spec.CertKeyFile); w != "" {
		s.warnings = append(s.warnings, w)
	}
	s.tls.Certificate = &c
	return nil
}

// Warnings are what the user should fix in the setup though the run goes
// on (a client key others can read), known once Open returns.
func (s *Site) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
}
