package lab

import (
	"context"
	"net"
	"net/url"
	"testing"
)

// TestDemandClientCert: every lab server started with client certificates
// asks for one exactly while it demands one (MariaDB always asks: its
// ssl_ca is set from the start), and issues the certificates it was asked
// for only.
func TestDemandClientCert(t *testing.T) {
	ctx := context.Background()
	for _, engine := range []string{"postgres", "mariadb", "redis", "mongodb"} {
		t.Run(engine, func(t *testing.T) {
			srv := startT(t, engine, Options{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256"}})
			cs := srv.(ClientCertServer)
			if _, err := cs.ClientCert("ecdsa-p256"); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ClientCert("rsa4096"); err == nil {
				t.Error("a client certificate of a key type it was not started with")
			}
			raw, err := cs.ClientCertURL("")
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(raw)
			tlsAddr := u.Host
			var prelude func(net.Conn) error
			switch engine {
			case "postgres":
				prelude = pgSSLRequest
			case "mariadb":
				prelude = mysqlSSLRequest
			}
			for _, on := range []bool{true, false, true} {
				how, err := cs.DemandClientCert(ctx, on)
				if err != nil {
					t.Fatal(err)
				}
				asked, err := asksClientCert(ctx, tlsAddr, srv.RootCAs(), prelude)
				if err != nil {
					t.Fatal(err)
				}
				want := on || engine == "mariadb"
				if asked != want {
					t.Errorf("demand %v: asked for a certificate: %v, want %v (%s)", on, asked, want, how)
				}
			}
		})
	}
}
