package lab

import (
	"cmp"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A lab MariaDB cluster: a primary that writes a binary log and one
// asynchronous replica (GTID), made from a mariadb-dump snapshot of the
// primary's tables (--single-transaction --master-data --gtid: the
// replica starts at the snapshot's GTID position). Only the replication
// link changes between variants: the replica's CHANGE MASTER TO
// (MASTER_SSL, the primary's CA, MASTER_SSL_VERIFY_SERVER_CERT), and its
// TLS version, which the replica's OpenSSL configuration pins: MariaDB
// has no per-link setting that keeps TLS 1.3 out (MASTER_SSL_CIPHER sets
// TLS 1.2's ciphers only), and reads that configuration at start, so a
// new version restarts the replica. The primary runs with
// performance_schema on: status_by_thread is the one place MariaDB shows
// another session's Ssl_version, here the replica's binlog dump
// connection's, with its Bytes_sent.

// The replica's login on the primary (with the lab users' password) and
// the tables a replicate run writes on a MariaDB or Galera cluster.
const (
	mariaDBReplAccount    = "'bench_repl'@'127.%'"
	mariaDBReplUser       = "bench_repl"
	mariaDBWritesTable    = "tlsbench_writes"
	mariaDBHeartbeatTable = "tlsbench_heartbeat"
)

// mariaDBClusterTables are made on a cluster's first node, before the
// others copy it.
var mariaDBClusterTables = []string{
	"CREATE TABLE " + mariaDBDatabase + "." + mariaDBWritesTable + " (id bigint AUTO_INCREMENT PRIMARY KEY, worker int NOT NULL, at timestamp(6) NOT NULL DEFAULT current_timestamp(6), pad varchar(255) NOT NULL) ENGINE=InnoDB",
	"CREATE TABLE " + mariaDBDatabase + "." + mariaDBHeartbeatTable + " (id int PRIMARY KEY, seq bigint NOT NULL) ENGINE=InnoDB",
	"INSERT INTO " + mariaDBDatabase + "." + mariaDBHeartbeatTable + " VALUES (1, 0)",
}

// MariaDBCluster is a running lab MariaDB primary with its asynchronous
// replica.
type MariaDBCluster struct {
	Primary, Replica *MariaDB
	// Built is the snapshot that made the replica.
	Built result.Resync
	// pinned is the TLS version the replica's OpenSSL configuration
	// allows alone, "" for any.
	pinned string
}

func (c *MariaDBCluster) name() string { return "MariaDB lab cluster" }

// StartMariaDBCluster starts a primary (binary log, GTID,
// performance_schema) and a replica made from its snapshot, linked
// plainly; SetLink chooses the link. On error nothing is left running.
func StartMariaDBCluster(ctx context.Context, o Options) (_ *MariaDBCluster, err error) {
	if len(o.Keys) == 0 || o.PlainOnly {
		return nil, errors.New("MariaDB lab cluster: the primary needs its certificates (keys, not plain only)")
	}
	c := &MariaDBCluster{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.Primary, err = newMariaDB(o); err != nil {
		return nil, err
	}
	p := c.Primary
	p.role = "MariaDB primary"
	p.extra = []string{"--server-id=1", "--log-bin=" + filepath.Join(p.dir, "binlog"), "--binlog-format=ROW", "--sync-binlog=0",
		// Its status_by_thread, not its instruments: those stay off.
		"--performance-schema=ON", "--performance-schema-instrument=%=OFF"}
	if err := p.boot(ctx); err != nil {
		return nil, err
	}
	err = mariaDBExec(ctx, p.admin, c.name()+": the primary's tables and replication user", p.password, append(slices.Clone(mariaDBClusterTables),
		"CREATE USER "+mariaDBReplAccount+" IDENTIFIED BY "+mariaDBQuote(p.password),
		"GRANT REPLICATION SLAVE ON *.* TO "+mariaDBReplAccount)...)
	if err != nil {
		return nil, err
	}
	if c.Replica, err = newMariaDB(o); err != nil {
		return nil, err
	}
	r := c.Replica
	r.role = "MariaDB replica"
	r.extra = []string{"--server-id=2", "--skip-slave-start", "--relay-log=" + filepath.Join(r.dir, "relay")}
	r.env = []string{"OPENSSL_CONF=" + filepath.Join(r.dir, "openssl.cnf")}
	ca, err := os.ReadFile(p.CAFile())
	if err != nil {
		return nil, err
	}
	err = errors.Join(
		os.WriteFile(mariaDBPrimaryCA(r.dir), ca, 0o600),
		os.WriteFile(filepath.Join(r.dir, "openssl.cnf"), []byte(openSSLConf("")), 0o600))
	if err != nil {
		return nil, err
	}
	if err := r.boot(ctx); err != nil {
		return nil, err
	}
	if c.Built, err = c.snapshot(ctx); err != nil {
		return nil, err
	}
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "off", Sync: "off"}); err != nil {
		return nil, err
	}
	return c, nil
}

func mariaDBPrimaryCA(dir string) string { return filepath.Join(dir, "primary-ca.crt") }

// openSSLConf is the OpenSSL configuration of a lab server's process:
// the lab's security level (pgOpenSSLConf) and, with version ("1.2",
// "1.3"), that TLS version alone for every TLS connection the process
// makes or takes.
func openSSLConf(version string) string {
	if version == "" {
		return pgOpenSSLConf
	}
	v := pgTLSVersion(version)
	return pgOpenSSLConf + "MinProtocol = " + v + "\nMaxProtocol = " + v + "\n"
}

// snapshot copies the primary's tables into the replica, timed:
// mariadb-dump over the primary's socket (--master-data --gtid: the
// snapshot sets the replica's gtid_slave_pos), loaded by the mariadb
// client over the replica's.
func (c *MariaDBCluster) snapshot(ctx context.Context) (result.Resync, error) {
	dump, err := mariaDBBinary("mariadb-dump")
	if err != nil {
		return result.Resync{}, err
	}
	client, err := mariaDBBinary("mariadb")
	if err != nil {
		return result.Resync{}, err
	}
	p, r := c.Primary, c.Replica
	file := filepath.Join(r.dir, "snapshot.sql")
	before, err := p.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	start := time.Now()
	d, err := runTool(ctx, "mariadb-dump", exec.Command(dump, "--no-defaults", "--socket="+p.socket(), "--user=root",
		"--single-transaction", "--master-data=1", "--gtid", "--result-file="+file,
		mariaDBDatabase, mariaDBWritesTable, mariaDBHeartbeatTable), filepath.Join(r.dir, "snapshot.log"))
	if err != nil {
		return result.Resync{}, err
	}
	after, err := p.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	in, err := os.Open(file)
	if err != nil {
		return result.Resync{}, err
	}
	defer in.Close()
	load := exec.Command(client, "--no-defaults", "--socket="+r.socket(), "--user=root", mariaDBDatabase)
	load.Stdin = in
	l, err := runTool(ctx, "mariadb (loading the snapshot)", load, filepath.Join(r.dir, "snapshot.log"))
	if err != nil {
		return result.Resync{}, err
	}
	fi, err := in.Stat()
	if err != nil {
		return result.Resync{}, err
	}
	return result.Resync{Method: "mariadb-dump --single-transaction --master-data --gtid of tlsbench's tables over the primary's socket, loaded by the mariadb client",
		Bytes: fi.Size(), Elapsed: time.Since(start), SourceCPU: after - before, DestCPU: d + l}, nil
}

// runTool runs a program to its end (at most readyTimeout), its output
// to logPath, and returns its CPU time.
func runTool(ctx context.Context, name string, cmd *exec.Cmd, logPath string) (time.Duration, error) {
	p, err := startProcess(name, cmd, logPath)
	if err != nil {
		return 0, err
	}
	if err := p.finish(ctx, readyTimeout); err != nil {
		return 0, err
	}
	return p.ownCPU(), nil
}

// SetLink makes the replica replicate from the primary over l: the
// primary's key, the replica's TLS version (a restart when it changes),
// then CHANGE MASTER TO and START SLAVE, waited for until both threads
// run on a new connection, and verified from the primary's
// performance_schema: TLS of l's version, or plain.
func (c *MariaDBCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	if l.Sync != "" && l.Sync != "off" {
		return cluster.LinkState{}, errors.New("MariaDB lab cluster: the replica is asynchronous only: use --sync off")
	}
	p, r := c.Primary, c.Replica
	if l.TLS != "off" {
		if l.Key != "" {
			if _, err := p.UseKey(ctx, l.Key); err != nil {
				return cluster.LinkState{}, err
			}
		}
		if l.TLS != c.pinned {
			if err := c.pinReplica(ctx, l.TLS); err != nil {
				return cluster.LinkState{}, err
			}
		}
	}
	old, err := c.dumpThreads(ctx)
	if err != nil {
		return cluster.LinkState{}, err
	}
	host, port := "127.0.0.1", strconv.Itoa(p.port)
	if l.Addr != "" {
		host, port, _ = net.SplitHostPort(l.Addr)
	}
	change := "CHANGE MASTER TO MASTER_HOST=" + mariaDBQuote(host) + ", MASTER_PORT=" + port +
		", MASTER_USER=" + mariaDBQuote(mariaDBReplUser) + ", MASTER_PASSWORD=" + mariaDBQuote(p.password) +
		", MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, "
	if l.TLS == "off" {
		change += "MASTER_SSL=0, MASTER_SSL_VERIFY_SERVER_CERT=0"
	} else {
		change += "MASTER_SSL=1, MASTER_SSL_CA=" + mariaDBQuote(mariaDBPrimaryCA(r.dir)) + ", MASTER_SSL_VERIFY_SERVER_CERT=1"
	}
	if err := mariaDBExec(ctx, r.admin, c.name()+": setting the replica's link", p.password, "STOP SLAVE", change, "START SLAVE"); err != nil {
		return cluster.LinkState{}, err
	}
	st, err := awaitLink(ctx, c, r.proc, l, func(st cluster.LinkState) error {
		switch {
		case slices.Contains(old, st.PID):
			return errors.New("the primary still shows the old connection")
		case st.State != "running":
			return fmt.Errorf("the replica's threads: %s", st.State)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	return st, l.Verify(st)
}

// linkReader is a cluster as awaitLink reads it.
type linkReader interface {
	Alive() error
	LinkState(ctx context.Context) (cluster.LinkState, error)
}

// awaitLink reads c's link until up accepts it, for up to 30 s after a
// new link l was asked for. A node that died is the error; else one that
// quotes the replica's log.
func awaitLink(ctx context.Context, c linkReader, replica *process, l cluster.Link, up func(cluster.LinkState) error) (cluster.LinkState, error) {
	var st cluster.LinkState
	err := pgPollFor(ctx, 30*time.Second, func() error {
		if err := c.Alive(); err != nil {
			return err
		}
		var err error
		if st, err = c.LinkState(ctx); err != nil {
			return err
		}
		return up(st)
	})
	if err == nil {
		return st, nil
	}
	if aerr := c.Alive(); aerr != nil {
		return cluster.LinkState{}, aerr
	}
	return cluster.LinkState{}, replica.failure(fmt.Sprintf("did not replicate from the primary over the link (tls %s) within 30 s (%v)", l.TLS, err))
}

// pinReplica restarts the replica with its OpenSSL configuration allowing
// TLS version v alone.
func (c *MariaDBCluster) pinReplica(ctx context.Context, v string) error {
	r := c.Replica
	if err := os.WriteFile(filepath.Join(r.dir, "openssl.cnf"), []byte(openSSLConf(v)), 0o600); err != nil {
		return err
	}
	if err := r.restart(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("%s: restarting the replica for TLS %s: %w", c.name(), v, err)
	}
	c.pinned = v
	return nil
}

// restart stops the server cleanly (within grace) and starts it again
// on its data.
func (m *MariaDB) restart(ctx context.Context, grace time.Duration) error {
	if err := m.proc.stopWithin(0, grace); err != nil {
		return err
	}
	return m.launch(ctx)
}

// mariaDBDumpQuery reads, from the primary's performance_schema, the
// replica's binlog dump connection (the newest, if the old one lingers):
// its id, how many Ssl_version rows it has (0: the server does not say,
// which is no proof of plain), Ssl_version ("" when plain), Ssl_cipher
// and Bytes_sent.
const mariaDBDumpQuery = `SELECT t.PROCESSLIST_ID,
		COUNT(IF(s.VARIABLE_NAME = 'Ssl_version', 1, NULL)),
		COALESCE(MAX(IF(s.VARIABLE_NAME = 'Ssl_version', s.VARIABLE_VALUE, NULL)), ''),
		COALESCE(MAX(IF(s.VARIABLE_NAME = 'Ssl_cipher', s.VARIABLE_VALUE, NULL)), ''),
		COALESCE(MAX(IF(s.VARIABLE_NAME = 'Bytes_sent', s.VARIABLE_VALUE, NULL)), '0')
	FROM performance_schema.threads t JOIN performance_schema.status_by_thread s ON s.THREAD_ID = t.THREAD_ID
	WHERE t.PROCESSLIST_COMMAND = 'Binlog Dump' AND t.PROCESSLIST_USER = '` + mariaDBReplUser + `'
	GROUP BY t.PROCESSLIST_ID ORDER BY t.PROCESSLIST_ID DESC`

// dumpThreads lists the ids of the primary's binlog dump connections.
func (c *MariaDBCluster) dumpThreads(ctx context.Context) ([]int, error) {
	rows, err := c.Primary.admin.QueryContext(ctx, mariaDBDumpQuery)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the primary's performance_schema: %w", c.name(), err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id, n int
		var ver, cipher, sent string
		if err := rows.Scan(&id, &n, &ver, &cipher, &sent); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// LinkState reads the link: from the primary, the replica's connection's
// TLS and bytes sent (performance_schema.status_by_thread); from the
// replica, SHOW SLAVE STATUS (its threads, Seconds_Behind_Master).
func (c *MariaDBCluster) LinkState(ctx context.Context) (cluster.LinkState, error) {
	var st cluster.LinkState
	var n int
	err := c.Primary.admin.QueryRowContext(ctx, mariaDBDumpQuery).Scan(&st.PID, &n, &st.Version, &st.Cipher, &st.Sent)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, errors.New("no replica is connected to the primary (no Binlog Dump connection in its performance_schema)")
	case err != nil:
		return st, fmt.Errorf("%s: reading the primary's performance_schema: %w", c.name(), err)
	case n == 0:
		return st, errors.New("the primary's performance_schema.status_by_thread shows no Ssl_version for the replica's connection: its TLS cannot be checked")
	}
	st.Encrypted, st.SyncState = st.Version != "", "async"
	ss, err := mariaDBFirstRow(ctx, c.Replica.admin, "SHOW SLAVE STATUS")
	if err != nil {
		return st, fmt.Errorf("%s: SHOW SLAVE STATUS on the replica: %w", c.name(), err)
	}
	if ss == nil {
		return st, errors.New("the replica has no primary (SHOW SLAVE STATUS is empty)")
	}
	io, sq := ss["Slave_IO_Running"].String, ss["Slave_SQL_Running"].String
	st.State = "running"
	if io != "Yes" || sq != "Yes" {
		st.State = fmt.Sprintf("IO %s, SQL %s", io, sq)
		if e := ss["Last_IO_Error"].String; e != "" {
			st.State += " (" + e + ")"
		}
	}
	if s := ss["Seconds_Behind_Master"]; s.Valid {
		secs, _ := strconv.Atoi(s.String)
		st.ReplayLag, st.HasReplayLag = time.Duration(secs)*time.Second, true
	}
	if allowed := ss["Master_SSL_Allowed"].String == "Yes"; st.State == "running" && allowed != st.Encrypted {
		return st, fmt.Errorf("replication link: the replica says Master_SSL_Allowed %s, the primary shows its connection %s", ss["Master_SSL_Allowed"].String, cmp.Or(st.Version, "plain"))
	}
	return st, nil
}

// mariaDBFirstRow is the first row of q, column by column; nil when q
// has no row.
func mariaDBFirstRow(ctx context.Context, db *sql.DB, q string) (map[string]sql.NullString, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || !rows.Next() {
		return nil, errors.Join(err, rows.Err())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make(map[string]sql.NullString, len(cols))
	for i, col := range cols {
		out[col] = vals[i]
	}
	return out, nil
}

// Resync is not measured on a MariaDB cluster yet (plan refuses it).
func (c *MariaDBCluster) Resync(context.Context, cluster.Link) (result.Resync, error) {
	return result.Resync{}, errors.New("MariaDB lab cluster: no resync figure yet (the replica's build is timed: see its snapshot)")
}

// PrimaryAddr is the primary's host:port, which a relay on the link dials.
func (c *MariaDBCluster) PrimaryAddr() string { return c.Primary.addr() }

// OpenPrimary opens a session on the primary as the default lab user,
// over TLS (the lab CA) or plain: the clients' link.
func (c *MariaDBCluster) OpenPrimary(ctx context.Context, useTLS bool) (cluster.Conn, error) {
	return openMariaDBConn(ctx, c.Primary, useTLS)
}

// OpenReplica opens a plain session on the replica, which reads the
// heartbeat.
func (c *MariaDBCluster) OpenReplica(ctx context.Context) (cluster.Conn, error) {
	return openMariaDBConn(ctx, c.Replica, false)
}

// mariaDBConn is a cluster.Conn on one lab MariaDB node: a session of the
// default lab user whose statements carry their arguments inline (one
// round trip each, as a client without prepared statements sends them).
type mariaDBConn struct {
	db  *sql.DB
	c   *sql.Conn
	pad string
}

func openMariaDBConn(ctx context.Context, m *MariaDB, useTLS bool) (cluster.Conn, error) {
	var tc *tls.Config
	if useTLS {
		tc = &tls.Config{RootCAs: m.roots, ServerName: "127.0.0.1"}
	}
	cfg := m.clientConfig(tc)
	cfg.InterpolateParams = true
	cfg.Timeout = 10 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &mariaDBConn{db: db, c: c, pad: strings.Repeat("x", 100)}, nil // a sysbench-sized row
}

func (m *mariaDBConn) Write(ctx context.Context) error {
	_, err := m.c.ExecContext(ctx, "INSERT INTO "+mariaDBWritesTable+" (worker, pad) VALUES (0, ?)", m.pad)
	return err
}

func (m *mariaDBConn) Beat(ctx context.Context, seq int64) error {
	_, err := m.c.ExecContext(ctx, "UPDATE "+mariaDBHeartbeatTable+" SET seq = ? WHERE id = 1", seq)
	return err
}

func (m *mariaDBConn) Seen(ctx context.Context) (int64, error) {
	var seq int64
	err := m.c.QueryRowContext(ctx, "SELECT seq FROM "+mariaDBHeartbeatTable+" WHERE id = 1").Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errors.New("the heartbeat row is missing")
	}
	return seq, err
}

func (m *mariaDBConn) Close() error { return errors.Join(m.c.Close(), m.db.Close()) }

// CPU is the CPU time each node has used so far, the primary's first.
func (c *MariaDBCluster) CPU() ([]time.Duration, error) {
	return nodesCPU(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// Alive reports why a node is gone, if one is.
func (c *MariaDBCluster) Alive() error {
	if c.Replica == nil || c.Replica.proc == nil { // still being made
		return nodesAlive(primaryReplica, &c.Primary.labBase)
	}
	return nodesAlive(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// Info describes both nodes for the result.
func (c *MariaDBCluster) Info() []result.Server {
	p, r := c.Primary.Info(), c.Replica.Info()
	p.Lab, r.Lab = "primary", "replica"
	p.Settings["replication"] = "binary log (binlog_format ROW, sync_binlog 0), GTID; performance_schema ON with every instrument off (its status_by_thread shows the replica's connection's TLS)"
	r.Settings["replication"] = "per variant: CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos, MASTER_SSL=0, or MASTER_SSL=1 with the primary's CA and MASTER_SSL_VERIFY_SERVER_CERT=1; the TLS version pinned by the replica's OPENSSL_CONF (MinProtocol = MaxProtocol), restarted when it changes"
	return []result.Server{p, r}
}

// Notes are what a reader of a MariaDB cluster's figures needs.
func (c *MariaDBCluster) Notes() []string {
	return append(c.Primary.Notes(),
		"replica: asynchronous, GTID (MASTER_USE_GTID=slave_pos), made from a mariadb-dump snapshot of tlsbench's tables (--single-transaction --master-data --gtid) loaded into a fresh lab server",
		"each variant runs STOP SLAVE, CHANGE MASTER TO (MASTER_SSL=0, or MASTER_SSL=1 with the primary's CA and MASTER_SSL_VERIFY_SERVER_CERT=1), START SLAVE, and checks the new connection from the primary's performance_schema.status_by_thread (Ssl_version, Ssl_cipher; Bytes_sent is the link's figure); MariaDB cannot choose a replication connection's TLS version, so the replica's OpenSSL configuration pins it (MinProtocol = MaxProtocol) and the replica restarts when it changes",
		"the server's own lag is the replica's Seconds_Behind_Master: whole seconds (0 on loopback), a resolution of 1 s",
		"innodb_flush_log_at_trx_commit = 0 and sync_binlog = 0: a throw-away lab; commit latency is the server's work, not a disk's")
}

// Stop stops the replica, then the primary, and removes their dirs.
func (c *MariaDBCluster) Stop() error {
	var errs []error
	for _, s := range []*MariaDB{c.Replica, c.Primary} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}
