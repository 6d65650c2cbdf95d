package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

func init() { starters["postgres"] = startPostgres }

// The lab PostgreSQL server's users, one per auth method, and its database.
const (
	pgSuperuser = "postgres" // local socket only, trust
	pgOwner     = "bench_owner"
	pgDatabase  = "bench"
)

// pgUsers maps each auth method to the user that logs in with it, in the
// order Auths lists them.
var pgUsers = []struct{ auth, user string }{
	{"scram-sha-256", "bench_scram"},
	{"md5", "bench_md5"},
	{"trust", "bench_trust"},
}

// pgOpenSSLConf lowers OpenSSL's security level for the postmaster only:
// Debian's default (SECLEVEL=2) refuses to load a 1024-bit RSA key, and
// ssl_ciphers cannot change it, but the process's OpenSSL configuration can.
const pgOpenSSLConf = `openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
CipherString = DEFAULT:@SECLEVEL=0
`

// Postgres is a running lab PostgreSQL server.
type Postgres struct {
	labBase
	port  int
	bin   string
	runAs *syscall.Credential // nil: this process's own user
	// standby is set on a cluster's replica (cluster.go): a copy of its
	// primary, read-only.
	standby bool

	mu       sync.Mutex
	key      string // the key presented now
	version  string
	settings map[string]string
}

// startPostgres initializes a data directory in a new 0700 temp dir and
// starts the postmaster on a free loopback port, as the postgres OS user
// when this process is root (PostgreSQL refuses to run as root).
func startPostgres(ctx context.Context, o Options) (Server, error) {
	s, err := initPostgres(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// initPostgres makes everything the server needs but does not start it:
// its directory, certificates, password and data directory.
func initPostgres(ctx context.Context, o Options) (_ *Postgres, err error) {
	bin, err := postgresVersionBin(o.Version)
	if err != nil {
		return nil, err
	}
	// The postmaster's socket, .s.PGSQL.PORT, goes in the lab dir.
	if err := checkSocketPath("PostgreSQL", "tlsbench-postgres-", ".s.PGSQL.65535"); err != nil {
		return nil, err
	}
	var keys []string
	if !o.PlainOnly {
		keys = o.Keys
	}
	dir, roots, err := newLabDirNaming("tlsbench-postgres-", keys, o.certHosts(), o.ClientCerts...)
	if err != nil {
		return nil, err
	}
	s := &Postgres{labBase: labBase{dir: dir, opts: o, roots: roots}, bin: bin, settings: map[string]string{}}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.runAs, err = postgresUser(dir); err != nil {
		return nil, err
	}
	s.password = newPassword()
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	if !o.PlainOnly {
		s.key = o.Keys[0]
		if err := os.WriteFile(filepath.Join(dir, "openssl.cnf"), []byte(pgOpenSSLConf), 0o644); err != nil {
			return nil, err
		}
	}
	if err := s.chownAll(); err != nil {
		return nil, err
	}
	if err := s.initdb(ctx); err != nil {
		return nil, err
	}
	// Written after chownAll: the server has no business reading it.
	passfile := fmt.Sprintf("*:%d:*:*:%s\n", s.port, s.password)
	if err := os.WriteFile(s.PasswordFile(), []byte(passfile), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

// postgresBin finds the directory of the server's binaries: Debian's
// /usr/lib/postgresql/VERSION/bin (newest first), else PATH.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("PostgreSQL: no postgres binary in /usr/lib/postgresql/*/bin or PATH (install postgresql-15): %w", ErrNotInstalled)
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// postgresUser is who runs the server: the postgres OS user when we are
// root, which then owns dir and must be able to reach it.
func postgresUser(dir string) (*syscall.Credential, error) {
	return serverUser("PostgreSQL", "postgres", "PostgreSQL refuses to run as root", dir)
}

// serverUser is the system user name that server runs as when this
// process is root (why says why not as root), nil when it is not root.
// Every directory above dir must let that user through, or the server
// fails with a bare "permission denied".
func serverUser(server, name, why, dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%s and there is no %s user to run it as: %w", why, name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o001 == 0 && (st == nil || int(st.Uid) != uid) {
			return nil, fmt.Errorf("%s runs as the %s user, who cannot enter %s (mode %v): set TMPDIR to a directory it can reach", server, name, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chownAll gives the directory and everything in it to the server's user
// (see chownLabDir).
func (s *Postgres) chownAll() error { return chownLabDir(s.dir, s.runAs) }

// chownLabDir gives a lab directory and everything in it to the user a
// server runs as (nil: this process's own, nothing to do), but the owner
// file, which a sweep trusts only if it is ours.
func chownLabDir(dir string, runAs *syscall.Credential) error {
	if runAs == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == filepath.Join(dir, ownerFile) {
			return nil
		}
		return os.Lchown(path, int(runAs.Uid), int(runAs.Gid))
	})
}

func (s *Postgres) dataDir() string { return filepath.Join(s.dir, "data") }

// command runs one of the server's binaries as its user, with the
// environment it needs and nothing of ours (no PG* variables).
func (s *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	if !s.opts.PlainOnly {
		cmd.Env = append(cmd.Env, "OPENSSL_CONF="+filepath.Join(s.dir, "openssl.cnf"))
	}
	if s.runAs != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.runAs}
	}
	return cmd
}

// initdb creates the data directory and writes the server's configuration.
func (s *Postgres) initdb(ctx context.Context) error {
	cmd := s.command("initdb", "-D", s.dataDir(), "-U", pgSuperuser, "--auth=trust",
		"--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
	p, err := startProcess("PostgreSQL initdb", cmd, filepath.Join(s.dir, "initdb.log"))
	if err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.stop(syscall.SIGKILL)
		return fmt.Errorf("PostgreSQL initdb: cancelled: %w", ctx.Err())
	}
	if p.exitErr != nil {
		return p.withKeptLog(p.failure(fmt.Sprintf("failed (%v)", p.exitErr)))
	}
	return errors.Join(
		os.WriteFile(filepath.Join(s.dataDir(), "pg_hba.conf"), []byte(pgHBA(s.opts.LocalhostOnly, s.opts.TLSOnly)+s.hbaTunnel()+s.hbaClientCert()+s.hbaReplication()), 0o600),
		s.appendConf(),
		s.chownAll(),
	)
}

// pgHBA lets the superuser in over the local socket only, and each bench
// user over TCP with its own method, with or without TLS ("host" matches
// both hostssl and hostnossl), from all of 127.0.0.0/8, where tlsbench may
// spread its source addresses, or from 127.0.0.1 only (localhostOnly), and
// from ::1, as Debian's stock pg_hba.conf; with TLS only (tlsOnly:
// "hostssl"), as a server that refuses plaintext clients.
func pgHBA(localhostOnly, tlsOnly bool) string {
	host := "host"
	if tlsOnly {
		host = "hostssl"
	}
	from := "127.0.0.0/8"
	if localhostOnly {
		from = "127.0.0.1/32"
	}
	var b strings.Builder
	b.WriteString("# tlsbench lab\nlocal all " + pgSuperuser + " trust\n")
	for _, u := range pgUsers {
		fmt.Fprintf(&b, "%s all %s %s %s\n", host, u.user, from, u.auth)
		fmt.Fprintf(&b, "%s all %s ::1/128 %s\n", host, u.user, u.auth)
	}
	return b.String()
}

// hbaTunnel lets each bench user in from a VPN's subnet, with its own
// method, where the server is behind one.
func (s *Postgres) hbaTunnel() string {
	if !s.opts.Tunnel.IsValid() {
		return ""
	}
	var b strings.Builder
	for _, u := range pgUsers {
		fmt.Fprintf(&b, "host all %s %s %s\n", u.user, s.opts.Tunnel.Masked(), u.auth)
	}
	return b.String()
}

// appendConf adds the lab's settings to postgresql.conf. The certificate is
// set there, not on the command line, so that ALTER SYSTEM can change it.
func (s *Postgres) appendConf() error {
	conf := []string{
		"listen_addresses = '" + strings.Join(append([]string{"127.0.0.1", "::1"}, nonEmpty(s.opts.tunnelListen())...), ",") + "'", // a URL may name [::1]
		fmt.Sprintf("port = %d", s.port),
		fmt.Sprintf("unix_socket_directories = '%s'", s.dir),
		fmt.Sprintf("max_connections = %d", s.opts.connectionLimit(200)),
		"shared_buffers = 256MB", // 8 sbtest tables of 100k rows stay in memory
		"fsync = off",            // a throw-away server: durability costs only time
	}
	if s.opts.PlainOnly {
		conf = append(conf, "ssl = off")
	} else {
		conf = append(conf, "ssl = on",
			fmt.Sprintf("ssl_cert_file = '%s'", s.certFile(s.key)),
			// No ssl_ca_file: as in a default setup, the server asks for
			// no client certificate (that would add a message each way).
			fmt.Sprintf("ssl_key_file = '%s'", s.keyFile(s.key)))
	}
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("\n# tlsbench lab\n" + strings.Join(conf, "\n") + "\n")
	return errors.Join(err, f.Close())
}

func (s *Postgres) certFile(key string) string { return filepath.Join(s.dir, key+".crt") }
func (s *Postgres) keyFile(key string) string  { return filepath.Join(s.dir, key+".key") }

// start runs the postmaster, waits until it takes connections, creates the
// users and the database and reads what Info reports.
func (s *Postgres) start(ctx context.Context) (err error) {
	cmd := s.command("postgres", "-D", s.dataDir())
	s.proc, err = startProcess("PostgreSQL", cmd, filepath.Join(s.dir, "server.log"))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = s.proc.withKeptLog(err)
		}
	}()
	err = s.proc.waitReady(ctx, func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := s.superuser(cctx, "postgres")
		if err != nil {
			return err
		}
		return c.Close(cctx)
	})
	if err != nil {
		return err
	}
	// A replica has its primary's users, and cannot write.
	if !s.standby {
		if err := s.createUsers(ctx); err != nil {
			return s.proc.failure(fmt.Sprintf("could not create the bench users (%v)", err))
		}
	}
	if err := s.readSettings(ctx); err != nil {
		return s.proc.failure(fmt.Sprintf("did not report its settings (%v)", err))
	}
	return nil
}

// superuser connects over the local socket as the superuser.
func (s *Postgres) superuser(ctx context.Context, database string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Database, cfg.Password = s.dir, uint16(s.port), pgSuperuser, database, ""
	cfg.TLSConfig, cfg.Fallbacks = nil, nil
	return pgconn.ConnectConfig(ctx, cfg)
}

// superuserExec runs each statement on its own over a superuser connection.
func (s *Postgres) superuserExec(ctx context.Context, database string, stmts ...string) error {
	c, err := s.superuser(ctx, database)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	// The statements may hold the password: keep them out of the log,
	// whose tail error messages quote.
	stmts = append([]string{"SET log_statement = 'none'", "SET log_min_error_statement = 'panic'"}, stmts...)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q).ReadAll(); err != nil {
			return err
		}
	}
	return nil
}

// createUsers makes one login per auth method, all acting as bench_owner
// (SET role) so that any of them can drop and recreate the sbtest tables
// another one made, and the bench database, owned by bench_owner.
func (s *Postgres) createUsers(ctx context.Context) error {
	stmts := []string{"CREATE ROLE " + pgOwner + " NOLOGIN"}
	for _, u := range pgUsers {
		stmts = append(stmts,
			fmt.Sprintf("CREATE ROLE %s LOGIN IN ROLE %s", u.user, pgOwner),
			fmt.Sprintf("ALTER ROLE %s SET role = '%s'", u.user, pgOwner))
		switch u.auth {
		case "md5", "scram-sha-256":
			// The server stores the password hashed as password_encryption
			// says; an md5 login needs an md5 hash.
			stmts = append(stmts,
				fmt.Sprintf("SET password_encryption = '%s'", u.auth),
				fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", u.user, s.password))
		}
	}
	if len(s.opts.ClientCerts) > 0 {
		stmts = append(stmts, s.pgClientCertUsers()...)
	}
	// As bench_owner, a session sees pg_stat_ssl of its own backend only
	// with pg_read_all_stats (its session user is another role).
	stmts = append(stmts, "RESET password_encryption", "GRANT pg_read_all_stats TO "+pgOwner,
		"CREATE DATABASE "+pgDatabase+" OWNER "+pgOwner)
	if s.opts.Replication {
		// After the RESET: stored as SCRAM, as its pg_hba.conf line asks.
		stmts = append(stmts, fmt.Sprintf("CREATE ROLE %s LOGIN REPLICATION PASSWORD '%s'", pgReplUser, s.password))
	}
	return s.superuserExec(ctx, "postgres", stmts...)
}

// readSettings asks the server for its version and TLS settings.
func (s *Postgres) readSettings(ctx context.Context) error {
	c, err := s.superuser(ctx, pgDatabase)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	names := []string{"server_version", "ssl", "ssl_library", "ssl_min_protocol_version", "ssl_max_protocol_version",
		"ssl_ciphers", "ssl_ecdh_curve", "ssl_groups", "ssl_prefer_server_ciphers", "password_encryption",
		"max_connections", "shared_buffers", "fsync"}
	// current_setting gives what SHOW shows: "256MB", not 8 kB pages.
	q := "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY('{" + strings.Join(names, ",") + "}')"
	res := c.ExecParams(ctx, q, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return res.Err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, row := range res.Rows {
		s.settings[string(row[0])] = string(row[1])
	}
	s.version = s.settings["server_version"]
	delete(s.settings, "server_version")
	s.settings["tls_library"] = tlsLibrary(filepath.Join(s.bin, "postgres"))
	if s.settings["ssl_max_protocol_version"] == "" {
		s.settings["ssl_max_protocol_version"] = "(none: the newest the library has)"
	}
	if s.opts.PlainOnly {
		s.settings["ssl"] = "off (started plain only)"
	} else {
		s.settings["openssl_conf"] = "CipherString = DEFAULT:@SECLEVEL=0 (OPENSSL_CONF of the postmaster, for rsa1024)"
		s.settings["session_resumption"] = "off: PostgreSQL disables session tickets and its session cache"
	}
	return nil
}

// Engine implements Server.
func (s *Postgres) Engine() string { return "postgres" }

// Auths implements Server: scram-sha-256 (PostgreSQL's default), md5, trust.
func (s *Postgres) Auths() []string {
	out := make([]string, len(pgUsers))
	for i, u := range pgUsers {
		out[i] = u.auth
	}
	return out
}

// URL implements Server. The URL is the same with TLS or without: one port
// takes both, and the client decides by sending an SSLRequest or not.
func (s *Postgres) URL(auth string, _ bool) (string, error) {
	if auth == "" {
		auth = pgUsers[0].auth
	}
	for _, u := range pgUsers {
		if u.auth == auth {
			return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s", u.user, s.password, s.port, pgDatabase), nil
		}
	}
	return "", fmt.Errorf("PostgreSQL lab: no user for auth method %q: use one of %s", auth, strings.Join(s.Auths(), ", "))
}

// PasswordFile implements Server: a passfile in libpq's format
// (host:port:database:user:password), which pgx and psql read from a
// passfile= parameter.
func (s *Postgres) PasswordFile() string { return filepath.Join(s.dir, "passfile") }

// LogFile is the server's log (removed by Stop).
func (s *Postgres) LogFile() string { return filepath.Join(s.dir, "server.log") }

// LogStatements turns logging of every statement (log_statement = all) on
// or off for sessions that start once it returns, so that a test can read
// what a workload really sent from the server's own record.
func (s *Postgres) LogStatements(ctx context.Context, on bool) error {
	want := "none"
	if on {
		want = "all"
	}
	err := s.superuserExec(ctx, "postgres", "ALTER SYSTEM SET log_statement = '"+want+"'", "SELECT pg_reload_conf()")
	if err != nil {
		return err
	}
	// The postmaster rereads its configuration asynchronously; a new
	// session sees the setting once it has.
	return pgPoll(ctx, func() error {
		c, err := s.superuser(ctx, "postgres")
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		res := c.ExecParams(ctx, "SHOW log_statement", nil, nil, nil, nil).Read()
		if res.Err != nil {
			return res.Err
		}
		if got := string(res.Rows[0][0]); got != want {
			return fmt.Errorf("log_statement is still %s", got)
		}
		return nil
	})
}

// UseKey implements Server: it points ssl_cert_file and ssl_key_file at the
// key's files with ALTER SYSTEM, reloads, and confirms with handshakes until
// the server presents the new key.
func (s *Postgres) UseKey(ctx context.Context, key string) (string, error) {
	if s.opts.PlainOnly {
		return "", errors.New("PostgreSQL lab: started plain only, it has no certificate")
	}
	if !slices.Contains(s.opts.Keys, key) {
		return "", fmt.Errorf("PostgreSQL lab: no %s certificate: it was started with %s", key, strings.Join(s.opts.Keys, ", "))
	}
	err := s.superuserExec(ctx, "postgres",
		fmt.Sprintf("ALTER SYSTEM SET ssl_cert_file = '%s'", s.certFile(key)),
		fmt.Sprintf("ALTER SYSTEM SET ssl_key_file = '%s'", s.keyFile(key)),
		"SELECT pg_reload_conf()")
	if err != nil {
		return "", fmt.Errorf("PostgreSQL lab: switching to %s: %w", key, err)
	}
	err = pgPoll(ctx, func() error {
		got, err := s.presentedKey(ctx)
		if err == nil && got != key {
			err = fmt.Errorf("it still presents %s", got)
		}
		return err
	})
	if err != nil {
		if aerr := s.proc.alive(); aerr != nil {
			return "", aerr
		}
		return "", s.proc.failure(fmt.Sprintf("did not switch to its %s certificate after pg_reload_conf() (%v)", key, err))
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return "ALTER SYSTEM SET ssl_cert_file/ssl_key_file, then pg_reload_conf(): no restart", nil
}

// presentedKey runs a TLS handshake the way a client does (SSLRequest,
// then TLS) and returns the key type of the server's certificate.
func (s *Postgres) presentedKey(ctx context.Context) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.addr())
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	sslRequest := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	if _, err := c.Write(sslRequest); err != nil {
		return "", err
	}
	answer := make([]byte, 1)
	if _, err := c.Read(answer); err != nil {
		return "", err
	}
	if answer[0] != 'S' {
		return "", fmt.Errorf("it refused TLS (answered %q)", answer)
	}
	tc := tls.Client(c, &tls.Config{RootCAs: s.RootCAs(), ServerName: "127.0.0.1"})
	if err := tc.HandshakeContext(ctx); err != nil {
		return "", err
	}
	return tlsx.KeyTypeOf(tlsx.PeerKey(tc.ConnectionState().PeerCertificates[0])), nil
}

// pgPoll retries check every 20 ms for up to 10 s.
func pgPoll(ctx context.Context, check func() error) error {
	return pgPollFor(ctx, 10*time.Second, check)
}

func (s *Postgres) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Info implements Server.
func (s *Postgres) Info() result.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	eps := map[string]string{"": s.addr()}
	settings := map[string]string{}
	for k, v := range s.settings {
		settings[k] = v
	}
	if !s.opts.PlainOnly {
		// One port serves every key, the one presented at the time.
		for _, k := range s.opts.Keys {
			eps[k] = s.addr()
		}
		settings["keys"] = strings.Join(s.opts.Keys, ",")
		settings["key"] = s.key
	}
	return result.Server{Software: "PostgreSQL", Version: s.version, Endpoints: eps, Settings: settings}
}

// Notes implements Server.
func (s *Postgres) Notes() []string {
	if s.opts.PlainOnly {
		return []string{"PostgreSQL was started without TLS (ssl = off)."}
	}
	return []string{
		"PostgreSQL's postmaster runs with OPENSSL_CONF pointing at a file with CipherString = DEFAULT:@SECLEVEL=0, " +
			"because Debian's OpenSSL refuses 1024-bit RSA keys at its default security level (ssl_ciphers cannot lower it); " +
			"the client still negotiates what it would anyway.",
		"PostgreSQL never resumes TLS sessions: it disables session tickets and its session cache, " +
			"so every TLS connection is a full handshake, whatever the client offers.",
		s.groupsNote(),
	}
}

// groupsNote says which key exchange groups the server offers: before
// PostgreSQL 18 one (ssl_ecdh_curve), so a TLS 1.3 client whose first key
// share is another pays a HelloRetryRequest; from 18 a list (ssl_groups).
func (s *Postgres) groupsNote() string {
	if g := s.setting("ssl_groups"); g != "" {
		return "PostgreSQL " + s.major() + " offers the key exchange groups of ssl_groups (" + g + "), linked with " + s.setting("tls_library") +
			": a TLS 1.3 client whose first key share is among them (X25519 is Go's and OpenSSL's default) completes a full handshake in 1 round trip."
	}
	return "PostgreSQL " + s.major() + " offers one key exchange group, ssl_ecdh_curve (" + s.setting("ssl_ecdh_curve") + "): a TLS 1.3 client " +
		"whose first key share is another group (Go's and OpenSSL's, libpq's, default: X25519) gets a HelloRetryRequest, " +
		"so a full TLS 1.3 handshake takes 2 round trips here, not 1."
}

// major is the server's major version ("15"), from its version string.
func (s *Postgres) major() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _, _ := strings.Cut(s.version, ".")
	v, _, _ = strings.Cut(v, " ")
	return v
}

func (s *Postgres) setting(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings[name]
}
