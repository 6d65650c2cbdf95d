package server

import (
	"crypto/tls"

	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// WriteCerts makes a throw-away CA and a certificate per key type for
// 127.0.0.1, ::1 and localhost, and writes them into dir (ca.crt,
// <key>.crt, <key>.key), as the server's listeners load them.
func WriteCerts(dir string, keys []string) error {
	ca, err := tlsx.NewCA()
	if err != nil {
		return err
	}
	return tlsx.WriteServerFiles(dir, ca, keys)
}

// LoadCerts loads dir/<key>.crt and dir/<key>.key for every key type, as
// Config.Certs takes them.
func LoadCerts(dir string, keys []string) (map[string]tls.Certificate, error) {
	certs := map[string]tls.Certificate{}
	for _, k := range keys {
		c, err := tlsx.LoadServerCert(dir, k)
		if err != nil {
			return nil, err
		}
		certs[k] = c
	}
	return certs, nil
}
