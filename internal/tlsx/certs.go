// Package tlsx makes keys and certificates per key type and the TLS configs of variants.
package tlsx

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// GenerateKey makes a private key of one of plan.KeyTypes.
func GenerateKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "rsa1024":
		return rsa.GenerateKey(rand.Reader, 1024)
	case "rsa2048":
		return rsa.GenerateKey(rand.Reader, 2048)
	case "rsa4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ecdsa-p256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ecdsa-p384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("unknown key type %q: use one of %s", keyType, strings.Join(plan.KeyTypes, ", "))
}

// CA is a throw-away certificate authority (ECDSA P-256), valid from 1h ago
// for 30 days.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// validity of the CA and its leaves; starting an hour back tolerates clock
// skew between the machines of a run.
const (
	backdate = time.Hour
	lifetime = 30 * 24 * time.Hour
)

// NewCA makes a new throw-away CA.
func NewCA() (*CA, error) {
	key, err := GenerateKey("ecdsa-p256")
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"tlsbench"}, CommonName: "tlsbench throw-away CA"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// Pool returns a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue makes a leaf for hosts (IPs become IP SANs, names DNS SANs) with a
// key of keyType, signed by ca, for server authentication.
func (ca *CA) Issue(keyType string, hosts []string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	return ca.issue(keyType, hosts, now.Add(-backdate), now.Add(lifetime))
}

// issue is Issue with a chosen validity, so that tests can make expired leaves.
func (ca *CA) issue(keyType string, hosts []string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("issuing a certificate: no host names given")
	}
	return ca.sign(keyType, hosts[0], notBefore, notAfter, func(tmpl *x509.Certificate, key crypto.Signer) {
		// Client auth too: a peer that insists on mutual TLS (sysbench's
		// --mysql-ssl=on) can present a lab leaf its server will accept.
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		if _, ok := key.(*rsa.PrivateKey); ok {
			// TLS_RSA_* suites encrypt the premaster secret to the key.
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	})
}

// sign issues a leaf of keyType for commonName, valid from notBefore to
// notAfter, signed by ca: shape says what kind of leaf (its names and
// usages).
func (ca *CA) sign(keyType, commonName string, notBefore, notAfter time.Time, shape func(*x509.Certificate, crypto.Signer)) (certPEM, keyPEM []byte, err error) {
	key, err := GenerateKey(keyType)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"tlsbench"}, CommonName: commonName},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	shape(tmpl, key)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing a %s certificate for %s: %w", keyType, commonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// localHosts are the names every server certificate is issued for.
var localHosts = []string{"127.0.0.1", "::1", "localhost"}

// WriteServerFiles issues a leaf per key type for localHosts and more and writes
// dir/ca.crt, dir/<key>.crt and dir/<key>.key (keys 0600). Keys are
// generated in parallel, since rsa4096 alone can take seconds.
func WriteServerFiles(dir string, ca *CA, keyTypes []string, more ...string) error {
	for _, k := range keyTypes {
		if !slices.Contains(plan.KeyTypes, k) {
			return fmt.Errorf("unknown key type %q: use one of %s", k, strings.Join(plan.KeyTypes, ", "))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM, 0o644); err != nil {
		return err
	}
	errs := make([]error, len(keyTypes))
	var wg sync.WaitGroup
	for i, k := range keyTypes {
		wg.Go(func() {
			certPEM, keyPEM, err := ca.Issue(k, append(slices.Clone(localHosts), more...))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, k+".key"), keyPEM, 0o600)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, k+".crt"), certPEM, 0o644)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// LoadServerCert loads dir/<keyType>.crt and dir/<keyType>.key.
func LoadServerCert(dir, keyType string) (tls.Certificate, error) {
	certPEM, err := files.Read(filepath.Join(dir, keyType+".crt"), keyType+" certificate", files.MaxPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := files.Read(filepath.Join(dir, keyType+".key"), keyType+" key", files.MaxPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return c, fmt.Errorf("loading the %s certificate from %s: %w", keyType, dir, err)
	}
	return c, nil
}

// LoadCAFile reads a pool from a PEM file of one or more CA certificates
// (--ca, or a URL's tlsCAFile=): a regular file of at most files.MaxPEM
// bytes, so that /dev/zero or a FIFO is an error, not a hang.
func LoadCAFile(path string) (*x509.CertPool, error) {
	data, err := files.Read(path, "CA file", files.MaxPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", path, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----): pass the CA certificate in PEM form", path)
	}
	return pool, nil
}
