package bench

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestVerifyClientCert: a session that presents a client certificate to a
// server that says it saw none fails the check, whether the certificate is
// the lab's (a --client-cert variant) or the user's (--cert); where the
// server cannot say, or saw one, it passes.
func TestVerifyClientCert(t *testing.T) {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient("ecdsa-p256", "bench_cert")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	lab := plan.Variant{ID: "tls1.3 mtls-ecdsa-p256", TLS: "1.3", ClientCert: "ecdsa-p256"}
	url := plan.Variant{ID: "tls1.3", TLS: "1.3"}
	labCfg, _ := tlsx.ClientConfig(lab, tlsx.ClientOptions{ClientCerts: map[string]tls.Certificate{"ecdsa-p256": cert}})
	urlCfg, _ := tlsx.ClientConfig(url, tlsx.ClientOptions{Certificate: &cert})
	none, _ := tlsx.ClientConfig(url, tlsx.ClientOptions{})
	saw := &driver.ServerView{TLS: true, ClientCert: "/O=tlsbench/CN=bench_cert", ClientCertKnown: true}
	sawNone := &driver.ServerView{TLS: true, ClientCertKnown: true}
	cannotSay := &driver.ServerView{TLS: true}
	for _, tt := range []struct {
		name   string
		v      plan.Variant
		c      *tls.Config
		server *driver.ServerView
		want   string
	}{
		{"lab, seen", lab, labCfg, saw, ""},
		{"lab, not seen", lab, labCfg, sawNone, "presents a client certificate (ecdsa-p256) but the server saw none"},
		{"url, not seen", url, urlCfg, sawNone, "was given but the server saw none: it does not ask for one"},
		{"url, cannot say", url, urlCfg, cannotSay, ""},
		{"no engine view", url, urlCfg, nil, ""},
		{"no certificate", url, none, sawNone, ""},
	} {
		err := verifyClientCert(tt.v, tt.c, tt.server)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
