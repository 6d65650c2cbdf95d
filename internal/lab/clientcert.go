package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Client certificates (mutual TLS) in the lab. A server started with
// Options.ClientCerts has a client certificate per key type, issued by its
// CA for ClientCertUser, and can demand one signed by that CA:
//   - PostgreSQL: a twin of each bench user, NAME_mtls, whose pg_hba line
//     adds clientcert=verify-ca to the same method (so that a client
//     certificate variant and its off twin log in alike), and bench_cert
//     with the cert method (the certificate is the login); the server asks
//     for certificates only while ssl_ca_file is set, which
//     DemandClientCert switches with pg_reload_conf();
//   - MariaDB: a twin of each bench user, NAME_mtls, with REQUIRE X509;
//     the server asks every TLS client for a certificate (10.11 does with
//     or without ssl_ca), so nothing switches;
//   - Redis: CONFIG SET tls-auth-clients yes or no;
//   - FerretDB: a restart with or without --listen-tls-ca-file (it reads
//     its TLS settings once, at start);
//   - the built-in server: a second HTTPS listener per key that demands
//     one (tls.RequireAndVerifyClientCert).

// ClientCertUser is the common name of the lab's client certificates, and
// the PostgreSQL user that logs in by certificate alone.
const ClientCertUser = "bench_cert"

// mtlsSuffix names the twin of a bench user that needs a client certificate.
const mtlsSuffix = "_mtls"

// ClientCertServer is a lab server that can demand client certificates.
type ClientCertServer interface {
	// ClientCert is the client certificate of key type key (one of
	// Options.ClientCerts) that the lab CA issued for ClientCertUser.
	ClientCert(key string) (tls.Certificate, error)
	// ClientCertURL is how a client presenting one logs in with auth
	// method auth ("" for the default): a user the server admits only with
	// a certificate signed by the lab CA, where the engine has users.
	ClientCertURL(auth string) (string, error)
	// DemandClientCert makes the server demand a client certificate of
	// new TLS connections (on) or ask for none (off), and says how.
	DemandClientCert(ctx context.Context, on bool) (string, error)
}

// loadClientCert loads the client certificate of key from a lab dir.
func loadClientCert(engine, dir string, keys []string, key string) (tls.Certificate, error) {
	if !slices.Contains(keys, key) {
		return tls.Certificate{}, fmt.Errorf("%s lab server: no %s client certificate: it was started with %s", engine, key, strings.Join(keys, ", "))
	}
	return tlsx.LoadClientCert(tlsx.ClientCertFile(dir, key), tlsx.ClientKeyFile(dir, key))
}

// asksClientCert makes a TLS handshake with addr (after prelude, if any,
// on the raw connection) and reports whether the server asked for a client
// certificate; it presents none.
func asksClientCert(ctx context.Context, addr string, roots *x509.CertPool, prelude func(net.Conn) error) (bool, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if prelude != nil {
		if err := prelude(c); err != nil {
			return false, err
		}
	}
	asked := false
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked = true
			return &tls.Certificate{}, nil
		}})
	// TLS 1.3: the client's side of the handshake ends before the server
	// judges the (empty) certificate.
	if err := tc.HandshakeContext(ctx); err != nil {
		return false, err
	}
	return asked, nil
}

// pollAsks waits until the server at addr asks for a client certificate
// (on) or stops asking (off).
func pollAsks(ctx context.Context, engine, addr string, roots *x509.CertPool, prelude func(net.Conn) error, on bool) error {
	err := pgPoll(ctx, func() error {
		asked, err := asksClientCert(ctx, addr, roots, prelude)
		if err == nil && asked != on {
			err = fmt.Errorf("it still asks: %v", asked)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s lab server: switching client certificates %s: %w", engine, onOff(on), err)
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// PostgreSQL.

// hbaClientCert is pg_hba.conf's lines for the users that need a client
// certificate, from the addresses pgHBA admits; none without ClientCerts.
func (s *Postgres) hbaClientCert() string {
	if len(s.opts.ClientCerts) == 0 {
		return ""
	}
	from := "127.0.0.0/8"
	if s.opts.LocalhostOnly {
		from = "127.0.0.1/32"
	}
	var b strings.Builder
	for _, addr := range []string{from, "::1/128"} { // as pgHBA
		for _, u := range pgUsers {
			fmt.Fprintf(&b, "hostssl all %s %s %s clientcert=verify-ca\n", u.user+mtlsSuffix, addr, u.auth)
		}
		fmt.Fprintf(&b, "hostssl all %s %s cert\n", ClientCertUser, addr)
	}
	return b.String()
}

// pgClientCertUsers are the statements that create those users.
func (s *Postgres) pgClientCertUsers() []string {
	var stmts []string
	for _, u := range append(slices.Clone(pgUsers), struct{ auth, user string }{"cert", ClientCertUser}) {
		name := u.user + mtlsSuffix
		if u.auth == "cert" {
			name = u.user
		}
		stmts = append(stmts,
			fmt.Sprintf("CREATE ROLE %s LOGIN IN ROLE %s", name, pgOwner),
			fmt.Sprintf("ALTER ROLE %s SET role = '%s'", name, pgOwner))
		if u.auth == "md5" || u.auth == "scram-sha-256" {
			stmts = append(stmts,
				fmt.Sprintf("SET password_encryption = '%s'", u.auth),
				fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", name, s.password))
		}
	}
	return stmts
}

// ClientCert implements ClientCertServer.
func (s *Postgres) ClientCert(key string) (tls.Certificate, error) {
	return loadClientCert("PostgreSQL", s.dir, s.opts.ClientCerts, key)
}

// ClientCertURL implements ClientCertServer: the NAME_mtls twin of auth's
// user, or bench_cert for auth "cert" (no password: the certificate is
// the login).
func (s *Postgres) ClientCertURL(auth string) (string, error) {
	if auth == "cert" {
		return fmt.Sprintf("postgres://%s@%s/%s", ClientCertUser, s.addr(), pgDatabase), nil
	}
	return mtlsTwin(s.URL(auth, true))
}

// mtlsTwin is a lab URL with its user's NAME_mtls twin in place of the
// user, same password: the user the certificate variants log in as.
func mtlsTwin(raw string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	pw, _ := u.User.Password()
	u.User = url.UserPassword(u.User.Username()+mtlsSuffix, pw)
	return u.String(), nil
}

// DemandClientCert implements ClientCertServer: ssl_ca_file set (the
// server then asks every TLS client for a certificate, and the hba lines
// of the certificate users demand one) or reset, then pg_reload_conf().
func (s *Postgres) DemandClientCert(ctx context.Context, on bool) (string, error) {
	if len(s.opts.ClientCerts) == 0 {
		return "", errors.New("PostgreSQL lab: started without client certificates")
	}
	set := "ALTER SYSTEM RESET ssl_ca_file"
	if on {
		set = fmt.Sprintf("ALTER SYSTEM SET ssl_ca_file = '%s'", s.CAFile())
	}
	if err := s.superuserExec(ctx, "postgres", set, "SELECT pg_reload_conf()"); err != nil {
		return "", fmt.Errorf("PostgreSQL lab: switching client certificates %s: %w", onOff(on), err)
	}
	if err := pollAsks(ctx, "PostgreSQL", s.addr(), s.roots, pgSSLRequest, on); err != nil {
		if aerr := s.proc.alive(); aerr != nil {
			return "", aerr
		}
		return "", err
	}
	return "PostgreSQL: ALTER SYSTEM SET ssl_ca_file (or RESET), then pg_reload_conf(); its NAME_mtls users' pg_hba lines add clientcert=verify-ca to the same auth method", nil
}

// pgSSLRequest sends PostgreSQL's SSLRequest and reads the 'S'.
func pgSSLRequest(c net.Conn) error {
	if _, err := c.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}); err != nil {
		return err
	}
	answer := make([]byte, 1)
	if _, err := c.Read(answer); err != nil {
		return err
	}
	if answer[0] != 'S' {
		return fmt.Errorf("it refused TLS (answered %q)", answer)
	}
	return nil
}

// MariaDB.

// mysqlSSLRequest reads the server's greeting and sends the protocol's
// SSL request, after which the client starts TLS.
func mysqlSSLRequest(c net.Conn) error {
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		return err
	}
	const caps = 0x1 | 0x200 | 0x800 | 0x8000 // long password, 4.1, SSL, secure connection
	req := make([]byte, 4+32)
	req[0], req[3] = 32, 1
	binary.LittleEndian.PutUint32(req[4:], caps)
	binary.LittleEndian.PutUint32(req[8:], 1<<24)
	req[12] = 33 // utf8
	_, err := c.Write(req)
	return err
}

// mariaDBClientCertUsers are the statements that create the REQUIRE X509
// twins of the bench users, for account's host part.
func (m *MariaDB) mariaDBClientCertUsers(host string) []string {
	var stmts []string
	for _, h := range []string{host, "'::1'"} { // as the bench users
		for _, u := range mariaDBUsers {
			account := mariaDBQuote(u.user+mtlsSuffix) + "@" + h
			stmts = append(stmts,
				"CREATE USER "+account+" IDENTIFIED VIA "+u.via+" USING PASSWORD("+mariaDBQuote(m.password)+") REQUIRE X509",
				"GRANT ALL ON "+mariaDBDatabase+".* TO "+account)
		}
	}
	return stmts
}

// ClientCert implements ClientCertServer.
func (m *MariaDB) ClientCert(key string) (tls.Certificate, error) {
	return loadClientCert("MariaDB", m.dir, m.opts.ClientCerts, key)
}

// ClientCertURL implements ClientCertServer: the NAME_mtls twin of auth's
// user, created with REQUIRE X509.
func (m *MariaDB) ClientCertURL(auth string) (string, error) {
	return mtlsTwin(m.URL(auth, true))
}

// DemandClientCert implements ClientCertServer: MariaDB asks every TLS
// client for a certificate (10.11 with or without ssl_ca), and the REQUIRE
// X509 users demand one: nothing switches.
func (m *MariaDB) DemandClientCert(_ context.Context, _ bool) (string, error) {
	if len(m.opts.ClientCerts) == 0 {
		return "", errors.New("MariaDB lab: started without client certificates")
	}
	return "MariaDB: its NAME_mtls users are created with REQUIRE X509; the server asks every TLS client for a certificate, so the off twins also answer a CertificateRequest, with no certificate", nil
}

// Redis.

// ClientCert implements ClientCertServer.
func (r *redisServer) ClientCert(key string) (tls.Certificate, error) {
	return loadClientCert("redis", r.dir, r.opts.ClientCerts, key)
}

// ClientCertURL implements ClientCertServer: the same user and TLS port;
// the server demands the certificate of every TLS client.
func (r *redisServer) ClientCertURL(auth string) (string, error) { return r.URL(auth, true) }

// DemandClientCert implements ClientCertServer: CONFIG SET
// tls-auth-clients yes or no, for new connections.
func (r *redisServer) DemandClientCert(ctx context.Context, on bool) (string, error) {
	if len(r.opts.ClientCerts) == 0 {
		return "", errors.New("redis lab server: started without client certificates")
	}
	if _, err := r.command(ctx, "CONFIG", "SET", "tls-auth-clients", map[bool]string{true: "yes", false: "no"}[on]); err != nil {
		return "", fmt.Errorf("redis lab server: CONFIG SET tls-auth-clients: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.tlsPort))
	if err := pollAsks(ctx, "redis", addr, r.roots, nil, on); err != nil {
		return "", err
	}
	return "Redis: CONFIG SET tls-auth-clients yes (or no), with tls-ca-cert-file the lab CA", nil
}

// FerretDB.

// ClientCert implements ClientCertServer.
func (m *mongoServer) ClientCert(key string) (tls.Certificate, error) {
	return loadClientCert("mongodb", m.dir, m.opts.ClientCerts, key)
}

// ClientCertURL implements ClientCertServer: the same user (FerretDB has
// no X.509 authentication: the certificate is checked at the handshake,
// the login is SCRAM as in the off twin).
func (m *mongoServer) ClientCertURL(auth string) (string, error) { return m.URL(auth, true) }

// DemandClientCert implements ClientCertServer: FerretDB reads its TLS
// settings at start, so it restarts with --listen-tls-ca-file (it then
// demands a certificate signed by that CA) or without.
func (m *mongoServer) DemandClientCert(ctx context.Context, on bool) (string, error) {
	if len(m.opts.ClientCerts) == 0 {
		return "", errors.New("mongodb lab server: started without client certificates")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.demand != on {
		if err := m.restart(ctx, func() { m.demand = on }); err != nil {
			return "", fmt.Errorf("mongodb lab server: restarting with client certificates %s: %w", onOff(on), err)
		}
	}
	if err := pollAsks(ctx, "mongodb", m.addr(m.tlsPort), m.roots, nil, on); err != nil {
		return "", err
	}
	return "FerretDB: restarted with --listen-tls-ca-file (or without): it reads its TLS settings once, at start", nil
}

// The built-in server.

// ClientCert implements ClientCertServer.
func (b *Builtin) ClientCert(key string) (tls.Certificate, error) {
	return loadClientCert("built-in server", b.dir, b.opts.ClientCerts, key)
}

// MTLSEndpoint is the address of key's listener that demands a client
// certificate, "" if none.
func (b *Builtin) MTLSEndpoint(key string) string { return b.ready.MTLS[key] }
