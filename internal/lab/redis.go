package lab

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { starters["redis"] = startRedis }

// redisUser is the lab's one user; Redis's default user is off, so every
// connection logs in (AUTH bench PASSWORD), as a production server's would.
const redisUser = "bench"

// redisSecLevel is the OpenSSL configuration that lets redis-server load a
// 1024-bit RSA key: Debian's OpenSSL refuses it at its default security
// level 2 when the certificate is loaded ("ee key too small"), before
// Redis applies tls-ciphers, so only OPENSSL_CONF can lower the level.
const redisSecLevel = `openssl_conf = tlsbench_conf
[tlsbench_conf]
ssl_conf = tlsbench_ssl
[tlsbench_ssl]
system_default = tlsbench_tls
[tlsbench_tls]
CipherString = DEFAULT:@SECLEVEL=0
`

// redisSettings are the configuration parameters Info reports, as the
// running server states them.
var redisSettings = []string{"port", "tls-port", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
	"tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size", "tls-session-cache-timeout",
	"tls-auth-clients", "io-threads", "save", "appendonly", "maxclients", "tcp-backlog"}

// redisAdminTimeout bounds one admin command (readiness probe, CONFIG SET).
const redisAdminTimeout = 5 * time.Second

type redisServer struct {
	labBase
	port     int // plaintext
	tlsPort  int // 0 without TLS (PlainOnly)
	version  string
	settings map[string]string
}

// startRedis starts Debian's redis-server from a config file of its own in
// a new 0700 temp dir: plaintext and TLS on two loopback ports, no
// persistence, a user with a random password.
func startRedis(ctx context.Context, o Options) (_ Server, err error) {
	exe, err := redisBinary()
	if err != nil {
		return nil, err
	}
	dir, roots, err := newLabDirNaming("tlsbench-redis-", o.Keys, o.certHosts(), o.ClientCerts...)
	if err != nil {
		return nil, err
	}
	r := &redisServer{labBase: labBase{dir: dir, opts: o, roots: roots}}
	defer func() {
		if err != nil {
			r.Stop()
		}
	}()
	r.password = newPassword()
	if err := os.WriteFile(r.PasswordFile(), []byte(r.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if r.port, err = freePort(); err != nil {
		return nil, err
	}
	env := os.Environ()
	if !o.PlainOnly {
		for r.tlsPort == 0 || r.tlsPort == r.port {
			if r.tlsPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		sslConf := filepath.Join(dir, "openssl.cnf")
		if err := os.WriteFile(sslConf, []byte(redisSecLevel), 0o600); err != nil {
			return nil, err
		}
		env = append(env, "OPENSSL_CONF="+sslConf)
	}
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte(r.config()), 0o600); err != nil {
		return nil, err
	}

	cmd := exec.Command(exe, conf)
	cmd.Dir = dir
	cmd.Env = env
	if r.proc, err = startProcess("Redis", cmd, filepath.Join(dir, "redis.log")); err != nil {
		return nil, err
	}
	if err := r.proc.waitReady(ctx, func() error {
		_, err := r.command(ctx, "PING")
		return err
	}); err != nil {
		return nil, r.proc.withKeptLog(err)
	}
	if err := r.describe(ctx); err != nil {
		return nil, err
	}
	if !o.PlainOnly {
		// Catch a certificate the server loaded but cannot use now, not in
		// the first trial.
		if err := r.confirmKey(ctx, o.Keys[0]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// redisBinary finds redis-server in PATH; a missing one wraps ErrNotInstalled.
func redisBinary() (string, error) {
	exe, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis lab server: redis-server not found (apt-get install redis-server): %w", ErrNotInstalled)
	}
	return exe, nil
}

// config is redis.conf. The user's password goes in as its SHA-256, so that
// the file holds no secret.
func (r *redisServer) config() string {
	hash := sha256.Sum256([]byte(r.password))
	lines := []string{
		"bind " + strings.Join(append([]string{"127.0.0.1", "::1"}, nonEmpty(r.opts.tunnelListen())...), " "), // a URL may name [::1]
		"port " + strconv.Itoa(r.port),
		"daemonize no",
		`logfile ""`,
		"dir " + r.dir,
		`save ""`,
		"appendonly no",
		// Redis's defaults, raised for a storm: a listen backlog of 511
		// would overflow under more clients at once (the kernel caps it
		// at net.core.somaxconn).
		"maxclients " + strconv.Itoa(r.opts.connectionLimit(10000)),
		"tcp-backlog " + strconv.Itoa(r.opts.connectionLimit(511)),
		"user default off",
		fmt.Sprintf("user %s on #%s ~* &* +@all", redisUser, hex.EncodeToString(hash[:])),
	}
	if !r.opts.PlainOnly {
		lines = append(lines,
			"tls-port "+strconv.Itoa(r.tlsPort),
			"tls-cert-file "+r.certFile(r.opts.Keys[0]),
			"tls-key-file "+r.keyFile(r.opts.Keys[0]),
			"tls-ca-cert-file "+r.CAFile(),
			"tls-auth-clients no",
			`tls-protocols "TLSv1.2 TLSv1.3"`,
			// OPENSSL_CONF already lowers the level; saying it here keeps it
			// when Redis sets its cipher list, and shows in CONFIG GET.
			"tls-ciphers DEFAULT:@SECLEVEL=0",
		)
	}
	return strings.Join(lines, "\n") + "\n"
}

func (r *redisServer) certFile(key string) string { return filepath.Join(r.dir, key+".crt") }
func (r *redisServer) keyFile(key string) string  { return filepath.Join(r.dir, key+".key") }

// describe asks the server for its version and settings, for Info.
func (r *redisServer) describe(ctx context.Context) error {
	info, err := r.command(ctx, "INFO", "server")
	if err != nil {
		return fmt.Errorf("redis lab server: INFO server: %w", err)
	}
	for line := range strings.SplitSeq(strings.Join(info, ""), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			r.version = v
		}
	}
	if r.version == "" {
		return errors.New("redis lab server: INFO server reported no redis_version")
	}
	args := append([]string{"CONFIG", "GET"}, redisSettings...)
	pairs, err := r.command(ctx, args...)
	if err != nil {
		return fmt.Errorf("redis lab server: CONFIG GET: %w", err)
	}
	r.settings = map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.settings[pairs[i]] = pairs[i+1]
	}
	return nil
}

func (r *redisServer) Engine() string { return "redis" }

func (r *redisServer) Auths() []string { return []string{"password"} }

// URL is redis://bench:PASSWORD@127.0.0.1:PORT/0, or rediss:// with the TLS
// port.
func (r *redisServer) URL(auth string, useTLS bool) (string, error) {
	if auth != "" && auth != "password" {
		return "", fmt.Errorf("redis lab server: no user for auth method %q: use password", auth)
	}
	u := url.URL{Scheme: "redis", User: url.UserPassword(redisUser, r.password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)), Path: "/0"}
	if useTLS {
		if r.opts.PlainOnly {
			return "", errors.New("redis lab server: started without TLS (PlainOnly): it has no TLS port")
		}
		u.Scheme, u.Host = "rediss", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.tlsPort))
	}
	return u.String(), nil
}

// UseKey points tls-cert-file and tls-key-file at key's files with one
// CONFIG SET, on which Redis builds a new TLS context for new connections,
// then checks, with a fresh handshake, the key the server presents.
func (r *redisServer) UseKey(ctx context.Context, key string) (string, error) {
	if r.opts.PlainOnly {
		return "", errors.New("redis lab server: started without TLS (PlainOnly): no key to present")
	}
	if !slices.Contains(r.opts.Keys, key) {
		return "", fmt.Errorf("redis lab server: no certificate for key %q: it was started with %s", key, strings.Join(r.opts.Keys, ", "))
	}
	if _, err := r.command(ctx, "CONFIG", "SET", "tls-cert-file", r.certFile(key), "tls-key-file", r.keyFile(key)); err != nil {
		return "", fmt.Errorf("redis lab server: switching to the %s certificate: %w", key, err)
	}
	if err := r.confirmKey(ctx, key); err != nil {
		return "", err
	}
	return "reloaded with CONFIG SET tls-cert-file tls-key-file", nil
}

// confirmKey makes a full TLS handshake with the TLS port and checks the
// key the server presented.
func (r *redisServer) confirmKey(ctx context.Context, key string) error {
	return confirmPresented(ctx, "redis", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.tlsPort)), r.roots, key, redisAdminTimeout)
}

// Info describes the server as it runs.
func (r *redisServer) Info() result.Server {
	eps := map[string]string{"": net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))}
	if !r.opts.PlainOnly {
		for _, k := range r.opts.Keys {
			eps[k] = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.tlsPort))
		}
	}
	settings := map[string]string{
		"keys": strings.Join(r.opts.Keys, ","),
		"auth": "ACL user " + redisUser + " with a password (AUTH), default user off",
	}
	for k, v := range r.settings {
		settings[k] = v
	}
	if !r.opts.PlainOnly {
		settings["openssl_conf"] = "CipherString = DEFAULT:@SECLEVEL=0"
		settings["tls-session-tickets"] = "issued (OpenSSL's default; Redis has no setting)"
	}
	return result.Server{Software: "Redis", Version: r.version, Endpoints: eps, Settings: settings}
}

// Notes are the facts behind this server's figures.
func (r *redisServer) Notes() []string {
	if r.opts.PlainOnly {
		return []string{"the Redis lab server runs without TLS (PlainOnly)"}
	}
	return []string{
		"RSA-1024 works on Redis because redis-server runs with OPENSSL_CONF pointing at a file with " +
			"CipherString = DEFAULT:@SECLEVEL=0: Debian's OpenSSL refuses the key at its default level 2 when " +
			"Redis loads it (\"ee key too small\"), before tls-ciphers applies; the level is lowered whatever " +
			"the keys, so that every variant runs with the same settings",
		"Redis switches the presented key with CONFIG SET tls-cert-file tls-key-file, which reloads TLS without a restart",
		redisResumption,
		"Redis has no per-connection TLS view (no version or cipher): the server's side of the check is " +
			"only that a session reached the tls-port (CLIENT INFO laddr)",
		"Redis runs TLS in its one main thread (io-threads " + r.settings["io-threads"] + ")",
	}
}

// redisResumption is what the lab's tests measured about session
// resumption, for the notes.
const redisResumption = "Redis resumes Go clients' TLS 1.2 and 1.3 sessions by session ticket (OpenSSL's default; " +
	"Redis has no setting for tickets): a resumed TLS 1.2 handshake takes 1 round trip instead of 2, and neither " +
	"version sends the certificate or signs again; tls-session-caching, Redis's server-side session-ID cache, plays " +
	"no part, since Go resumes by ticket only: resumption works with tls-session-caching no as well"

// command runs one admin command as the lab user on the plaintext port and
// returns its reply flattened to strings. A few RESP2 lines suffice here; a
// client library would bring pools and a process-wide logger that prints.
func (r *redisServer) command(ctx context.Context, args ...string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, redisAdminTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(cctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline, _ := cctx.Deadline()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(cctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var req []byte
	for _, cmd := range [][]string{{"AUTH", redisUser, r.password}, args} {
		req = fmt.Appendf(req, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	if _, err := redisReply(br); err != nil {
		return nil, fmt.Errorf("AUTH: %w", err)
	}
	return redisReply(br)
}

// redisReply reads one RESP2 reply: simple strings, integers and bulk
// strings become one string, arrays the concatenation of their elements.
func redisReply(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, fmt.Errorf("redis-server replied: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return []string{""}, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, err
		}
		return []string{string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		var out []string
		for range n {
			elems, err := redisReply(br)
			if err != nil {
				return nil, err
			}
			out = append(out, elems...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}
