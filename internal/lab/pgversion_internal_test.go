package lab

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"strings"
	"testing"
)

func TestTLSLibrary(t *testing.T) {
	for _, v := range []string{"", "18"} {
		bin, err := postgresVersionBin(v)
		if err != nil {
			needInstalled(t, err)
			continue
		}
		got := tlsLibrary(filepath.Join(bin, "postgres"))
		t.Logf("postgres %q: %s", v, got)
		if !strings.HasPrefix(got, "OpenSSL ") {
			t.Errorf("postgres %q in %s: TLS library %q, want OpenSSL's banner", v, bin, got)
		}
	}
}

// TestPostgres18 starts PostgreSQL 18 (OpenSSL 1.1) and logs in over TLS
// 1.3 directly, with ALPN "postgresql" and no SSLRequest, and after one,
// as PostgreSQL 17 and later allow; X25519 is taken without a
// HelloRetryRequest.
func TestPostgres18(t *testing.T) {
	slow(t)
	ctx := context.Background()
	srv, err := Start(ctx, "postgres:18", Options{Keys: []string{"ecdsa-p256"}})
	s := started(t, srv, err).(*Postgres)
	info := s.Info()
	if !strings.HasPrefix(info.Version, "18.") || !strings.HasPrefix(info.Settings["tls_library"], "OpenSSL 1.1") {
		t.Errorf("version %q, TLS library %q: want 18.x with OpenSSL 1.1", info.Version, info.Settings["tls_library"])
	}
	if info.Settings["ssl_groups"] == "" {
		t.Errorf("no ssl_groups read from PostgreSQL 18: %v", info.Settings)
	}
	raw, err := s.URL("", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, neg := range []string{"postgres", "direct"} {
		cfg, err := pgconn.ParseConfig(raw + "?sslmode=verify-full&sslnegotiation=" + neg)
		if err != nil {
			t.Fatal("parsing the lab URL failed")
		}
		cfg.TLSConfig.RootCAs, cfg.TLSConfig.ServerName, cfg.TLSConfig.MinVersion = s.RootCAs(), "127.0.0.1", tls.VersionTLS13
		cfg.Fallbacks = nil
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := pgconn.ConnectConfig(cctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("sslnegotiation=%s: %v", neg, err)
		}
		state := c.Conn().(*tls.Conn).ConnectionState()
		if state.Version != tls.VersionTLS13 || state.DidResume {
			t.Errorf("sslnegotiation=%s: version %x resumed %v", neg, state.Version, state.DidResume)
		}
		if neg == "direct" && state.NegotiatedProtocol != "postgresql" {
			t.Errorf("direct TLS negotiated ALPN %q, want postgresql", state.NegotiatedProtocol)
		}
		res, err := c.Exec(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").ReadAll()
		if err != nil || len(res) != 1 || len(res[0].Rows) != 1 || string(res[0].Rows[0][0]) != "t" {
			t.Errorf("sslnegotiation=%s: pg_stat_ssl says %v (%v)", neg, res, err)
		}
		c.Close(ctx)
	}
}
