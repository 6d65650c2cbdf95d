package tlsx

import (
	"crypto/tls"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// giveCert is how a user gives a client certificate.
const giveCert = "give --cert FILE and --cert-key FILE, or the URL's own parameters: sslcert= and sslkey=, ssl-cert= and ssl-key=, tlsCertificateKeyFile="

// ExplainClient is Explain for a connection made with the client config c
// (nil for plain): first what a server says about the client's
// certificate, as a TLS alert (unknown CA, expired, required) or as its
// own login error (PostgreSQL's "connection requires a valid client
// certificate", MariaDB's "Access denied" for a REQUIRE X509 user), then
// the rest of Explain.
func ExplainClient(err error, addr string, v plan.Variant, c *tls.Config) error {
	if err == nil || IsExplained(err) {
		return Explain(err, addr, v)
	}
	wrap := func(format string, args ...any) error { return Explained(err, format, args...) }
	key := ClientCertKey(c)
	var subject, issuer string
	if key != "" {
		if cert, cerr := c.GetClientCertificate(&tls.CertificateRequestInfo{}); cerr == nil && cert != nil {
			subject, issuer = certSubject(*cert)
		}
	}
	msg := err.Error()
	alert := remoteAlert(err)
	switch {
	case key == "" && (alert == "tls: certificate required" || strings.Contains(msg, "connection requires a valid client certificate")):
		return wrap("the server at %s requires a client certificate (%s): %s", addr, serverSaid(alert, "connection requires a valid client certificate"), giveCert)
	case key == "" && c != nil && alert == "tls: bad certificate":
		return wrap("the server at %s asked for a client certificate and refused the connection without one (server said: bad certificate): %s", addr, giveCert)
	case key == "" && c != nil && alert == "tls: handshake failure" && v.Cipher == "" && v.Group == "":
		// OpenSSL's TLS 1.2 answer to a missing client certificate.
		return wrap("%s refused the TLS handshake (server said: handshake failure): it shares no cipher suite with tlsbench for %s (check its TLS settings, or try --tls auto), or it requires a client certificate: %s", addr, variantName(v), giveCert)
	case key != "" && alert == "tls: unknown certificate authority":
		return wrap("the server at %s rejected the client certificate %s (tls: unknown certificate authority): it does not trust the CA that signed it (%s): give a certificate its CA file trusts (ssl_ca_file, ssl_ca, tls-ca-cert-file), or add that CA there", addr, subject, issuer)
	case key != "" && (alert == "tls: expired certificate" || alert == "tls: certificate expired"):
		return wrap("the server at %s rejected the client certificate %s (%s): it has expired or is not yet valid: renew it", addr, subject, alert)
	case key != "" && (alert == "tls: bad certificate" || alert == "tls: unsupported certificate" || alert == "tls: certificate unknown" || alert == "tls: certificate required"):
		return wrap("the server at %s rejected the client certificate %s (%s): check that the server trusts its issuer (%s) and that it is a client certificate (extended key usage clientAuth)", addr, subject, alert, issuer)
	case key != "" && strings.Contains(msg, "certificate authentication failed for user"):
		return wrap("the server at %s accepted the client certificate %s but not for this user (certificate authentication failed): its common name must be the user name, or the server's pg_ident.conf must map it", addr, subject)
	case key == "" && c != nil && strings.Contains(msg, "Access denied for user"):
		return wrap("the server at %s denied the login (%s): a wrong user or password, or a user that requires a client certificate (REQUIRE X509): %s", addr, firstLine(msg), giveCert)
	}
	return Explain(err, addr, v)
}

// ClosedAfterHandshake explains a connection the server closed or reset
// during its setup, right after a TLS handshake that went through on the
// client's side, without an alert the client could read: a TLS 1.3 server
// judges the client's certificate after the client's handshake ended, and
// its alert is lost when the client's next write meets the reset first.
func ClosedAfterHandshake(err error, addr string, c *tls.Config) error {
	key := ClientCertKey(c)
	if key == "" {
		return Explained(err, "the server at %s closed the connection right after the TLS handshake (%s): if it requires a client certificate (Redis: tls-auth-clients yes), %s", addr, firstLine(err.Error()), giveCert)
	}
	cert, _ := c.GetClientCertificate(&tls.CertificateRequestInfo{})
	subject, issuer := certSubject(*cert)
	return Explained(err, "the server at %s closed the connection right after the TLS handshake (%s): it may have rejected the client certificate %s: check that it trusts its issuer (%s)", addr, firstLine(err.Error()), subject, issuer)
}

// serverSaid quotes an alert, or the server's own words when no alert came.
func serverSaid(alert, words string) string {
	if alert != "" {
		return "server said: " + strings.TrimPrefix(alert, "tls: ")
	}
	return "server said: " + words
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
