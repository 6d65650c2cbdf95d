package plan

import (
	"net/url"
	"slices"
	"strings"
)

// Client certificates (mutual TLS), spelled as each ecosystem spells them:
//   - PostgreSQL: sslcert=, sslkey=, sslrootcert= (a file, or "system" for
//     the system's roots), with libpq's sslmode meanings: verify-ca checks
//     the chain but not the host name, verify-full both, require neither
//     (unless sslrootcert names a file: then, as libpq does, verify-ca);
//   - MySQL and MariaDB: ssl-ca=, ssl-cert=, ssl-key=, named after the
//     mysql client's --ssl-ca, --ssl-cert and --ssl-key (go-sql-driver's
//     DSN has none: it takes certificates only through a tls.Config
//     registered in Go code);
//   - MongoDB: tlsCertificateKeyFile= (one PEM with the certificate and
//     its key) beside tlsCAFile=, and authMechanism=MONGODB-X509;
//   - any engine: --cert FILE --cert-key FILE, as curl and redis-cli spell
//     them (Spec.CertFile, Spec.CertKeyFile).
//
// A file given both in the URL and by flag is refused rather than one
// chosen silently. Paths are recorded; the key's contents never are.

// ClientCertOff is the ClientCerts entry (and Variant.ClientCert) of a
// variant that sends no client certificate, the twin of those that do.
const ClientCertOff = "off"

// clientCertParams reads the client certificate parameters of a URL's
// query into t: t.CertFile, t.KeyFile and t.CAFile, and for PostgreSQL the
// verification sslmode and sslrootcert ask for.
func (t *Target) clientCertParams(scheme string, q url.Values) error {
	switch scheme {
	case "postgres", "postgresql":
		t.CertFile, t.KeyFile = q.Get("sslcert"), q.Get("sslkey")
		if t.CertFile != "" && t.KeyFile == "" {
			// libpq would read ~/.postgresql/postgresql.key, pgx refuses.
			return errorf("sslcert= without sslkey=: give sslkey= too (tlsbench reads no default key file)")
		}
		switch root := q.Get("sslrootcert"); root {
		case "":
		case "system":
			// The system's roots, and libpq then insists on verify-full.
			if m := q.Get("sslmode"); m != "" && m != "verify-full" {
				return errorf("sslrootcert=system: libpq allows it with sslmode=verify-full only: give sslmode=verify-full")
			}
			t.SystemRoots = true
		default:
			t.CAFile = root
		}
		switch q.Get("sslmode") {
		case "verify-ca":
			t.SkipHostname = true
		case "require":
			if t.CAFile != "" {
				// libpq: "if a root CA file exists, the behavior of
				// sslmode=require will be the same as that of verify-ca".
				t.Insecure, t.SkipHostname = false, true
			}
		}
	case "mysql":
		t.CAFile, t.CertFile, t.KeyFile = q.Get("ssl-ca"), q.Get("ssl-cert"), q.Get("ssl-key")
		for _, k := range []string{"ssl_ca", "ssl_cert", "ssl_key", "sslca", "sslcert", "sslkey"} {
			if q.Has(k) {
				return errorf("%s: use ssl-ca=, ssl-cert= and ssl-key=, as the mysql client's --ssl-ca, --ssl-cert and --ssl-key", k)
			}
		}
		if t.CAFile != "" && t.Insecure {
			return errorf("ssl-ca= verifies the server, tls=skip-verify does not: give tls=true with ssl-ca=")
		}
	case "mongodb":
		for k, vs := range q {
			switch strings.ToLower(k) {
			case "tlscertificatekeyfile", "sslclientcertificatekeyfile":
				t.CertFile = vs[len(vs)-1]
				t.KeyFile = t.CertFile
			case "tlscertificatefile", "tlsprivatekeyfile":
				return errorf("%s: give the certificate and its key in one PEM file as tlsCertificateKeyFile=", k)
			case "tlscertificatekeyfilepassword", "sslclientcertificatekeypassword":
				return errorf("%s: tlsbench does not decrypt keys: decrypt it once (openssl pkey -in key.pem -out plain.pem) and leave the password out", k)
			case "authmechanism":
				t.X509Auth = strings.EqualFold(vs[len(vs)-1], "MONGODB-X509")
			}
		}
		if t.CertFile != "" && t.OwnTLS == "off" {
			// A TLS option turns TLS on, as the drivers do.
			t.DefaultTLS, t.OwnTLS = []string{"off", "auto"}, "auto"
		}
		if t.X509Auth {
			t.DefaultTLS = []string{"auto"} // the login is the certificate: no plain variant
		}
	}
	if t.KeyFile != "" && t.CertFile == "" {
		return errorf("%s names a key but no certificate: give the certificate too (%s)", t.Redacted, certParam(scheme))
	}
	if t.CertFile != "" && t.KeyFile == "" {
		// libpq's default ~/.postgresql/postgresql.key is not read: the key
		// may be in the certificate's file, as curl allows.
		t.KeyFile = t.CertFile
	}
	return nil
}

// certParam names the URL parameters of a client certificate.
func certParam(scheme string) string {
	switch scheme {
	case "postgres", "postgresql":
		return "sslcert= and sslkey="
	case "mysql":
		return "ssl-cert= and ssl-key="
	case "mongodb":
		return "tlsCertificateKeyFile="
	}
	return "--cert and --cert-key"
}

// ClientCertField names, for an error about the client certificate s
// names, where the user gave the file at fault: the certificate's (part
// "cert"), its key's ("key"), or both ("pair", a key that is not the
// certificate's): the flags, as fields (⟨cert_file⟩, ⟨cert_key_file⟩), or
// the URL's own parameters (sslcert=, sslkey=, ...) when t holds them. A
// key in the certificate's file is the certificate's.
func (s Spec) ClientCertField(t Target, part string) string {
	cert, key := "⟨cert_file⟩", "⟨cert_key_file⟩"
	if t.CertFile != "" {
		switch t.Scheme {
		case "postgres", "postgresql":
			cert, key = "sslcert=", "sslkey="
		case "mysql":
			cert, key = "ssl-cert=", "ssl-key="
		case "mongodb":
			cert, key = "tlsCertificateKeyFile=", "tlsCertificateKeyFile="
		}
	}
	switch {
	case s.CertKeyFile == "" || s.CertKeyFile == s.CertFile || part == "cert":
		return cert
	case part == "key":
		return key
	}
	return cert + " and " + key
}

// clientCerts fills and checks the client certificate fields against t.
func (s *Spec) clientCerts(t Target) error {
	if s.CertKeyFile != "" && s.CertFile == "" {
		return errorf("⟨cert_key_file⟩ without ⟨cert_file⟩: give the certificate too")
	}
	if s.CertFile != "" && t.CertFile != "" {
		return errorf("⟨cert_file⟩ and the URL's %s both name a client certificate: give one of them", certParam(t.Scheme))
	}
	if t.CertFile != "" {
		s.CertFile, s.CertKeyFile = t.CertFile, t.KeyFile
	}
	if s.CertFile != "" && s.CertKeyFile == "" {
		s.CertKeyFile = s.CertFile // the key in the certificate's file
	}
	if t.X509Auth && s.CertFile == "" {
		return errorf("authMechanism=MONGODB-X509 logs in with the client certificate: give tlsCertificateKeyFile= (or ⟨cert_file⟩)")
	}
	if s.CertFile != "" {
		if t.Builtin || t.Lab != "" {
			return errorf("⟨cert_file⟩ applies to URL targets: against the servers tlsbench starts, compare ⟨client_certs⟩ off,rsa2048,... (their CA issues the certificates)")
		}
		if !slices.ContainsFunc(s.TLS, func(m string) bool { return m != "off" }) {
			return errorf("⟨cert_file⟩ is sent in the TLS handshake: add 1.2, 1.3 or auto to ⟨tls⟩")
		}
	}
	if len(s.ClientCerts) == 0 {
		return nil
	}
	if !t.Builtin && t.Lab == "" {
		return errorf("⟨client_certs⟩ applies to servers tlsbench starts (builtin, ⟨lab⟩ ENGINE): against a URL, give ⟨cert_file⟩ and ⟨cert_key_file⟩")
	}
	for _, k := range s.ClientCerts {
		if k != ClientCertOff && !slices.Contains(KeyTypes, k) {
			return errorf("⟨client_certs⟩: unknown key type %q: use off or one of %s", k, strings.Join(KeyTypes, ", "))
		}
	}
	if err := twice("⟨client_certs⟩", s.ClientCerts, func(k string) string { return k }); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.TLS, func(m string) bool { return m != "off" }) {
		return errorf("⟨client_certs⟩ applies to TLS variants: add 1.2, 1.3 or auto to ⟨tls⟩")
	}
	return nil
}

// clientCertList is the client certificate dimension: {""} without one.
func (s Spec) clientCertList() []string {
	if len(s.ClientCerts) == 0 {
		return []string{""}
	}
	return s.ClientCerts
}

// SendsClientCert reports whether the variant presents a lab client
// certificate (of key type v.ClientCert).
func (v Variant) SendsClientCert() bool {
	return v.ClientCert != "" && v.ClientCert != ClientCertOff
}

// clientCertID is a variant ID's part for its client certificate: "mtls-KEY",
// none for the off twin.
func clientCertID(v Variant) string {
	if v.SendsClientCert() {
		return "mtls-" + v.ClientCert
	}
	return ""
}
