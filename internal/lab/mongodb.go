package lab

import (
	"context"
	"encoding/binary"
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
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { starters["mongodb"] = startMongoDB }

// The lab's MongoDB-protocol server is FerretDB v1 (scripts/install.sh
// builds it): MongoDB itself is in no package registry this machine can
// reach. FerretDB speaks the wire protocol, hello, SCRAM and TLS (Go's
// crypto/tls, its own listener); it stores documents in SQLite.
const (
	mongoUser   = "bench"
	mongoAuthDB = "admin"
	// mongoPatched marks the build scripts/install-ferretdb.sh makes, whose
	// finds by _id use the _id index.
	mongoPatched = "+tlsbench.idindex"
	// mongoAdminTimeout bounds one admin command (readiness probe, TLS check).
	mongoAdminTimeout = 5 * time.Second
)

// mongoAuths maps the lab's auth methods to the URL's authMechanism; the
// default negotiates (saslSupportedMechs in the hello), as most clients do.
var mongoAuths = map[string]string{"scram-sha-256": "", "scram-sha-1": "SCRAM-SHA-1"}

type mongoServer struct {
	labBase // proc is guarded by mu: a key switch restarts FerretDB
	exe     string
	port    int // plaintext
	tlsPort int // 0 without TLS (PlainOnly)

	mu       sync.Mutex
	key      string        // the certificate presented now
	cpuSpent time.Duration // CPU of the processes stopped by key switches
	demand   bool          // started with --listen-tls-ca-file (DemandClientCert)
	version  string        // FerretDB's, e.g. v1.24.0+tlsbench.idindex
	compat   string        // the MongoDB version it claims, e.g. 7.0.42
	goVer    string        // the Go it was built with
}

// startMongoDB starts FerretDB in a new 0700 temp dir: SQLite data, a
// plaintext and a TLS listener on free loopback ports, SCRAM users (new
// auth) with a user bench whose password is random.
func startMongoDB(ctx context.Context, o Options) (_ Server, err error) {
	exe, err := exec.LookPath("ferretdb")
	if err != nil {
		return nil, fmt.Errorf("mongodb lab server: ferretdb not found (scripts/install.sh builds it): %w", ErrNotInstalled)
	}
	var keys []string
	if !o.PlainOnly {
		keys = o.Keys
	}
	dir, roots, err := newLabDir("tlsbench-mongodb-", keys, o.ClientCerts...)
	if err != nil {
		return nil, err
	}
	m := &mongoServer{labBase: labBase{dir: dir, opts: o, roots: roots}, exe: exe}
	defer func() {
		if err != nil {
			m.Stop()
		}
	}()
	m.password = newPassword()
	if err := os.WriteFile(m.PasswordFile(), []byte(m.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	for _, sub := range []string{"data", "state"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	if m.port, err = freePort(); err != nil {
		return nil, err
	}
	if !o.PlainOnly {
		for m.tlsPort == 0 || m.tlsPort == m.port {
			if m.tlsPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		m.key = o.Keys[0]
	}
	if err := m.start(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// start runs ferretdb presenting m.key and waits until it answers; the
// caller holds m.mu or owns m alone. The first start creates the user; a
// restart finds it in the data.
func (m *mongoServer) start(ctx context.Context) error {
	args := []string{
		"--handler=sqlite",
		"--sqlite-url=file:" + filepath.Join(m.dir, "data") + "/",
		"--state-dir=" + filepath.Join(m.dir, "state"),
		"--listen-addr=" + m.addr(m.port),
		"--test-enable-new-auth",
		"--setup-database=" + mongoAuthDB,
		"--setup-username=" + mongoUser,
		"--debug-addr=-",
		"--telemetry=disable",
		// Every connection's endSessions (unknown to FerretDB) is a
		// warning: logging it would cost each connection a write.
		"--log-level=error",
	}
	if !m.opts.PlainOnly {
		args = append(args,
			"--listen-tls="+m.addr(m.tlsPort),
			"--listen-tls-cert-file="+filepath.Join(m.dir, m.key+".crt"),
			"--listen-tls-key-file="+filepath.Join(m.dir, m.key+".key"))
		if m.demand {
			args = append(args, "--listen-tls-ca-file="+m.CAFile())
		}
	}
	cmd := exec.Command(m.exe, args...)
	cmd.Dir = m.dir
	// The password goes in by the environment, not the command line that
	// ps shows; other FERRETDB_* variables would change flags.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FERRETDB_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "FERRETDB_SETUP_PASSWORD="+m.password)
	p, err := startProcess("FerretDB", cmd, filepath.Join(m.dir, "ferretdb.log"))
	if err != nil {
		return err
	}
	m.proc = p
	var info bson.Raw
	if err := p.waitReady(ctx, func() error {
		info, err = mongoCommand(ctx, m.addr(m.port), bson.D{{Key: "buildInfo", Value: 1}, {Key: "$db", Value: "admin"}})
		return err
	}); err != nil {
		return p.withKeptLog(err)
	}
	m.version, _ = info.Lookup("ferretdbVersion").StringValueOK()
	m.compat, _ = info.Lookup("version").StringValueOK()
	m.goVer, _ = info.Lookup("buildEnvironment", "go.version").StringValueOK()
	if m.version == "" {
		return errors.New("mongodb lab server: buildInfo reported no ferretdbVersion")
	}
	if !m.opts.PlainOnly {
		// Catch a certificate the server loaded but cannot use now, not in
		// the first trial.
		return m.confirmKey(ctx, m.key)
	}
	return nil
}

func (m *mongoServer) addr(port int) string {
	return net.JoinHostPort(loopback(m.opts.IPv6), strconv.Itoa(port))
}

func (m *mongoServer) Engine() string { return "mongodb" }

func (m *mongoServer) Auths() []string { return []string{"scram-sha-256", "scram-sha-1"} }

// URL is mongodb://bench:PASSWORD@127.0.0.1:PORT/?authSource=admin, with
// tls=true&tlsCAFile=CA and the TLS port for TLS, and authMechanism for
// SCRAM-SHA-1.
func (m *mongoServer) URL(auth string, useTLS bool) (string, error) {
	mech, ok := mongoAuths[auth]
	if auth != "" && !ok {
		return "", fmt.Errorf("mongodb lab server: no user for auth method %q: use scram-sha-256 or scram-sha-1", auth)
	}
	q := url.Values{"authSource": {mongoAuthDB}}
	if mech != "" {
		q.Set("authMechanism", mech)
	}
	port := m.port
	if useTLS {
		if m.opts.PlainOnly {
			return "", errors.New("mongodb lab server: started without TLS (PlainOnly): it has no TLS port")
		}
		port = m.tlsPort
		q.Set("tls", "true")
		q.Set("tlsCAFile", m.CAFile())
	}
	u := url.URL{Scheme: "mongodb", User: url.UserPassword(mongoUser, m.password), Host: m.addr(port), Path: "/", RawQuery: q.Encode()}
	return u.String(), nil
}

// CPU is the CPU time of FerretDB's processes, those stopped by key
// switches included.
func (m *mongoServer) CPU() (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cpu, err := m.proc.cpu()
	return m.cpuSpent + cpu, err
}

// Memory implements Server: FerretDB's processes now.
func (m *mongoServer) Memory() (host.Memory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc.memory()
}

// UseKey restarts FerretDB with key's certificate: it reads its
// certificate once, at start. The ports and the data stay.
func (m *mongoServer) UseKey(ctx context.Context, key string) (string, error) {
	if m.opts.PlainOnly {
		return "", errors.New("mongodb lab server: started without TLS (PlainOnly): no key to present")
	}
	if !slices.Contains(m.opts.Keys, key) {
		return "", fmt.Errorf("mongodb lab server: no certificate for key %q: it was started with %s", key, strings.Join(m.opts.Keys, ", "))
	}
	how := "restarted FerretDB with the other certificate (it reads its certificate once, at start; same ports, same data)"
	m.mu.Lock()
	defer m.mu.Unlock()
	if key == m.key {
		return how, nil
	}
	if err := m.restart(ctx, func() { m.key = key }); err != nil {
		return "", fmt.Errorf("mongodb lab server: restarting with the %s certificate: %w", key, err)
	}
	return how, nil
}

// restart stops FerretDB, keeping the CPU it used, applies change to its
// settings and starts it again (same ports, same data); m.mu is held.
func (m *mongoServer) restart(ctx context.Context, change func()) error {
	cpu, err := m.proc.cpu()
	if err != nil {
		return err
	}
	if err := m.proc.stop(0); err != nil {
		return err
	}
	m.cpuSpent += cpu
	change()
	return m.start(ctx)
}

// confirmKey makes a full TLS handshake with the TLS port and checks the
// key the server presented.
func (m *mongoServer) confirmKey(ctx context.Context, key string) error {
	return confirmPresented(ctx, "mongodb", m.addr(m.tlsPort), m.roots, key, mongoAdminTimeout)
}

// Info describes the server as it runs.
func (m *mongoServer) Info() result.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	eps := map[string]string{"": m.addr(m.port)}
	settings := map[string]string{
		"handler":         "sqlite (one SQLite database per MongoDB database, in the lab's temp dir)",
		"mongodb_version": m.compat + " (the MongoDB version FerretDB claims to be)",
		"auth":            "SCRAM (--test-enable-new-auth): user " + mongoUser + " in " + mongoAuthDB + " with SCRAM-SHA-256 (15000 iterations) and SCRAM-SHA-1 (10000)",
		"log-level":       "error",
		"id-index":        "finds by _id scan the collection (an unpatched build)",
	}
	if strings.Contains(m.version, mongoPatched) {
		settings["id-index"] = "finds by _id use the _id index (patched: upstream v1.24.0 looks up ->'$._id' but indexes ->\"_id\")"
	}
	if !m.opts.PlainOnly {
		for _, k := range m.opts.Keys {
			eps[k] = m.addr(m.tlsPort)
		}
		settings["keys"] = strings.Join(m.opts.Keys, ",")
		settings["tls"] = "FerretDB's own listener: Go crypto/tls (" + m.goVer + "), its default server config: TLS 1.2 and 1.3, session tickets on, no client certificates"
	}
	return result.Server{Software: "FerretDB", Version: m.version, Endpoints: eps, Settings: settings}
}

// Alive reports why FerretDB is gone, if it is (not while a key switch
// restarts it).
func (m *mongoServer) Alive() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc.alive()
}

// Notes are the facts behind this server's figures.
func (m *mongoServer) Notes() []string {
	notes := []string{
		"the MongoDB lab server is FerretDB " + m.version + " (MongoDB is in no package registry here): it speaks MongoDB's wire protocol, hello and SCRAM, so connection setup (tcp, TLS, hello, auth) and its round trips are MongoDB's, but it stores documents in SQLite and translates queries to SQL, so query times and CPU are FerretDB's, not mongod's (WiredTiger)",
		"FerretDB's TLS is Go's crypto/tls, where mongod's is OpenSSL: handshake CPU per key differs between the two libraries, round trips do not",
		"FerretDB answers SCRAM's saslContinue with done:false, so auth takes 2 round trips where mongod 4.4+ takes 1; the first SCRAM message rides in the hello (speculative authentication), as with mongod",
		"FerretDB does not know endSessions, which the Go driver sends when it disconnects: close takes its round trip all the same",
		"FerretDB has no per-connection TLS view (no command reports a connection's TLS version or cipher): what was negotiated is checked from the client's side only",
	}
	if !m.opts.PlainOnly {
		notes = append(notes, "FerretDB switches the presented key by a restart (it reads its certificate once, at start); ports and data stay")
	}
	if !strings.Contains(m.version, mongoPatched) {
		notes = append(notes, "this FerretDB build is unpatched: a find by _id scans the whole collection (rebuild it with scripts/install-ferretdb.sh)")
	}
	return notes
}

// Stop stops FerretDB (SIGTERM, then SIGKILL) and removes its directory
// with the data, keys and password file. Safe to call more than once.
func (m *mongoServer) Stop() error {
	return m.stopOnce(func() error {
		m.mu.Lock()
		p := m.proc
		m.mu.Unlock()
		return stopAndRemove(p, m.dir)
	})
}

// mongoCommand runs one command over a new plaintext connection as an
// OP_MSG and returns the reply document; an {ok: 0} reply is an error. A
// few lines suffice for the lab's anonymous commands: a client library
// would bring a monitor and a pool.
func mongoCommand(ctx context.Context, addr string, cmd bson.D) (bson.Raw, error) {
	doc, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, mongoAdminTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(cctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline, _ := cctx.Deadline()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(cctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	// Header (length, request ID, response to, op code), flag bits, a
	// section of kind 0, the document.
	msg := binary.LittleEndian.AppendUint32(nil, uint32(16+4+1+len(doc)))
	msg = binary.LittleEndian.AppendUint32(msg, 1)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = binary.LittleEndian.AppendUint32(msg, 2013)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = append(append(msg, 0), doc...)
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	var header [16]byte
	if _, err := io.ReadFull(c, header[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(header[:4])
	if n < 16+5 || n > 48<<20 {
		return nil, fmt.Errorf("reply of %d bytes is no OP_MSG", n)
	}
	body := make([]byte, n-16)
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint32(header[12:]) != 2013 || body[4] != 0 {
		return nil, errors.New("reply is no OP_MSG with a document")
	}
	doc = body[5:]
	if len(doc) < 5 || int(binary.LittleEndian.Uint32(doc)) > len(doc) {
		return nil, errors.New("reply is no OP_MSG with a document")
	}
	reply := bson.Raw(doc[:binary.LittleEndian.Uint32(doc)])
	if err := reply.Validate(); err != nil {
		return nil, err
	}
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		msg, _ := reply.Lookup("errmsg").StringValueOK()
		return nil, fmt.Errorf("%v failed: %s", cmd[0].Key, msg)
	}
	return reply, nil
}
