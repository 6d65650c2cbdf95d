package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tlsbench/tlsbench/internal/result"
)

// PgBouncer is Debian's pgbouncer in front of a PostgreSQL server: the
// pooler people put between many short client connections and few server
// connections. Its clients may speak TLS to it (its own certificate); its
// connections to the server are TLS or plain, as PgbouncerOptions say.
type PgBouncer struct {
	dir     string
	port    int
	opts    PgbouncerOptions
	proc    *process
	version string

	stopOnce sync.Once
	stopErr  error
}

// PgbouncerOptions configure a PgBouncer, in its own terms.
type PgbouncerOptions struct {
	// Server is the PostgreSQL server's URL (user, password, database,
	// host and port): PgBouncer logs in there with the same user and
	// password as its client.
	Server *url.URL
	// Users maps each user PgBouncer takes to its auth method
	// (scram-sha-256, md5, trust), as the server's pg_hba.conf does;
	// Password is theirs.
	Users    map[string]string
	Password string
	// Key is the key type whose certificate (Dir/KEY.crt, .key) PgBouncer
	// presents to TLS clients, "" for none (client_tls_sslmode disable).
	Key     string
	CertDir string
	// CAFile verifies the server when ServerTLS is verify-ca or
	// verify-full.
	CAFile string
	// PoolMode is session or transaction; ServerTLS disable, require,
	// verify-ca or verify-full (server_tls_sslmode); PoolSize is
	// default_pool_size.
	PoolMode  string
	ServerTLS string
	PoolSize  int
}

// StartPgbouncer starts PgBouncer on a free loopback port in front of
// o.Server.
func StartPgbouncer(ctx context.Context, o PgbouncerOptions) (_ *PgBouncer, err error) {
	exe, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			return nil, fmt.Errorf("pgbouncer is not installed: apt-get install pgbouncer, or run scripts/install.sh: %w", ErrNotInstalled)
		}
		exe = "/usr/sbin/pgbouncer"
	}
	dir, err := makeLabDir("tlsbench-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{dir: dir, opts: o}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	b.version = pgbouncerVersion(exe)
	// PgBouncer will not run as root: as PostgreSQL, it runs as the
	// postgres user, who must be able to read its files.
	runAs, err := postgresUser(dir)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: %w", err)
	}
	if b.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := b.writeFiles(); err != nil {
		return nil, err
	}
	if err := chownLabDir(dir, runAs); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	if runAs != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs}
	}
	if b.proc, err = startProcess("pgbouncer", cmd, filepath.Join(dir, "pgbouncer.log")); err != nil {
		return nil, err
	}
	if err := b.proc.waitReady(ctx, b.ready); err != nil {
		return nil, b.proc.withKeptLog(err)
	}
	return b, nil
}

// writeFiles writes pgbouncer.ini, the users' passwords and the hba file.
func (b *PgBouncer) writeFiles() error {
	o := b.opts
	host, port, err := net.SplitHostPort(o.Server.Host)
	if err != nil {
		return fmt.Errorf("pgbouncer: server address %q: %v", o.Server.Host, err)
	}
	db := strings.TrimPrefix(o.Server.Path, "/")
	var users, hba strings.Builder
	for u, method := range o.Users {
		fmt.Fprintf(&users, "%q %q\n", u, o.Password)
		// As the server's pg_hba.conf: each user with its own method,
		// with TLS or without.
		fmt.Fprintf(&hba, "host all %s 127.0.0.0/8 %s\nhost all %s ::1/128 %s\n", u, method, u, method)
	}
	ini := []string{
		"[databases]",
		fmt.Sprintf("%s = host=%s port=%s dbname=%s", db, host, port, db),
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		fmt.Sprintf("listen_port = %d", b.port),
		"unix_socket_dir =",
		"auth_type = hba",
		"auth_file = " + filepath.Join(b.dir, "userlist.txt"),
		"auth_hba_file = " + filepath.Join(b.dir, "hba.conf"),
		"pool_mode = " + o.PoolMode,
		fmt.Sprintf("default_pool_size = %d", o.PoolSize),
		"max_client_conn = 10000",
		"server_tls_sslmode = " + o.ServerTLS,
		"pidfile =",
		"logfile =",
		"log_connections = 0",
		"log_disconnections = 0",
		// pgx sends application_name in its startup message.
		"ignore_startup_parameters = extra_float_digits",
	}
	if o.CAFile != "" {
		ini = append(ini, "server_tls_ca_file = "+o.CAFile)
	}
	if o.Key != "" {
		ini = append(ini, "client_tls_sslmode = allow",
			"client_tls_cert_file = "+filepath.Join(o.CertDir, o.Key+".crt"),
			"client_tls_key_file = "+filepath.Join(o.CertDir, o.Key+".key"),
			// As the lab servers: the seeds' RSA-1024 must load.
			"client_tls_ciphers = DEFAULT:@SECLEVEL=0")
		// PgBouncer reads the key as the postgres user: a copy in its
		// own 0700 directory, not the server's.
		for _, ext := range []string{".crt", ".key"} {
			raw, err := os.ReadFile(filepath.Join(o.CertDir, o.Key+ext))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(b.dir, o.Key+ext), raw, 0o600); err != nil {
				return err
			}
		}
		for i, l := range ini {
			ini[i] = strings.ReplaceAll(l, filepath.Join(o.CertDir, o.Key), filepath.Join(b.dir, o.Key))
		}
	}
	return errors.Join(
		os.WriteFile(filepath.Join(b.dir, "pgbouncer.ini"), []byte(strings.Join(ini, "\n")+"\n"), 0o600),
		os.WriteFile(filepath.Join(b.dir, "userlist.txt"), []byte(users.String()), 0o600),
		os.WriteFile(filepath.Join(b.dir, "hba.conf"), []byte(hba.String()), 0o600),
	)
}

// ready logs in through PgBouncer, plain, as the first user.
func (b *PgBouncer) ready() error {
	u := *b.opts.Server
	u.Host = b.Addr()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	cfg, err := pgconn.ParseConfig(u.String())
	if err != nil {
		return errors.New("pgbouncer: the server URL does not parse") // its error would quote it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

var pgbouncerVersionRE = regexp.MustCompile(`PgBouncer (\S+)`)

func pgbouncerVersion(exe string) string { return toolVersion(exe, pgbouncerVersionRE, "--version") }

// Addr is where clients connect.
func (b *PgBouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// CPU is PgBouncer's CPU time so far.
func (b *PgBouncer) CPU() (time.Duration, error) { return b.proc.cpu() }

// Alive reports why PgBouncer is gone, if it is, quoting its log.
func (b *PgBouncer) Alive() error { return b.proc.alive() }

// Info describes PgBouncer for the result.
func (b *PgBouncer) Info() result.Server {
	client := "disable"
	if b.opts.Key != "" {
		client = "allow (" + b.opts.Key + ")"
	}
	return result.Server{
		Software:  "PgBouncer",
		Version:   b.version,
		Endpoints: map[string]string{b.opts.Key: b.Addr()},
		Settings: map[string]string{
			"pool_mode": b.opts.PoolMode, "default_pool_size": strconv.Itoa(b.opts.PoolSize),
			"server_tls_sslmode": b.opts.ServerTLS, "client_tls_sslmode": client,
		},
	}
}

// Stop stops PgBouncer and removes its directory; safe to call more than
// once.
func (b *PgBouncer) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = stopAndRemove(b.proc, b.dir) })
	return b.stopErr
}
