package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgConnect logs in to the lab server as the user of auth, with TLS when
// tlsConfig is set, and returns the connection.
func pgConnect(t *testing.T, s *Postgres, auth string, tlsConfig *tls.Config) (*pgconn.PgConn, error) {
	t.Helper()
	raw, err := s.URL(auth, tlsConfig != nil)
	if err != nil {
		t.Fatal(err)
	}
	return pgDial(context.Background(), raw, tlsConfig)
}

// pgDial connects to rawURL, with TLS (after an SSLRequest) when tlsConfig
// is set, and nothing else.
func pgDial(ctx context.Context, rawURL string, tlsConfig *tls.Config) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		return nil, errors.New("parsing the lab URL failed") // its error quotes the URL
	}
	cfg.TLSConfig, cfg.Fallbacks = tlsConfig, nil
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgconn.ConnectConfig(ctx, cfg)
}

// pgLogin is the lifecycle suite's login: connect, SELECT 1, close.
func pgLogin(ctx context.Context, rawURL string, tlsConfig *tls.Config) (tls.ConnectionState, error) {
	c, err := pgDial(ctx, rawURL, tlsConfig)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close(context.Background())
	var state tls.ConnectionState
	if tc, ok := c.Conn().(*tls.Conn); ok {
		state = tc.ConnectionState()
	}
	_, err = c.Exec(ctx, "SELECT 1").ReadAll()
	return state, err
}

// TestPostgresWrongPassword checks that the password matters for the
// password methods, and that the error does not quote it.
func TestPostgresWrongPassword(t *testing.T) {
	s := startT(t, "postgres", Options{Keys: []string{"ecdsa-p256"}}).(*Postgres)
	for _, auth := range []string{"scram-sha-256", "md5"} {
		raw, _ := s.URL(auth, false)
		u, _ := url.Parse(raw)
		u.User = url.UserPassword(u.User.Username(), "not-"+s.password)
		cfg, err := pgconn.ParseConfig(u.String())
		if err != nil {
			t.Fatal("parsing the URL failed")
		}
		cfg.TLSConfig, cfg.Fallbacks = nil, nil
		_, err = pgconn.ConnectConfig(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "password authentication failed") {
			t.Errorf("%s with a wrong password: %v", auth, err)
		}
		if err != nil && strings.Contains(err.Error(), s.password) {
			t.Errorf("%s: the error holds the password", auth)
		}
	}
}

// TestPostgresResumption tries to resume TLS sessions with TLS 1.3 and
// TLS 1.2: PostgreSQL gives no tickets and resumes nothing. It also checks
// that the server asks for no client certificate, as by default.
func TestPostgresResumption(t *testing.T) {
	s := startT(t, "postgres", Options{Keys: []string{"ecdsa-p256"}}).(*Postgres)
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		cache := &pgTicketCache{ClientSessionCache: tls.NewLRUClientSessionCache(8)}
		asked := 0
		cfg := &tls.Config{RootCAs: s.RootCAs(), ServerName: "127.0.0.1", MinVersion: version, MaxVersion: version,
			ClientSessionCache: cache,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				asked++
				return &tls.Certificate{}, nil
			},
		}
		for i := range 3 {
			c, err := pgConnect(t, s, "trust", cfg)
			if err != nil {
				t.Fatal(err)
			}
			state := c.Conn().(*tls.Conn).ConnectionState()
			if state.DidResume {
				t.Errorf("%s: connection %d resumed a session", tls.VersionName(version), i)
			}
			c.Close(context.Background())
		}
		if asked != 0 {
			t.Errorf("%s: the server asked for a client certificate in %d of 3 handshakes", tls.VersionName(version), asked)
		}
		t.Logf("%s: the server gave %d session tickets in 3 connections and resumed none", tls.VersionName(version), cache.puts())
	}
}

// pgTicketCache counts the sessions a server gave the client to resume.
type pgTicketCache struct {
	tls.ClientSessionCache
	mu sync.Mutex
	n  int
}

func (c *pgTicketCache) Put(key string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	c.ClientSessionCache.Put(key, cs)
}

func (c *pgTicketCache) puts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestPostgresPlainOnly starts two servers at once, one without TLS: their
// ports differ, and the plain one refuses TLS.
func TestPostgresPlainOnly(t *testing.T) {
	slow(t)
	opts := []Options{{Keys: []string{"ecdsa-p256"}, PlainOnly: true}, {Keys: []string{"ecdsa-p256"}}}
	srvs := make([]Server, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { srvs[i], errs[i] = Start(context.Background(), "postgres", o) })
	}
	wg.Wait()
	plain, other := started(t, srvs[0], errs[0]).(*Postgres), started(t, srvs[1], errs[1]).(*Postgres)
	if plain.port == other.port || plain.dir == other.dir {
		t.Errorf("two servers share port %d or dir %s", plain.port, plain.dir)
	}
	if c, err := pgConnect(t, plain, "", nil); err != nil {
		t.Errorf("plain login: %v", err)
	} else {
		c.Close(context.Background())
	}
	_, err := pgConnect(t, plain, "", &tls.Config{RootCAs: plain.RootCAs(), ServerName: "127.0.0.1"})
	if err == nil || !strings.Contains(err.Error(), "server refused TLS") {
		t.Errorf("TLS to a plain-only server: %v", err)
	}
	if _, err := plain.UseKey(context.Background(), "ecdsa-p256"); err == nil {
		t.Error("UseKey on a plain-only server succeeded")
	}
	if plain.Info().Settings["ssl"] == "on" {
		t.Errorf("plain-only Info() says ssl %s", plain.Info().Settings["ssl"])
	}
}

// TestPostgresStartFailure breaks the configuration of a server: its start
// fails with the end of its log, and the whole log is kept.
func TestPostgresStartFailure(t *testing.T) {
	slow(t)
	s, err := initPostgres(context.Background(), Options{Keys: []string{"ecdsa-p256"}})
	started(t, s, err)
	conf, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf.WriteString("max_connections = -5\n")
	conf.Close()
	err = s.start(context.Background())
	if err == nil {
		t.Fatal("a server with max_connections = -5 started")
	}
	t.Log(err)
	m := regexp.MustCompile(`its whole log is kept in (\S+)\)`).FindStringSubmatch(err.Error())
	if !strings.Contains(err.Error(), `"max_connections"`) || m == nil {
		t.Fatalf("the error quotes neither the log's end nor where the log was kept: %v", err)
	}
	defer os.Remove(m[1])
	if data, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(data), "configuration file") {
		t.Errorf("kept log %s: %v\n%s", m[1], err, data)
	}
}

// checkPostgres is what only the PostgreSQL lab server promises (the
// lifecycle suite runs it): a user per auth method, the settings Info
// reports, one port for every key and for plaintext, and RSA-1024 made to
// work by the postmaster's OpenSSL configuration, which the notes say.
func checkPostgres(t *testing.T, srv Server, key string) {
	s := srv.(*Postgres)
	if got := s.Auths(); strings.Join(got, ",") != "scram-sha-256,md5,trust" {
		t.Errorf("Auths() = %v", got)
	}
	info := s.Info()
	t.Logf("%s %s; settings %v", info.Software, info.Version, info.Settings)
	if !strings.HasPrefix(info.Version, "1") || info.Settings["ssl"] != "on" || info.Settings["key"] != key ||
		info.Settings["password_encryption"] != "scram-sha-256" || info.Settings["ssl_min_protocol_version"] == "" ||
		!strings.Contains(info.Settings["openssl_conf"], "@SECLEVEL=0") {
		t.Errorf("Info() = %+v", info)
	}
	for k, ep := range info.Endpoints {
		if ep != s.addr() {
			t.Errorf("endpoint of %q = %q, want %s", k, ep, s.addr())
		}
	}
	if !strings.Contains(strings.Join(s.Notes(), " "), "OPENSSL_CONF") {
		t.Errorf("the notes do not say how RSA-1024 works: %q", s.Notes())
	}
}
