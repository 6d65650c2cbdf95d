package lab

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

func init() { starters["mariadb"] = startMariaDB }

// The MariaDB lab users, one per auth method, all with the same password.
// MariaDB 10.11 has no caching_sha2_password (that is MySQL's).
var mariaDBUsers = []struct{ auth, user, via string }{
	{"mysql_native_password", "bench_native", "mysql_native_password"},
	{"ed25519", "bench_ed25519", "ed25519"},
}

// mariaDBDatabase is the database the lab users own.
const mariaDBDatabase = "bench"

// mariaDBCipher lowers OpenSSL's security level for this server only:
// Debian's OpenSSL (level 2) refuses RSA-1024 and mariadbd aborts at start
// with such a key unless its cipher string says @SECLEVEL=0.
const mariaDBCipher = "DEFAULT:@SECLEVEL=0"

// mariaDBResumption is what a Go client with a session cache measured
// against MariaDB 10.11 with OpenSSL 3.0 (TestMariaDBResumption and the
// mysql driver's TestResumption).
const mariaDBResumption = "sessions resume with TLS 1.2 (session tickets: 1 round trip instead of 2) and TLS 1.3 (PSK with a fresh key share: still 1 round trip, but no certificate or signature)"

// MariaDB is a lab MariaDB server (mariadbd from the system's packages).
type MariaDB struct {
	labBase
	port     int
	admin    *sql.DB // root over the unix socket, which only this user can reach
	version  string
	settings map[string]string

	// mariadbd and installDB are the server's programs.
	mariadbd, installDB string
	// A cluster's node (cluster_mariadb.go, cluster_galera.go) has a
	// role that names it in messages ("" is "MariaDB"), options of its
	// own after the lab's (extra) and more environment (env); a joiner
	// gets its data and accounts from the cluster, not from setUp.
	role       string
	extra, env []string
	joiner     bool
	// runAs is the system user (named user) the server runs as when this
	// process is root (a Galera node: see cluster_galera.go); nil: root.
	runAs *syscall.Credential
	user  string
	// wsrep: a Galera node, ready once synced, not once it answers.
	wsrep bool
	// netns is the network namespace the server runs in ("" is
	// tlsbench's): a Galera node across a delay link. Its admin
	// connection, over the unix socket, reaches it there too.
	netns string
	// defaults is the only option file the server reads ("": none): a
	// Galera node's [sst] section, which its SST script reads.
	defaults string

	keyMu sync.Mutex // serializes UseKey
}

// startMariaDB initializes a data directory in a new 0700 temp dir and
// starts mariadbd on a free loopback port, with TLS (unless PlainOnly) and
// plaintext on that port, and a user per auth method.
func startMariaDB(ctx context.Context, o Options) (_ Server, err error) {
	m, err := newMariaDB(o)
	if err != nil {
		return nil, err
	}
	if err := m.boot(ctx); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

// newMariaDB makes a lab MariaDB's dir (its keys, a new password) and
// chooses its port; boot starts it.
func newMariaDB(o Options) (_ *MariaDB, err error) {
	mariadbd, err := mariaDBBinary("mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := mariaDBBinary("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	if err := checkSocketPath("MariaDB", "tlsbench-mariadb-", mariaDBSocket); err != nil {
		return nil, err
	}
	var keys []string
	if !o.PlainOnly {
		keys = o.Keys
	}
	dir, roots, err := newLabDirNaming("tlsbench-mariadb-", keys, o.certHosts(), o.ClientCerts...)
	if err != nil {
		return nil, err
	}
	m := &MariaDB{labBase: labBase{dir: dir, opts: o, roots: roots}, mariadbd: mariadbd, installDB: installDB}
	defer func() {
		if err != nil {
			m.Stop()
		}
	}()
	if err := m.setPassword(newPassword()); err != nil {
		return nil, err
	}
	if !o.PlainOnly {
		if err := m.presentKey(o.Keys[0]); err != nil {
			return nil, err
		}
	}
	if m.port, err = freePort(); err != nil {
		return nil, err
	}
	return m, nil
}

// setPassword sets the lab users' password and writes it to PasswordFile.
func (m *MariaDB) setPassword(pw string) error {
	m.password = pw
	return os.WriteFile(m.PasswordFile(), []byte(pw+"\n"), 0o600)
}

// boot initializes the data directory (unless the node is a joiner),
// starts the server, sets it up and checks the key it presents.
func (m *MariaDB) boot(ctx context.Context) error {
	if !m.joiner {
		if err := chownLabDir(m.dir, m.runAs); err != nil {
			return err
		}
		if err := m.initDataDir(ctx, m.installDB); err != nil {
			return err
		}
	} else if err := os.MkdirAll(filepath.Join(m.dir, "data"), 0o700); err != nil {
		return err
	}
	if err := m.launch(ctx); err != nil {
		return err
	}
	if err := m.setUp(ctx); err != nil {
		return m.proc.withKeptLog(err)
	}
	// Prove that the configured key is the one presented, by a login on
	// the server's port: not from here to a server in another network
	// namespace, which only its peers' links reach.
	if !m.opts.PlainOnly && m.netns == "" {
		if err := m.checkKey(ctx, m.opts.Keys[0]); err != nil {
			return m.proc.withKeptLog(err)
		}
	}
	return nil
}

// launch starts mariadbd on the data directory and waits until it
// answers; a cluster's node starts again this way.
func (m *MariaDB) launch(ctx context.Context) (err error) {
	// What was written since (keys, configuration) is the server's too.
	if err := chownLabDir(m.dir, m.runAs); err != nil {
		return err
	}
	cmd := exec.Command(m.mariadbd, append(m.serverArgs(), m.extra...)...)
	cmd.Dir = m.dir
	if len(m.env) > 0 {
		cmd.Env = append(os.Environ(), m.env...)
	}
	if m.proc, err = startProcessIn(m.netns, m.name(), cmd, filepath.Join(m.dir, "mariadbd.log")); err != nil {
		return err
	}
	if m.admin == nil {
		if m.admin, err = m.openAdmin(); err != nil {
			return err
		}
	}
	ready := func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if !m.wsrep {
			return m.admin.PingContext(pctx)
		}
		// It answers before it may be used: statements fail until then.
		st, err := mariaDBShow(pctx, m.admin, "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'")
		if err == nil && st["wsrep_local_state_comment"] != "Synced" {
			err = fmt.Errorf("wsrep state %q", st["wsrep_local_state_comment"])
		}
		return err
	}
	if err := m.proc.waitReady(ctx, ready); err != nil {
		if ctx.Err() != nil { // interrupted: nothing to look into
			return err
		}
		return m.proc.withKeptLog(err)
	}
	return nil
}

// name names the server in messages: "MariaDB", or its cluster role.
func (m *MariaDB) name() string {
	if m.role != "" {
		return m.role
	}
	return "MariaDB"
}

// mariaDBBinary looks for a MariaDB program in PATH and in /usr/sbin, where
// Debian puts mariadbd (often not in a user's PATH). A missing one wraps
// ErrNotInstalled.
func mariaDBBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath(filepath.Join("/usr/sbin", name)); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("MariaDB: %s is not in PATH or /usr/sbin (install mariadb-server): %w", name, ErrNotInstalled)
}

// presentKey copies key's certificate and private key over the files the
// server is configured with: ssl_cert and ssl_key are read-only variables
// in MariaDB 10.11, so FLUSH SSL rereads these paths.
func (m *MariaDB) presentKey(key string) error {
	for _, ext := range []string{".crt", ".key"} {
		data, err := os.ReadFile(filepath.Join(m.dir, key+ext))
		if err != nil {
			return err
		}
		// Write and rename, so that a handshake never reads half a file.
		tmp := filepath.Join(m.dir, "server"+ext+".new")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(m.dir, "server"+ext)); err != nil {
			return err
		}
	}
	return nil
}

// initDataDir runs mariadb-install-db without the system's option files.
// Its root user has no password but is reachable only over the socket in
// the 0700 dir: setUp drops every other account it makes.
func (m *MariaDB) initDataDir(ctx context.Context, installDB string) error {
	// Its own tmpdir: in the shared /tmp, two bootstraps at once (tests,
	// runs side by side) trip over each other's #sql-temptable files.
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"), "--tmpdir=" + m.dir,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
	args = append(args, m.userArgs()...)
	p, err := startProcess("mariadb-install-db", exec.Command(installDB, args...), filepath.Join(m.dir, "install.log"))
	if err != nil {
		return err
	}
	if err := p.finish(ctx, readyTimeout); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return p.withKeptLog(err)
	}
	return nil
}

// userArgs is the --user of mariadbd and mariadb-install-db: runAs's
// name, or root (mariaDBRunAs).
func (m *MariaDB) userArgs() []string {
	if m.runAs != nil {
		return []string{"--user=" + m.user}
	}
	return mariaDBRunAs()
}

// mariaDBRunAs is mariadbd's --user: it refuses to run as root unless told to.
func mariaDBRunAs() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// mariaDBSocket is the server's Unix socket in the lab dir.
const mariaDBSocket = "sock"

func (m *MariaDB) socket() string { return filepath.Join(m.dir, mariaDBSocket) }

// serverArgs are all of mariadbd's options: none comes from /etc/mysql.
func (m *MariaDB) serverArgs() []string {
	defaults := "--no-defaults"
	if m.defaults != "" {
		defaults = "--defaults-file=" + m.defaults
	}
	args := []string{
		defaults,
		"--datadir=" + filepath.Join(m.dir, "data"),
		"--tmpdir=" + m.dir,
		"--socket=" + m.socket(),
		"--pid-file=" + filepath.Join(m.dir, "mariadbd.pid"),
		"--bind-address=" + strings.Join(append([]string{"127.0.0.1", "::1"}, nonEmpty(m.opts.tunnelListen())...), ","), // a URL may name [::1]
		"--port=" + strconv.Itoa(m.port),
		"--skip-name-resolve",
		// 8 sbtest tables of 100,000 rows (the seed's) fit in memory.
		"--innodb-buffer-pool-size=512M",
		"--innodb-flush-log-at-trx-commit=0",
		"--max-connections=" + strconv.Itoa(m.opts.connectionLimit(300)),
		"--general-log-file=" + filepath.Join(m.dir, "general.log"),
		"--log-output=FILE",
	}
	if m.opts.Connections > 0 {
		// Its listen backlog (autosized to 80 + max_connections/5)
		// overflows when a storm's clients connect at once: the kernel
		// then drops their handshakes, and they retry after a second or
		// are reset. The kernel caps it at net.core.somaxconn.
		args = append(args, "--back-log="+strconv.Itoa(m.opts.connectionLimit(0)))
	}
	args = append(args, m.userArgs()...)
	if !m.opts.PlainOnly {
		args = append(args,
			"--ssl-ca="+m.CAFile(),
			"--ssl-cert="+filepath.Join(m.dir, "server.crt"),
			"--ssl-key="+filepath.Join(m.dir, "server.key"),
			"--ssl-cipher="+mariaDBCipher,
			"--tls-version=TLSv1.2,TLSv1.3",
			"--require-secure-transport="+map[bool]string{false: "OFF", true: "ON"}[m.opts.TLSOnly],
		)
	}
	return args
}

// openAdmin is a pool of root connections over the unix socket.
func (m *MariaDB) openAdmin() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = m.socket()
	cfg.Logger = mariaDBQuiet{}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(2)
	return db, nil
}

type mariaDBQuiet struct{}

func (mariaDBQuiet) Print(...any) {}

// setUp makes the lab's users and database (a cluster's joiner has its
// cluster's), and reads the version and TLS settings.
func (m *MariaDB) setUp(ctx context.Context) error {
	if !m.joiner {
		if err := m.makeAccounts(ctx); err != nil {
			return err
		}
	}
	return m.readSettings(ctx)
}

// makeAccounts makes the lab's users and database and drops the accounts
// mariadb-install-db made besides root@localhost (root without a
// password over TCP, anonymous users).
func (m *MariaDB) makeAccounts(ctx context.Context) error {
	rows, err := m.admin.QueryContext(ctx, "SELECT User, Host FROM mysql.user WHERE NOT (User = 'root' AND Host = 'localhost') AND User <> 'mariadb.sys'")
	if err != nil {
		return fmt.Errorf("MariaDB: listing accounts: %w", err)
	}
	var drops []string
	for rows.Next() {
		var user, host string
		if err := rows.Scan(&user, &host); err != nil {
			rows.Close()
			return err
		}
		drops = append(drops, "DROP USER "+mariaDBQuote(user)+"@"+mariaDBQuote(host))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	stmts := append(drops,
		"INSTALL SONAME 'auth_ed25519'",
		"CREATE DATABASE "+mariaDBDatabase,
	)
	for _, u := range mariaDBUsers {
		// Clients come from all of 127.0.0.0/8, where tlsbench may
		// spread its source addresses, or from 127.0.0.1 only, and from ::1.
		from := "127.%"
		if m.opts.LocalhostOnly {
			from = "127.0.0.1"
		}
		hosts := []string{from, "::1"}
		if t := m.opts.Tunnel; t.IsValid() {
			// A VPN's subnet, as MariaDB spells a net: address/mask.
			mask := net.CIDRMask(t.Bits(), 32)
			hosts = append(hosts, t.Masked().Addr().String()+"/"+net.IP(mask).String())
		}
		for _, host := range hosts {
			account := mariaDBQuote(u.user) + "@'" + host + "'"
			stmts = append(stmts,
				"CREATE USER "+account+" IDENTIFIED VIA "+u.via+" USING PASSWORD("+mariaDBQuote(m.password)+")",
				"GRANT ALL ON "+mariaDBDatabase+".* TO "+account)
		}
	}
	if len(m.opts.ClientCerts) > 0 {
		host := "'127.%'"
		if m.opts.LocalhostOnly {
			host = "'127.0.0.1'"
		}
		stmts = append(stmts, m.mariaDBClientCertUsers(host)...)
	}
	return mariaDBExec(ctx, m.admin, "MariaDB: setting up", m.password, stmts...)
}

// mariaDBExec runs stmts on db in order. A statement may hold secret (a
// password), and a syntax error quotes it: an error names the
// statement's first words only, with secret redacted, after what.
func mariaDBExec(ctx context.Context, db *sql.DB, what, secret string, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			msg := err.Error()
			if secret != "" {
				msg = strings.ReplaceAll(msg, secret, "xxxxx")
			}
			words := strings.Fields(s)
			return fmt.Errorf("%s (%s ...): %s", what, strings.Join(words[:min(2, len(words))], " "), msg)
		}
	}
	return nil
}

// readSettings reads the server's version and the settings its Info
// shows.
func (m *MariaDB) readSettings(ctx context.Context) error {
	if err := m.admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&m.version); err != nil {
		return fmt.Errorf("MariaDB: asking its version: %w", err)
	}
	m.settings = map[string]string{}
	rows, err := m.admin.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('have_ssl', 'tls_version', 'ssl_cipher', 'version_ssl_library', 'require_secure_transport', 'innodb_buffer_pool_size', 'innodb_flush_log_at_trx_commit', 'max_connections', 'back_log', 'thread_handling')")
	if err != nil {
		return fmt.Errorf("MariaDB: asking its settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		m.settings[name] = value
	}
	return rows.Err()
}

// mariaDBQuote makes a string literal for statements that take no placeholders.
func mariaDBQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// Engine implements Server.
func (m *MariaDB) Engine() string { return "mariadb" }

// Auths implements Server: mysql_native_password first, then ed25519.
func (m *MariaDB) Auths() []string {
	out := make([]string, len(mariaDBUsers))
	for i, u := range mariaDBUsers {
		out[i] = u.auth
	}
	return out
}

// URL implements Server. TLS and plaintext share the port: the client asks
// for TLS in the protocol, so tls changes nothing.
func (m *MariaDB) URL(auth string, tls bool) (string, error) {
	if auth == "" {
		auth = mariaDBUsers[0].auth
	}
	for _, u := range mariaDBUsers {
		if u.auth == auth {
			url := url.URL{Scheme: "mysql", User: url.UserPassword(u.user, m.password),
				Host: m.addr(), Path: "/" + mariaDBDatabase}
			return url.String(), nil
		}
	}
	return "", fmt.Errorf("the MariaDB lab server has no user for auth method %q: use %s", auth, strings.Join(m.Auths(), " or "))
}

func (m *MariaDB) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// UseKey implements Server: the key's files are copied over the configured
// ones and FLUSH SSL reloads them, without a restart; a TLS handshake then
// checks the key the server presents.
func (m *MariaDB) UseKey(ctx context.Context, key string) (string, error) {
	const how = "copied the key's files over ssl_cert/ssl_key and ran FLUSH SSL"
	if m.opts.PlainOnly {
		return "", errors.New("the MariaDB lab server was started without TLS")
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	if _, err := os.Stat(filepath.Join(m.dir, key+".crt")); err != nil {
		return "", fmt.Errorf("the MariaDB lab server has no %s certificate: start it with that key among its keys", key)
	}
	if err := m.presentKey(key); err != nil {
		return "", err
	}
	if _, err := m.admin.ExecContext(ctx, "FLUSH SSL"); err != nil {
		return "", fmt.Errorf("MariaDB: FLUSH SSL: %w", err)
	}
	if err := m.checkKey(ctx, key); err != nil {
		return "", err
	}
	return how, nil
}

// checkKey logs in over TLS and checks that the server presented key.
func (m *MariaDB) checkKey(ctx context.Context, key string) error {
	var presented string
	cfg := m.clientConfig(&tls.Config{
		RootCAs:    m.roots,
		ServerName: "127.0.0.1",
		MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			presented = tlsx.PeerKey(cs.PeerCertificates[0])
			return nil
		},
	})
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	conn, err := c.Connect(ctx)
	if err != nil {
		return fmt.Errorf("MariaDB: checking the %s certificate with a TLS login: %w", key, err)
	}
	conn.Close()
	if got := tlsx.KeyTypeOf(presented); got != key {
		return fmt.Errorf("MariaDB presents a %s key after switching to %s", presented, key)
	}
	return nil
}

// clientConfig is a login of the default lab user (mysql_native_password)
// to the bench database over TCP, with TLS when tlsConfig is set.
func (m *MariaDB) clientConfig(tlsConfig *tls.Config) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = mariaDBUsers[0].user, m.password, mariaDBDatabase
	cfg.Net, cfg.Addr = "tcp", m.addr()
	cfg.Logger = mariaDBQuiet{}
	cfg.TLS = tlsConfig
	return cfg
}

// Info implements Server.
func (m *MariaDB) Info() result.Server {
	s := map[string]string{}
	for k, v := range m.settings {
		s[k] = v
	}
	eps := map[string]string{"": m.addr()}
	if !m.opts.PlainOnly {
		s["keys"] = strings.Join(m.opts.Keys, ",")
		s["tls_resumption"] = mariaDBResumption
		for _, k := range m.opts.Keys {
			eps[k] = m.addr() // one port; UseKey switches the certificate
		}
	}
	return result.Server{Software: "MariaDB (mariadbd)", Version: m.version, Endpoints: eps, Settings: s}
}

// Notes implements Server.
func (m *MariaDB) Notes() []string {
	notes := []string{
		"MariaDB users: bench_native (mysql_native_password) and bench_ed25519 (ed25519); caching_sha2_password is MySQL's and does not exist in MariaDB 10.11",
		"MariaDB ed25519 login takes one more round trip than mysql_native_password: the server's greeting offers mysql_native_password and switches the client to client_ed25519",
	}
	if m.opts.PlainOnly {
		return append(notes, "MariaDB was started without TLS (plaintext only)")
	}
	return append(notes,
		"MariaDB RSA-1024: Debian's OpenSSL refuses 1024-bit keys at its default security level, so the lab server runs with ssl_cipher = "+mariaDBCipher+" (TLS 1.2 and 1.3 then accept every key type)",
		"MariaDB TLS resumption: "+mariaDBResumption,
	)
}

// Stop implements Server: SIGTERM, SIGKILL after a grace period, and the
// directory with the keys and data removed.
func (m *MariaDB) Stop() error {
	return m.stopOnce(func() error {
		if m.admin != nil {
			m.admin.Close()
		}
		return stopAndRemove(m.proc, m.dir)
	})
}

// LogFile is the server's general query log, written while LogStatements
// is on (removed by Stop). Errors and notes go to mariadbd.log.
func (m *MariaDB) LogFile() string { return filepath.Join(m.dir, "general.log") }

// LogStatements turns the general query log on or off, so that a test can
// read what a workload really sent from the server's own record.
func (m *MariaDB) LogStatements(ctx context.Context, on bool) error {
	_, err := m.admin.ExecContext(ctx, "SET GLOBAL general_log = "+map[bool]string{false: "OFF", true: "ON"}[on])
	return err
}
