package tlsx

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// Parts of a client certificate a ClientCertError is about.
const (
	PartCert = "cert" // the certificate's file
	PartKey  = "key"  // the key's file
	PartPair = "pair" // both: a key that is not the certificate's
)

// ClientCertError is a client certificate or key file that cannot be used:
// the user's input, one line naming the file and the fix. Part says which
// file is at fault, for the caller to name the flag or URL parameter that
// gave it.
type ClientCertError struct {
	Part string
	err  error
}

func (e *ClientCertError) Error() string { return e.err.Error() }
func (e *ClientCertError) Unwrap() error { return e.err }

// LoadClientCert loads a client certificate and its key (mutual TLS) from
// PEM files, which may be one file. Every failure is a *ClientCertError,
// one line naming the file and the fix; an encrypted key is refused, never
// prompted for.
func LoadClientCert(certFile, keyFile string) (tls.Certificate, error) {
	if keyFile == "" {
		keyFile = certFile
	}
	fail := func(part string, err error) (tls.Certificate, error) {
		if errors.Is(err, fs.ErrNotExist) {
			file, what := certFile, "certificate"
			if part == PartKey {
				file, what = keyFile, "key"
			}
			err = fmt.Errorf("%s: no such file: give the path of the client %s (PEM)", file, what)
		}
		return tls.Certificate{}, &ClientCertError{Part: part, err: err}
	}
	certPEM, err := files.Read(certFile, "client certificate", files.MaxPEM)
	if err != nil {
		return fail(PartCert, err)
	}
	keyPEM := certPEM
	if keyFile != certFile {
		if keyPEM, err = files.Read(keyFile, "client key", files.MaxPEM); err != nil {
			return fail(PartKey, err)
		}
	}
	if !hasBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return fail(PartCert, fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the client certificate in PEM form (openssl x509 -in cert.der -inform der -out cert.pem)", certFile))
	}
	if encrypted(keyPEM) {
		return fail(PartKey, fmt.Errorf("the key in %s is encrypted: tlsbench does not prompt for passwords: decrypt it once into a file only you can read (openssl pkey -in %s -out plain.pem) and give that", keyFile, keyFile))
	}
	if !hasBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return fail(PartKey, fmt.Errorf("%s holds no PEM private key (-----BEGIN PRIVATE KEY-----): give the client certificate's key in PEM form", keyFile))
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if strings.Contains(err.Error(), "does not match") {
			return fail(PartPair, fmt.Errorf("the certificate in %s does not match the key in %s: give the key the certificate was issued for", certFile, keyFile))
		}
		// Keep crypto/tls's reason, which never quotes the key.
		return fail(PartPair, fmt.Errorf("loading the client certificate %s with the key %s: %v: give a PEM certificate and its unencrypted PEM key", certFile, keyFile, err))
	}
	return c, nil
}

// KeyExposed says, for a client key file that others than its owner may
// read or write (mode & 0o077, which libpq refuses), what to do about it;
// "" for a file only its owner can use, or one that cannot be read.
func KeyExposed(keyFile string) string {
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("the client key %s can be read or written by others than its owner (mode %04o; libpq refuses such a key): used anyway: chmod 600 %s", keyFile, fi.Mode().Perm(), keyFile)
}

// hasBlock reports whether data holds a PEM block whose type is ok.
func hasBlock(data []byte, ok func(typ string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if ok(b.Type) {
			return true
		}
	}
}

// encrypted reports whether data holds an encrypted private key: PKCS#8's
// ENCRYPTED PRIVATE KEY, or a legacy OpenSSL key with Proc-Type:
// 4,ENCRYPTED, and no plain key beside it.
func encrypted(data []byte) bool {
	found := false
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return found
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY", strings.HasSuffix(b.Type, "PRIVATE KEY") && strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED"):
			found = true
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			return false
		}
	}
}

// IssueClient makes a client certificate with a key of keyType for the
// user commonName (its subject's CN, which PostgreSQL's cert
// authentication matches against the user name), signed by ca.
func (ca *CA) IssueClient(keyType, commonName string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	return ca.issueClient(keyType, commonName, now.Add(-backdate), now.Add(lifetime))
}

func (ca *CA) issueClient(keyType, commonName string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	return ca.sign(keyType, commonName, notBefore, notAfter, func(tmpl *x509.Certificate, _ crypto.Signer) {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
}

// ClientCertFile and ClientKeyFile are where WriteClientFiles puts the
// client certificate of a key type, in dir.
func ClientCertFile(dir, keyType string) string {
	return filepath.Join(dir, "client-"+keyType+".crt")
}
func ClientKeyFile(dir, keyType string) string { return filepath.Join(dir, "client-"+keyType+".key") }

// WriteClientFiles issues a client certificate for commonName per key type
// and writes it to ClientCertFile and ClientKeyFile (keys 0600).
func WriteClientFiles(dir string, ca *CA, keyTypes []string, commonName string) error {
	errs := make([]error, len(keyTypes))
	var wg sync.WaitGroup
	for i, k := range keyTypes {
		if !slices.Contains(plan.KeyTypes, k) {
			return fmt.Errorf("unknown key type %q: use one of %s", k, strings.Join(plan.KeyTypes, ", "))
		}
		wg.Go(func() {
			certPEM, keyPEM, err := ca.IssueClient(k, commonName)
			if err == nil {
				err = os.WriteFile(ClientKeyFile(dir, k), keyPEM, 0o600)
			}
			if err == nil {
				err = os.WriteFile(ClientCertFile(dir, k), certPEM, 0o644)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ClientCertKey names the key of the client certificate c presents when a
// server asks for one ("ECDSA-P256"), "" if it has none.
func ClientCertKey(c *tls.Config) string {
	if c == nil {
		return ""
	}
	if c.GetClientCertificate != nil {
		cert, err := c.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err == nil && cert != nil {
			return certKey(*cert)
		}
		return ""
	}
	if len(c.Certificates) > 0 {
		return certKey(c.Certificates[0])
	}
	return ""
}

func certKey(c tls.Certificate) string {
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	return PeerKey(leaf)
}

// certSubject describes c's leaf for errors: its subject and issuer.
func certSubject(c tls.Certificate) (subject, issuer string) {
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	if leaf == nil {
		return "", ""
	}
	return leaf.Subject.String(), leaf.Issuer.String()
}

// SkipHostname returns a copy of cfg that verifies the server's chain
// against cfg.RootCAs but not its name: libpq's sslmode=verify-ca,
// MongoDB's tlsAllowInvalidHostnames=true.
func SkipHostname(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	roots := c.RootCAs
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
	return c
}

// presentAlways makes c present cert whenever the server asks, as libpq,
// the mysql client and curl do: crypto/tls would otherwise send none when
// the server's list of acceptable CAs leaves out the certificate's issuer,
// and the server's "certificate required" would hide the real mismatch.
func presentAlways(c *tls.Config, cert tls.Certificate) {
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
}
