package tlsx

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// certSettings is how one engine's server and clients handle client
// certificates, as its own documentation names them, so that a remedy
// never sends a Redis user to pg_hba.conf.
type certSettings struct {
	// ask is how its server is made to ask for client certificates, and to
	// demand one.
	ask string
	// demand is, briefly, the setting that makes it demand one.
	demand string
	// ca is where its server keeps the CAs it trusts for client
	// certificates.
	ca string
	// param is the URL's own parameters that give a client certificate,
	// "" if it has none.
	param string
}

// engineCert holds the certSettings of each driver registry key.
var engineCert = map[string]certSettings{
	"postgres": {
		ask:    "PostgreSQL asks once postgresql.conf's ssl_ca_file is set, and a pg_hba.conf line `hostssl ... cert`, or one whose method has clientcert=verify-full, demands one",
		demand: "pg_hba.conf: cert, or clientcert=verify-full",
		ca:     "postgresql.conf's ssl_ca_file",
		param:  "sslcert= and sslkey=",
	},
	"mysql": {
		ask:    "MySQL asks once ssl_ca (ssl-ca) is set, MariaDB asks every TLS client; a user created with REQUIRE X509 demands one",
		demand: "a user created with REQUIRE X509",
		ca:     "the server's ssl_ca (ssl-ca)",
		param:  "ssl-cert= and ssl-key=",
	},
	"redis": {
		ask:    "Redis asks with tls-auth-clients yes (or optional), its CA in tls-ca-cert-file",
		demand: "tls-auth-clients yes",
		ca:     "the server's tls-ca-cert-file",
	},
	"mongodb": {
		ask:    "MongoDB asks once net.tls.CAFile (mongod --tlsCAFile) is set, and demands one with net.tls.allowConnectionsWithoutCertificates: false; FerretDB asks with --listen-tls-ca-file",
		demand: "net.tls.CAFile (--tlsCAFile) without allowConnectionsWithoutCertificates; FerretDB: --listen-tls-ca-file",
		ca:     "net.tls.CAFile (mongod --tlsCAFile; FerretDB: --listen-tls-ca-file)",
		param:  "tlsCertificateKeyFile=",
	},
	"http": {
		ask:    "an HTTPS server asks when it verifies clients: nginx's ssl_verify_client on (with ssl_client_certificate), Go's tls.Config ClientAuth (tls.RequireAndVerifyClientCert), tlsbench serve --client-ca FILE",
		demand: "nginx: ssl_verify_client on; Go: ClientAuth",
		ca:     "the server's client CA file (nginx's ssl_client_certificate, Go's ClientCAs)",
	},
}

// certOf is the certSettings of engine (a driver registry key): the
// built-in server's are HTTPS's; an engine not in the table gets words
// that fit any server.
func certOf(engine string) certSettings {
	if engine == "builtin" {
		engine = "http"
	}
	if s, ok := engineCert[engine]; ok {
		return s
	}
	return certSettings{ask: "configure the server to verify client certificates", demand: "its client certificate settings", ca: "the server's client CA file"}
}

// give is how a user gives a client certificate to this engine.
func (s certSettings) give() string {
	if s.param == "" {
		return "give --cert FILE and --cert-key FILE"
	}
	return "give --cert FILE and --cert-key FILE, or the URL's " + s.param
}

// ExplainClient is Explain for a connection made with the client config c
// (nil for plain) to a server of engine (a driver registry key): first
// what a server says about the client's certificate, as a TLS alert
// (unknown CA, expired, required) or as its own login error (PostgreSQL's
// "connection requires a valid client certificate", MariaDB's "Access
// denied" for a REQUIRE X509 user), then the rest of Explain. Its remedies
// are that engine's.
func ExplainClient(err error, addr, engine string, v plan.Variant, c *tls.Config) error {
	if err == nil || IsExplained(err) {
		return Explain(err, addr, v)
	}
	wrap := func(format string, args ...any) error { return Explained(err, format, args...) }
	set := certOf(engine)
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
		return wrap("the server at %s requires a client certificate (%s): %s", addr, serverSaid(alert, "connection requires a valid client certificate"), set.give())
	case key == "" && c != nil && alert == "tls: bad certificate":
		return wrap("the server at %s asked for a client certificate and refused the connection without one (server said: bad certificate): %s", addr, set.give())
	case key == "" && c != nil && alert == "tls: handshake failure" && v.Cipher == "" && v.Group == "":
		// OpenSSL's TLS 1.2 answer to a missing client certificate.
		return wrap("%s refused the TLS handshake (server said: handshake failure): it shares no cipher suite with tlsbench for %s (check its TLS settings, or try --tls auto), or it requires a client certificate: %s", addr, variantName(v), set.give())
	case key != "" && alert == "tls: unknown certificate authority":
		return wrap("the server at %s rejected the client certificate %s (tls: unknown certificate authority): it does not trust the CA that signed it (%s): give a certificate that %s trusts, or add that CA there", addr, subject, issuer, set.ca)
	case key != "" && (alert == "tls: expired certificate" || alert == "tls: certificate expired"):
		return wrap("the server at %s rejected the client certificate %s (%s): it has expired or is not yet valid: renew it", addr, subject, alert)
	case key != "" && (alert == "tls: bad certificate" || alert == "tls: unsupported certificate" || alert == "tls: certificate unknown" || alert == "tls: certificate required"):
		return wrap("the server at %s rejected the client certificate %s (%s): check that %s trusts its issuer (%s) and that it is a client certificate (extended key usage clientAuth)", addr, subject, alert, set.ca, issuer)
	case key != "" && strings.Contains(msg, "certificate authentication failed for user"):
		return wrap("the server at %s accepted the client certificate %s but not for this user (certificate authentication failed): its common name must be the user name, or the server's pg_ident.conf must map it", addr, subject)
	case key == "" && c != nil && strings.Contains(msg, "Access denied for user"):
		return wrap("the server at %s denied the login (%s): a wrong user or password, or a user that requires a client certificate (REQUIRE X509): %s", addr, firstLine(msg), set.give())
	}
	return Explain(err, addr, v)
}

// ClosedAfterHandshake explains a connection to a server of engine that
// the server closed or reset during its setup, right after a TLS handshake
// that went through on the client's side, without an alert the client
// could read: a TLS 1.3 server judges the client's certificate after the
// client's handshake ended, and its alert is lost when the client's next
// write meets the reset first.
func ClosedAfterHandshake(err error, addr, engine string, c *tls.Config) error {
	set := certOf(engine)
	key := ClientCertKey(c)
	if key == "" {
		return Explained(err, "the server at %s closed the connection right after the TLS handshake (%s): if it requires a client certificate (%s), %s", addr, firstLine(err.Error()), set.demand, set.give())
	}
	cert, _ := c.GetClientCertificate(&tls.CertificateRequestInfo{})
	subject, issuer := certSubject(*cert)
	return Explained(err, "the server at %s closed the connection right after the TLS handshake (%s): it may have rejected the client certificate %s: check that %s trusts its issuer (%s)", addr, firstLine(err.Error()), subject, set.ca, issuer)
}

// CertNotRequested is the error of a connection to addr, a server of
// engine (a driver registry key), made for variant v with the client
// config c, whose TLS handshake held no CertificateRequest: the
// certificate c presents was never sent, and the figures would be those of
// TLS without it. It names how that engine's server is made to ask.
func CertNotRequested(addr, engine string, v plan.Variant, c *tls.Config) error {
	set := certOf(engine)
	leave := "leave --cert out"
	if set.param != "" {
		leave = "leave --cert (or the URL's " + set.param + ") out"
	}
	if v.SendsClientCert() {
		// The lab's own server: DemandClientCert failed to make it ask.
		leave = "the lab server should have been made to ask in the " + v.ClientCert + " variants: report this"
	}
	return fmt.Errorf("the server at %s did not ask for a client certificate (no CertificateRequest in its TLS handshake): the %s certificate given was not sent, and the figures would be those of TLS without it: make the server ask (%s), or %s",
		addr, ClientCertKey(c), set.ask, leave)
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
