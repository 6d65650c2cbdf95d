package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A lab cluster: a PostgreSQL primary and one physical streaming replica
// made from it with pg_basebackup, both throw-away lab servers on
// loopback. Only the replication link changes between the variants of a
// replicate run (cluster.Link); the clients' link to the primary is the run's.

// pgReplUser is the lab primary's replication login (Options.Replication),
// with the bench users' password, stored as SCRAM.
const pgReplUser = "bench_repl"

// pgReplicaName is the replica's application_name, which
// synchronous_standby_names names.
const pgReplicaName = "tlsbench_replica"

// The tables a replicate run writes: the workload's inserts and the
// heartbeat row, whose seq the replica is polled for.
const (
	pgWritesTable    = "tlsbench_writes"
	pgHeartbeatTable = "tlsbench_heartbeat"
)

// hbaReplication lets the replication user in from loopback, with or
// without TLS (the link's variant decides), where the server is a
// cluster's primary.
func (s *Postgres) hbaReplication() string {
	if !s.opts.Replication {
		return ""
	}
	return fmt.Sprintf("host replication %[1]s 127.0.0.0/8 scram-sha-256\nhost replication %[1]s ::1/128 scram-sha-256\n", pgReplUser)
}

// PostgresCluster is a running lab primary with its streaming replica.
type PostgresCluster struct {
	Primary, Replica *Postgres
	// Built is the pg_basebackup that made the replica.
	Built result.Resync

	mu   sync.Mutex
	link cluster.Link
}

// StartPostgresCluster starts a primary (o, with Replication) and a
// replica copied from it by pg_basebackup over a plain link, asynchronous;
// SetLink chooses the link. On error nothing is left running.
func StartPostgresCluster(ctx context.Context, o Options) (_ *PostgresCluster, err error) {
	if len(o.Keys) == 0 || o.PlainOnly {
		return nil, errors.New("PostgreSQL lab cluster: the primary needs its certificates (keys, not plain only)")
	}
	o.Replication = true
	srv, err := startPostgres(ctx, o)
	if err != nil {
		return nil, err
	}
	c := &PostgresCluster{Primary: srv.(*Postgres), link: cluster.Link{TLS: "off", Sync: "off", Key: o.Keys[0]}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.Primary.superuserExec(ctx, pgDatabase, pgClusterTables...); err != nil {
		return nil, fmt.Errorf("PostgreSQL lab cluster: creating the tables on the primary: %w", err)
	}
	if c.Replica, err = c.newReplica(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// pgClusterTables are made on the primary before the replica is copied.
var pgClusterTables = append(pgTables(pgTableNames{pgWritesTable, pgHeartbeatTable}),
	"ALTER TABLE "+pgWritesTable+" OWNER TO "+pgOwner,
	"ALTER TABLE "+pgHeartbeatTable+" OWNER TO "+pgOwner)

// pgTableNames name the writes' and the heartbeat's tables.
type pgTableNames struct{ writes, heartbeat string }

// pgTables makes the writes' and the heartbeat's tables, on any primary.
func pgTables(n pgTableNames) []string {
	return []string{
		"CREATE TABLE " + n.writes + " (id bigserial PRIMARY KEY, worker int NOT NULL, at timestamptz NOT NULL DEFAULT now(), pad text NOT NULL)",
		"CREATE TABLE " + n.heartbeat + " (id int PRIMARY KEY, seq bigint NOT NULL)",
		"INSERT INTO " + n.heartbeat + " VALUES (1, 0)",
	}
}

// newReplica makes the replica's lab dir (its own certificates, the
// primary's CA, a passfile for the replication user), copies the
// primary's data directory into it with pg_basebackup, timed, and starts
// it as a hot standby.
func (c *PostgresCluster) newReplica(ctx context.Context) (_ *Postgres, err error) {
	p := c.Primary
	o := p.opts
	o.Replication = false
	dir, roots, err := newLabDir("tlsbench-postgres-", o.Keys)
	if err != nil {
		return nil, err
	}
	r := &Postgres{labBase: labBase{dir: dir, opts: o, roots: roots, password: p.password}, bin: p.bin, settings: map[string]string{}, key: o.Keys[0], standby: true}
	defer func() {
		if err != nil {
			r.Stop()
		}
	}()
	if r.runAs, err = postgresUser(dir); err != nil {
		return nil, err
	}
	if r.port, err = freePort(); err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(p.CAFile())
	if err != nil {
		return nil, err
	}
	err = errors.Join(
		os.WriteFile(filepath.Join(dir, "openssl.cnf"), []byte(pgOpenSSLConf), 0o644),
		os.WriteFile(pgPrimaryCA(dir), ca, 0o644),
		// The replication user's password, for the walreceiver and
		// pg_basebackup: never on a command line or in primary_conninfo.
		os.WriteFile(pgReplPassfile(dir), []byte("*:*:*:"+pgReplUser+":"+p.password+"\n"), 0o600),
	)
	if err == nil {
		err = r.chownAll()
	}
	if err != nil {
		return nil, err
	}
	build := func() (result.Resync, error) { return c.basebackup(ctx, r, cluster.Link{TLS: "off"}, r.dataDir()) }
	slot := !c.hasBasebackup()
	if slot {
		build = func() (result.Resync, error) { return c.copyBackup(ctx, r) }
	}
	if c.Built, err = build(); err != nil {
		return nil, err
	}
	// The copy has the primary's postgresql.conf: the replica's own lab
	// settings after it override the port, socket and certificate.
	if err := r.appendConf(); err != nil {
		return nil, err
	}
	standby := []string{
		"wal_retrieve_retry_interval = '100ms'", // a new primary_conninfo is taken up at once
		"wal_receiver_status_interval = 1",      // the primary's replay_lag is at most 1 s old
		"primary_conninfo = '" + c.conninfo(r, cluster.Link{TLS: "off"}) + "'",
	}
	if slot {
		standby = append(standby, "primary_slot_name = '"+pgReplicaSlot+"'")
	}
	f, err := os.OpenFile(filepath.Join(r.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString("\n# tlsbench lab replica\n" + strings.Join(standby, "\n") + "\n")
	err = errors.Join(err, f.Close(),
		os.WriteFile(filepath.Join(r.dataDir(), "standby.signal"), nil, 0o600),
		r.chownAll())
	if err != nil {
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func pgPrimaryCA(dir string) string     { return filepath.Join(dir, "primary-ca.crt") }
func pgReplPassfile(dir string) string  { return filepath.Join(dir, "replication.pass") }
func pgTLSVersion(tls string) string    { return "TLSv" + tls }
func (c *PostgresCluster) name() string { return "PostgreSQL lab cluster" }

// conninfo is primary_conninfo for link l, as the replica r dials: no
// password (a passfile), sslmode per l.TLS, that TLS version only.
func (c *PostgresCluster) conninfo(r *Postgres, l cluster.Link) string {
	host, port := "127.0.0.1", strconv.Itoa(c.Primary.port)
	if l.Addr != "" {
		host, port, _ = net.SplitHostPort(l.Addr)
	}
	parts := []string{"host=" + host, "port=" + port, "user=" + pgReplUser, "passfile=" + pgReplPassfile(r.dir),
		"application_name=" + pgReplicaName, "connect_timeout=10"}
	if l.TLS == "off" || l.TLS == "" {
		parts = append(parts, "sslmode=disable")
	} else {
		v := pgTLSVersion(l.TLS)
		parts = append(parts, "sslmode=verify-ca", "sslrootcert="+pgPrimaryCA(r.dir),
			"ssl_min_protocol_version="+v, "ssl_max_protocol_version="+v)
	}
	return strings.Join(parts, " ")
}

// basebackup copies the primary over link l with pg_basebackup, run as
// the replica's user: into dataDir, or, with dataDir "", as a tar stream
// that is counted and dropped (a resync's figure without the replica's
// disk). It times the copy and meters the CPU of both ends.
func (c *PostgresCluster) basebackup(ctx context.Context, r *Postgres, l cluster.Link, dataDir string) (result.Resync, error) {
	args := []string{"-d", c.conninfo(r, l), "-w", "--no-sync", "-c", "fast"}
	var counted *countWriter
	if dataDir != "" {
		args = append(args, "-D", dataDir, "-X", "stream")
	} else {
		counted = &countWriter{}
		args = append(args, "-D", "-", "-F", "tar", "-X", "fetch")
	}
	cmd := r.command("pg_basebackup", args...)
	if counted != nil {
		cmd.Stdout = counted
	}
	before, err := c.Primary.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	start := time.Now()
	p, err := startProcess("PostgreSQL pg_basebackup", cmd, filepath.Join(r.dir, "basebackup.log"))
	if err != nil {
		return result.Resync{}, err
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.stop(syscall.SIGKILL)
		return result.Resync{}, fmt.Errorf("PostgreSQL pg_basebackup: cancelled: %w", ctx.Err())
	}
	elapsed := time.Since(start)
	if p.exitErr != nil {
		return result.Resync{}, p.failure(fmt.Sprintf("failed (%v)", p.exitErr))
	}
	after, err := c.Primary.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	out := result.Resync{Method: "pg_basebackup -X stream (plain files)", Elapsed: elapsed, SourceCPU: after - before,
		DestCPU: p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()}
	if counted != nil {
		out.Method, out.Bytes = "pg_basebackup -F tar -X fetch (to tlsbench, counted and dropped)", counted.n
	} else if out.Bytes, err = dirSize(dataDir); err != nil {
		return result.Resync{}, err
	}
	return out, nil
}

// pgReplicaSlot is the physical replication slot that keeps the WAL a
// replica copied without pg_basebackup needs (copyBackup).
const pgReplicaSlot = "tlsbench_replica"

// hasBasebackup reports whether the primary's PostgreSQL has
// pg_basebackup: PostgreSQL 18's npm build (pgversion.go) has only
// initdb, pg_ctl and postgres.
func (c *PostgresCluster) hasBasebackup() bool {
	_, err := os.Stat(filepath.Join(c.Primary.bin, "pg_basebackup"))
	return err == nil
}

// copyBackup makes replica r's data directory without pg_basebackup: a
// physical replication slot keeps the WAL from the copy's start,
// pg_backup_start and pg_backup_stop (in one session) frame a copy of the
// primary's files, which the lab has on this machine, and the backup
// label goes into the copy, whose recovery then streams the rest from
// the slot over the replication link. Timed; the copy is tlsbench's own,
// so DestCPU is 0.
func (c *PostgresCluster) copyBackup(ctx context.Context, r *Postgres) (result.Resync, error) {
	p := c.Primary
	if err := p.superuserExec(ctx, "postgres", "SELECT pg_create_physical_replication_slot('"+pgReplicaSlot+"', true)"); err != nil {
		return result.Resync{}, fmt.Errorf("%s: the replica's slot: %w", c.name(), err)
	}
	cc, err := p.superuser(ctx, "postgres")
	if err != nil {
		return result.Resync{}, err
	}
	defer cc.Close(context.Background())
	before, err := p.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	start := time.Now()
	if _, err := pgRows(ctx, cc, "SELECT pg_backup_start('tlsbench replica', true)"); err != nil {
		return result.Resync{}, fmt.Errorf("%s: pg_backup_start: %w", c.name(), err)
	}
	n, err := copyDataDir(p.dataDir(), r.dataDir())
	if err != nil {
		return result.Resync{}, fmt.Errorf("%s: copying the primary's data directory: %w", c.name(), err)
	}
	rows, err := pgRows(ctx, cc, "SELECT labelfile FROM pg_backup_stop(false)")
	if err == nil && len(rows) != 1 {
		err = errors.New("no backup label")
	}
	if err != nil {
		return result.Resync{}, fmt.Errorf("%s: pg_backup_stop: %w", c.name(), err)
	}
	if err := os.WriteFile(filepath.Join(r.dataDir(), "backup_label"), []byte(rows[0][0]), 0o600); err != nil {
		return result.Resync{}, err
	}
	elapsed := time.Since(start)
	after, err := p.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	return result.Resync{Method: "pg_backup_start, a copy of the data directory's files, pg_backup_stop (this PostgreSQL has no pg_basebackup); the WAL after it streamed from a replication slot",
		Bytes: n, Elapsed: elapsed, SourceCPU: after - before}, nil
}

// copyDataDir copies a running primary's data directory from src to dst
// (0700, new) as a base backup takes it: without the postmaster's pid and
// options files and the contents of pg_wal, pg_replslot and the
// temporary statistics; it returns the bytes copied.
func copyDataDir(src, dst string) (int64, error) {
	skip := map[string]bool{"postmaster.pid": true, "postmaster.opts": true}
	empty := map[string]bool{"pg_wal": true, "pg_replslot": true, "pg_stat_tmp": true}
	var n int64
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // a temporary file the server removed meanwhile
			}
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(to, 0o700); err != nil {
				return err
			}
			if empty[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		if skip[rel] || !d.Type().IsRegular() {
			return nil
		}
		m, err := copyFile(path, to)
		n += m
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	})
	if err != nil {
		return n, err
	}
	// What recovery expects under pg_wal, empty.
	for _, d := range []string{"archive_status", "summaries"} {
		if err := os.MkdirAll(filepath.Join(dst, "pg_wal", d), 0o700); err != nil {
			return n, err
		}
	}
	return n, nil
}

// copyFile copies the regular file src to dst, 0600, and returns its bytes.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	return n, errors.Join(err, out.Close())
}

// Resync copies the whole primary over link l as a new replica would
// (pg_basebackup), timed, with the CPU of both ends. Its sync setting
// does not matter.
func (c *PostgresCluster) Resync(ctx context.Context, l cluster.Link) (result.Resync, error) {
	if !c.hasBasebackup() {
		return result.Resync{}, fmt.Errorf("%s: this PostgreSQL (%s) has no pg_basebackup to time a resync with: drop --resync, or use --lab postgres", c.name(), c.Primary.bin)
	}
	if l.TLS != "off" && l.Key != "" {
		if _, err := c.Primary.UseKey(ctx, l.Key); err != nil {
			return result.Resync{}, err
		}
	}
	return c.basebackup(ctx, c.Replica, l, "")
}

// countWriter counts what is written to it and drops it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// SetLink makes the replica reach the primary over l: the primary's
// certificate and synchronous settings, the replica's primary_conninfo,
// then a new walsender (the old one is ended), waited for until it
// streams, and verified from the primary: TLS of l's version, or plain,
// and synchronous when l.Sync asks. A link that is not what l asks for is
// an error, never a fallback.
func (c *PostgresCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	if l.TLS != "off" && l.Key != "" {
		if _, err := c.Primary.UseKey(ctx, l.Key); err != nil {
			return cluster.LinkState{}, err
		}
	}
	names, commit := "", "on"
	if l.Sync != "off" {
		names, commit = pgReplicaName, l.Sync
	}
	err := c.Primary.superuserExec(ctx, "postgres",
		"ALTER SYSTEM SET synchronous_standby_names = '"+names+"'",
		"ALTER SYSTEM SET synchronous_commit = '"+commit+"'",
		"SELECT pg_reload_conf()")
	if err == nil {
		err = c.Replica.superuserExec(ctx, "postgres",
			"ALTER SYSTEM SET primary_conninfo = '"+c.conninfo(c.Replica, l)+"'", "SELECT pg_reload_conf()")
	}
	if err != nil {
		return cluster.LinkState{}, fmt.Errorf("%s: setting the link: %w", c.name(), err)
	}
	old, err := c.walsenders(ctx)
	if err != nil {
		return cluster.LinkState{}, err
	}
	// A changed primary_conninfo restarts the walreceiver, a changed
	// certificate does not: end the walsender so that the replica dials
	// again either way.
	if len(old) > 0 {
		if err := c.Primary.superuserExec(ctx, "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_replication"); err != nil {
			return cluster.LinkState{}, err
		}
	}
	var st cluster.LinkState
	err = pgPollFor(ctx, 30*time.Second, func() error {
		if err := c.Alive(); err != nil {
			return err
		}
		var err error
		st, err = c.LinkState(ctx)
		switch {
		case err != nil:
			return err
		case slices.Contains(old, st.PID):
			return errors.New("the old walsender is still there")
		case st.State != "streaming":
			return fmt.Errorf("the walsender is %s, not streaming", st.State)
		case l.Sync != "off" && st.SyncState != "sync":
			return fmt.Errorf("the replica is %s, not sync", st.SyncState)
		}
		return nil
	})
	if err != nil {
		if aerr := c.Alive(); aerr != nil {
			return cluster.LinkState{}, aerr
		}
		return cluster.LinkState{}, c.Replica.proc.failure(fmt.Sprintf("did not stream from the primary over the link (tls %s, sync %s) within 30 s (%v)", l.TLS, l.Sync, err))
	}
	if err := l.Verify(st); err != nil {
		return st, err
	}
	c.mu.Lock()
	c.link = l
	c.mu.Unlock()
	return st, nil
}

// walsenders lists the pids of the primary's walsenders.
func (c *PostgresCluster) walsenders(ctx context.Context) ([]int, error) {
	rows, err := c.Primary.superuserQuery(ctx, "SELECT pid FROM pg_stat_replication")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, r := range rows {
		n, _ := strconv.Atoi(r[0])
		out = append(out, n)
	}
	return out, nil
}

// LinkState reads the link from the primary; an error when no replica is
// connected.
func (c *PostgresCluster) LinkState(ctx context.Context) (cluster.LinkState, error) {
	rows, err := c.Primary.superuserQuery(ctx, pgLinkQuery+" WHERE r.application_name = '"+pgReplicaName+"'")
	if err != nil {
		return cluster.LinkState{}, fmt.Errorf("%s: reading pg_stat_replication: %w", c.name(), err)
	}
	if len(rows) == 0 {
		return cluster.LinkState{}, errors.New("no replica is connected to the primary (pg_stat_replication is empty)")
	}
	return pgLinkRow(rows[0]), nil
}

// pgLinkQuery reads a primary's walsenders with their TLS (see pgLinkRow).
const pgLinkQuery = `SELECT r.pid, coalesce(r.state, ''), coalesce(r.sync_state, ''), coalesce(s.ssl, false), coalesce(s.version, ''),
		coalesce(s.cipher, ''), coalesce((r.sent_lsn - '0/0'::pg_lsn)::bigint, 0), coalesce((extract(epoch FROM r.replay_lag) * 1e9)::bigint, -1)
		FROM pg_stat_replication r LEFT JOIN pg_stat_ssl s ON s.pid = r.pid`

// pgLinkRow is a row of pgLinkQuery as a cluster.LinkState.
func pgLinkRow(r []string) cluster.LinkState {
	var st cluster.LinkState
	st.PID, _ = strconv.Atoi(r[0])
	st.State, st.SyncState, st.Encrypted, st.Version, st.Cipher = r[1], r[2], r[3] == "t", r[4], r[5]
	st.Sent, _ = strconv.ParseInt(r[6], 10, 64)
	lag, _ := strconv.ParseInt(r[7], 10, 64)
	st.ReplayLag, st.HasReplayLag = time.Duration(lag), lag >= 0
	return st
}

// superuserQuery runs q over a superuser connection to the bench database
// and returns its rows as text.
func (s *Postgres) superuserQuery(ctx context.Context, q string) ([][]string, error) {
	cc, err := s.superuser(ctx, pgDatabase)
	if err != nil {
		return nil, err
	}
	defer cc.Close(context.Background())
	return pgRows(ctx, cc, q)
}

// pgPollFor retries check every 20 ms for up to limit.
func pgPollFor(ctx context.Context, limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// PrimaryAddr is the primary's host:port, which a relay on the link dials.
func (c *PostgresCluster) PrimaryAddr() string { return c.Primary.addr() }

// Primary opens a session on the primary as the default bench user, over
// TLS (verify-ca, the lab CA) or plain: the clients' link, not the
// replication link.
func (c *PostgresCluster) OpenPrimary(ctx context.Context, tls bool) (cluster.Conn, error) {
	return openClusterConn(ctx, c.Primary, tls)
}

// OpenReplica opens a plain session on the replica, which reads the
// heartbeat.
func (c *PostgresCluster) OpenReplica(ctx context.Context) (cluster.Conn, error) {
	return openClusterConn(ctx, c.Replica, false)
}

func openClusterConn(ctx context.Context, s *Postgres, tls bool) (cluster.Conn, error) {
	raw, err := s.URL("", tls)
	if err != nil {
		return nil, err
	}
	mode := "sslmode=disable"
	if tls {
		mode = "sslmode=verify-ca&sslrootcert=" + s.CAFile()
	}
	pc, err := pgDialURL(ctx, raw+"?"+mode)
	if err != nil {
		return nil, err
	}
	return &pgClusterConn{c: pc, tables: pgTableNames{pgWritesTable, pgHeartbeatTable}}, nil
}

// pgDialURL connects to a PostgreSQL URL, within 10 s.
func pgDialURL(ctx context.Context, raw string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		return nil, errors.New("parsing the PostgreSQL URL failed: check its form (postgres://user@host:port/db?...)") // its error may quote the URL
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgconn.ConnectConfig(cctx, cfg)
}

// pgClusterConn is a cluster.Conn on one lab PostgreSQL node.
type pgClusterConn struct {
	c      *pgconn.PgConn
	tables pgTableNames
	pad    []byte
}

func (p *pgClusterConn) Write(ctx context.Context) error {
	if p.pad == nil {
		p.pad = []byte(strings.Repeat("x", 100)) // a sysbench-sized row
	}
	return p.c.ExecParams(ctx, "INSERT INTO "+p.tables.writes+" (worker, pad) VALUES (0, $1)", [][]byte{p.pad}, nil, nil, nil).Read().Err
}

func (p *pgClusterConn) Beat(ctx context.Context, seq int64) error {
	return p.c.ExecParams(ctx, "UPDATE "+p.tables.heartbeat+" SET seq = $1 WHERE id = 1", [][]byte{[]byte(strconv.FormatInt(seq, 10))}, nil, nil, nil).Read().Err
}

func (p *pgClusterConn) Seen(ctx context.Context) (int64, error) {
	res := p.c.ExecParams(ctx, "SELECT seq FROM "+p.tables.heartbeat+" WHERE id = 1", nil, nil, nil, nil).Read()
	if res.Err != nil {
		return 0, res.Err
	}
	if len(res.Rows) != 1 {
		return 0, errors.New("the heartbeat row is missing")
	}
	return strconv.ParseInt(string(res.Rows[0][0]), 10, 64)
}

func (p *pgClusterConn) Close() error { return p.c.Close(context.Background()) }

// CPU is the CPU time each node's processes have used so far, the
// primary's first.
func (c *PostgresCluster) CPU() ([]time.Duration, error) {
	return nodesCPU(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// Alive reports why a node is gone, if one is.
func (c *PostgresCluster) Alive() error {
	if c.Replica == nil { // still being made
		return nodesAlive(primaryReplica, &c.Primary.labBase)
	}
	return nodesAlive(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// primaryReplica names the nodes of a primary/replica cluster, in the
// order of its CPU list.
var primaryReplica = []string{"primary", "replica"}

// nodesCPU is the CPU time of each of a cluster's nodes so far; an error
// names the node (names, in the nodes' order).
func nodesCPU(names []string, nodes ...*labBase) ([]time.Duration, error) {
	out := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		d, err := n.CPU()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		out[i] = d
	}
	return out, nil
}

// nodesAlive reports which of a cluster's nodes is gone and why, if one
// is; names are the nodes', in order.
func nodesAlive(names []string, nodes ...*labBase) error {
	for i, n := range nodes {
		if err := n.Alive(); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}

// Info describes both nodes for the result.
func (c *PostgresCluster) Info() []result.Server {
	p, r := c.Primary.Info(), c.Replica.Info()
	p.Lab, r.Lab = "primary", "replica"
	r.Settings["primary_conninfo"] = "per variant: sslmode=disable, or verify-ca with ssl_min/max_protocol_version; passfile, no password"
	return []result.Server{p, r}
}

// Notes are what a reader of a cluster's figures needs.
func (c *PostgresCluster) Notes() []string {
	return append(c.Primary.Notes(),
		"replica: a physical streaming replica made by "+c.Built.Method+"; each variant sets its primary_conninfo (ALTER SYSTEM, reload), ends the walsender so that it dials again, and checks the new link from the primary (pg_stat_replication joined with pg_stat_ssl on the walsender's pid)",
		"synchronous variants set synchronous_standby_names to the replica and synchronous_commit to on or remote_apply on the primary; asynchronous ones clear it",
		"fsync = off on both nodes: a throw-away lab; commit latency is the server's work and the replication link's, not a disk's")
}

// Stop stops the replica, then the primary, and removes their dirs.
func (c *PostgresCluster) Stop() error {
	var errs []error
	if c.Replica != nil {
		errs = append(errs, c.Replica.Stop())
	}
	errs = append(errs, c.Primary.Stop())
	return errors.Join(errs...)
}
