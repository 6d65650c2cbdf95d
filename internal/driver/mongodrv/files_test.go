package mongodrv

import (
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestFileOptions: the official driver reads tlsCAFile= whole as it parses
// the URI; New drops it (the caller loads the CA into cfg.TLS, bounded), so
// tlsCAFile=/dev/zero or a FIFO costs nothing. A passfile that is not a
// regular file is a one-line error; tlsCertificateKeyFile= is dropped too
// (the caller loads it into cfg.TLS), separate certificate and key files
// are refused.
func TestFileOptions(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ca.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ query, want string }{
		{"tls=true&tlsCAFile=/dev/zero", ""},
		{"tls=true&tlsCAFile=" + fifo, ""},
		{"ssl=true&sslCertificateAuthorityFile=/dev/zero", ""},
		{"tls=true&tlsCertificateKeyFile=/dev/zero", ""},
		{"tls=true&tlsCertificateFile=/dev/zero", "in one PEM file as tlsCertificateKeyFile="},
		{"passfile=/dev/zero", "passfile /dev/zero is not a regular file"},
		{"passfile=" + url.QueryEscape(fifo), "is not a regular file (a named pipe)"},
	} {
		u, _ := url.Parse("mongodb://bench@127.0.0.1:1/?" + tc.query)
		cfg := driver.Config{Variant: plan.Variant{TLS: "off"}, Addr: u.Host, Dialer: &netx.Dialer{}, Timeout: time.Second, URL: u,
			Workload: driver.Workload{Name: WorkloadFindOne, Rows: 1}}
		var err error
		start := time.Now()
		growth := drivertest.HeapGrowth(func() { _, err = New(cfg) })
		took := time.Since(start)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.query, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.query, err, tc.want)
		}
		if took > drivertest.Margin || growth > drivertest.MaxGrowth {
			t.Errorf("%s: New took %v and %d MiB", tc.query, took, growth>>20)
		}
		t.Logf("%s: %v (%v, heap +%d KiB)", tc.query, err, took.Round(time.Microsecond), growth>>10)
	}
}
