package tlsx

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// ClientOptions are the parts of a client config that do not vary by variant.
type ClientOptions struct {
	RootCAs    *x509.CertPool // nil: system roots
	Insecure   bool
	ServerName string
	Sessions   tls.ClientSessionCache // used only when the variant resumes
	// ALPN is the protocols to offer: {"http/1.1"} for HTTP, none for
	// databases that do not negotiate one.
	ALPN []string
	// SkipHostname verifies the server's chain but not its name
	// (PostgreSQL's sslmode=verify-ca).
	SkipHostname bool
	// Certificate is the client certificate every TLS variant without a
	// ClientCert of its own presents when the server asks (--cert, a
	// URL's sslcert=); ClientCerts are the lab's, by key type, for the
	// variants of the --client-cert dimension.
	Certificate *tls.Certificate
	ClientCerts map[string]tls.Certificate
}

// ClientConfig builds the client config of a TLS variant: "1.2" and "1.3"
// pin the version, "auto" keeps Go's defaults; Cipher (TLS 1.2 only) is the
// one suite offered; Resume enables o.Sessions, else no session is resumed.
func ClientConfig(v plan.Variant, o ClientOptions) (*tls.Config, error) {
	c := &tls.Config{
		RootCAs:            o.RootCAs,
		InsecureSkipVerify: o.Insecure,
		ServerName:         o.ServerName,
		NextProtos:         o.ALPN,
	}
	switch v.TLS {
	case "1.2":
		c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	case "1.3":
		c.MinVersion, c.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	case "auto":
		c.MinVersion = tls.VersionTLS12
	case "off":
		return nil, fmt.Errorf("variant %q is plain: it has no TLS config", v.ID)
	default:
		return nil, fmt.Errorf("variant %q: unknown TLS mode %q", v.ID, v.TLS)
	}
	if v.Cipher != "" {
		if v.TLS != "1.2" {
			// TLS 1.3 suites are not configurable in Go: refuse rather
			// than silently measure something else.
			return nil, fmt.Errorf("variant %q: a cipher suite can be chosen for TLS 1.2 only", v.ID)
		}
		cs, ok := plan.CipherSuite(v.Cipher)
		if !ok {
			return nil, fmt.Errorf("variant %q: unknown TLS 1.2 cipher suite %q", v.ID, v.Cipher)
		}
		c.CipherSuites = []uint16{cs.ID}
	}
	if v.Group != "" {
		id, ok := curves[v.Group]
		if !ok {
			return nil, fmt.Errorf("variant %q: unknown key-exchange group %q", v.ID, v.Group)
		}
		// One group offered: its key share is the ClientHello's.
		c.CurvePreferences = []tls.CurveID{id}
	}
	switch {
	case v.SendsClientCert():
		cert, ok := o.ClientCerts[v.ClientCert]
		if !ok {
			return nil, fmt.Errorf("variant %q: no %s client certificate was made", v.ID, v.ClientCert)
		}
		presentAlways(c, cert)
	case v.ClientCert == "" && o.Certificate != nil:
		presentAlways(c, *o.Certificate)
	}
	if o.SkipHostname && !o.Insecure {
		c = SkipHostname(c)
	}
	if v.Resume {
		if o.Sessions == nil {
			return nil, fmt.Errorf("variant %q resumes sessions but no session cache was given", v.ID)
		}
		c.ClientSessionCache = o.Sessions
	}
	return c, nil
}

// curves maps plan's group names to Go's.
var curves = map[string]tls.CurveID{
	plan.GroupX25519:         tls.X25519,
	plan.GroupX25519MLKEM768: tls.X25519MLKEM768,
	plan.GroupP256:           tls.CurveP256,
	plan.GroupP384:           tls.CurveP384,
	plan.GroupP521:           tls.CurveP521,
}

// Negotiated is what a handshake settled on, as the client saw it.
type Negotiated struct {
	Version string // "TLS 1.3"
	Suite   string // "TLS_AES_128_GCM_SHA256"
	Group   string // the key-exchange group (plan.GroupSpelling), "" if none
	PeerKey string // the server certificate's key: "RSA-2048", "ECDSA-P256"
	ALPN    string
	// HelloRetry is set when the server asked for another key share (a
	// HelloRetryRequest).
	HelloRetry bool
}

// Describe summarizes what a handshake negotiated.
func Describe(cs tls.ConnectionState) Negotiated {
	n := Negotiated{
		Version: tls.VersionName(cs.Version),
		Suite:   tls.CipherSuiteName(cs.CipherSuite),
		ALPN:    cs.NegotiatedProtocol,
		// A server that supports none of the client's key shares asks
		// for another: PostgreSQL 15 offers P-256 only.
		HelloRetry: cs.HelloRetryRequest,
	}
	if cs.CurveID != 0 {
		n.Group = plan.GroupLabel(uint16(cs.CurveID))
	}
	if len(cs.PeerCertificates) > 0 {
		n.PeerKey = PeerKey(cs.PeerCertificates[0])
	}
	return n
}

// PeerKey names a certificate's public key: "RSA-2048", "ECDSA-P256",
// "ECDSA-P384", "Ed25519".
func PeerKey(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	switch k := cert.PublicKey.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA-" + strings.ReplaceAll(k.Curve.Params().Name, "-", "")
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return cert.PublicKeyAlgorithm.String()
}

// KeyTypeOf maps a PeerKey name back to its plan key type ("RSA-2048" →
// "rsa2048"); "" if it is none of plan.KeyTypes.
func KeyTypeOf(peerKey string) string {
	k := strings.ToLower(peerKey)
	if strings.HasPrefix(k, "rsa-") {
		k = "rsa" + k[len("rsa-"):]
	}
	if slices.Contains(plan.KeyTypes, k) {
		return k
	}
	return ""
}
