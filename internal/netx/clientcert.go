package netx

import "crypto/tls"

// ClientCertConfig returns the TLS config of one connection made from cfg.
// When cfg presents a client certificate (through GetClientCertificate, as
// tlsx's configs do), it is a copy that notes on the Conn at returns that
// the server asked for it: crypto/tls calls GetClientCertificate only when
// the server's handshake holds a CertificateRequest, so this is how a run
// knows, for every engine alike, that a certificate given was sent rather
// than carried unused (see CertRequested). Otherwise it is cfg itself.
// at is called during the handshake, after the connection is dialed.
func ClientCertConfig(cfg *tls.Config, at func() *Conn) *tls.Config {
	if cfg == nil || cfg.GetClientCertificate == nil {
		return cfg
	}
	get := cfg.GetClientCertificate
	c := cfg.Clone()
	c.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if conn := at(); conn != nil {
			conn.certAsked.Store(true)
		}
		return get(cri)
	}
	return c
}

// CertRequested reports whether the server asked for a client certificate
// in the TLS handshake over c (a CertificateRequest), as a config from
// ClientCertConfig saw it; false when none did or none was offered. A
// resumed handshake never asks: the session keeps the identity of the one
// it resumes.
func (c *Conn) CertRequested() bool { return c.certAsked.Load() }
