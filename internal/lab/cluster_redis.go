package lab

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A lab Redis cluster: a primary and one replica (REPLICAOF), each a lab
// Redis with its own ports and keys. Redis replicates asynchronously
// only; a TLS link is the replica dialing the primary's tls-port with
// tls-replication yes.

// The keys a replicate run writes on Redis.
const (
	redisHeartbeatKey = "tlsbench:heartbeat"
	redisWritesKeys   = 100000 // SETs cycle over tlsbench:w:0..N-1
)

// RedisCluster is a running lab Redis primary with its replica.
type RedisCluster struct {
	Primary, Replica *redisServer
}

// StartRedisCluster starts a primary and a replica (o's keys for both;
// the replica trusts the primary's CA) and links them plainly.
func StartRedisCluster(ctx context.Context, o Options) (_ *RedisCluster, err error) {
	if len(o.Keys) == 0 || o.PlainOnly {
		return nil, errors.New("Redis lab cluster: the primary needs its certificates (keys, not plain only)")
	}
	c := &RedisCluster{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for _, node := range []**redisServer{&c.Primary, &c.Replica} {
		s, err := startRedis(ctx, o)
		if err != nil {
			return nil, err
		}
		*node = s.(*redisServer)
	}
	ca, err := os.ReadFile(c.Primary.CAFile())
	if err != nil {
		return nil, err
	}
	primaryCA := filepath.Join(c.Replica.dir, "primary-ca.crt")
	if err := os.WriteFile(primaryCA, ca, 0o600); err != nil {
		return nil, err
	}
	// The replica dials the primary as the lab user; the password goes
	// over the admin connection, never on a command line. Its own TLS
	// port asks no client for a certificate, so its CA may be the
	// primary's, which its replication link then verifies.
	if _, err := c.Replica.command(ctx, "CONFIG", "SET", "masteruser", redisUser, "masterauth", c.Primary.password, "tls-ca-cert-file", primaryCA); err != nil {
		return nil, fmt.Errorf("Redis lab cluster: configuring the replica: %w", err)
	}
	if _, err := c.Primary.command(ctx, "SET", redisHeartbeatKey, "0"); err != nil {
		return nil, err
	}
	// A full sync starts at once: Redis's default waits 5 s for more
	// replicas to share a diskless one.
	if _, err := c.Primary.command(ctx, "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return nil, err
	}
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "off", Sync: "off"}); err != nil {
		return nil, err
	}
	return c, nil
}

// SetLink makes the replica replicate from the primary over l: the
// primary's key and TLS version (tls-protocols), the replica's
// tls-replication and the port it dials, then a new link (REPLICAOF NO
// ONE first, so that it dials again; the full sync that follows, as
// Resync shows, copies the data set), waited for until both sides show it up, and verified
// from the primary (CLIENT LIST: the port the replica's connection came
// in on).
func (c *RedisCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	if l.Sync != "" && l.Sync != "off" {
		return cluster.LinkState{}, errors.New("Redis lab cluster: Redis replicates asynchronously only: use --sync off")
	}
	p := c.Primary
	if l.TLS != "off" {
		if l.Key != "" {
			if _, err := p.UseKey(ctx, l.Key); err != nil {
				return cluster.LinkState{}, err
			}
		}
		if _, err := p.command(ctx, "CONFIG", "SET", "tls-protocols", pgTLSVersion(l.TLS)); err != nil {
			return cluster.LinkState{}, fmt.Errorf("Redis lab cluster: tls-protocols: %w", err)
		}
	}
	return c.relink(ctx, l)
}

// relink makes the replica dial the primary again over l (whose key and
// TLS version the primary has): REPLICAOF NO ONE, its tls-replication,
// REPLICAOF the primary's port of l (or l.Addr, a relay's), then waits
// until both sides show the link up, and verifies it.
func (c *RedisCluster) relink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	r := c.Replica
	addr, replTLS := c.LinkAddr(false), "no"
	if l.TLS != "off" {
		addr, replTLS = c.LinkAddr(true), "yes"
	}
	host, port, _ := net.SplitHostPort(cmp.Or(l.Addr, addr))
	steps := [][]string{{"REPLICAOF", "NO", "ONE"}, {"CONFIG", "SET", "tls-replication", replTLS}, {"REPLICAOF", host, port}}
	for _, cmd := range steps {
		if _, err := r.command(ctx, cmd...); err != nil {
			return cluster.LinkState{}, fmt.Errorf("Redis lab cluster: %s on the replica: %w", strings.Join(cmd[:2], " "), err)
		}
	}
	var st cluster.LinkState
	err := pgPollFor(ctx, 30*time.Second, func() error {
		if err := c.Alive(); err != nil {
			return err
		}
		info, err := r.command(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(strings.Join(info, ""), "master_link_status:up") {
			return errors.New("the replica's master_link_status is not up")
		}
		st, err = c.LinkState(ctx)
		if err == nil && st.State != "online" {
			err = fmt.Errorf("the primary shows the replica %s", st.State)
		}
		return err
	})
	if err != nil {
		if aerr := c.Alive(); aerr != nil {
			return cluster.LinkState{}, aerr
		}
		return cluster.LinkState{}, r.proc.failure(fmt.Sprintf("did not replicate from the primary over the link (tls %s) within 30 s (%v)", l.TLS, err))
	}
	if err := l.Verify(st); err != nil {
		return st, err
	}
	return st, nil
}

// LinkState reads the link from the primary: its replica's connection
// (CLIENT LIST TYPE replica), encrypted when it came in on the tls-port,
// and master_repl_offset (INFO replication). Redis does not say which TLS
// version a connection has: Version is the one tls-protocols allows.
func (c *RedisCluster) LinkState(ctx context.Context) (cluster.LinkState, error) {
	p := c.Primary
	clients, err := p.command(ctx, "CLIENT", "LIST", "TYPE", "replica")
	if err != nil {
		return cluster.LinkState{}, err
	}
	info, err := p.command(ctx, "INFO", "replication")
	if err != nil {
		return cluster.LinkState{}, err
	}
	var st cluster.LinkState
	list := strings.TrimSpace(strings.Join(clients, ""))
	if list == "" {
		return st, errors.New("no replica is connected to the primary (CLIENT LIST TYPE replica is empty)")
	}
	fields := redisFields(strings.Split(list, "\n")[0], " ", "=")
	_, lport, _ := net.SplitHostPort(fields["laddr"])
	st.PID, _ = strconv.Atoi(fields["id"])
	st.Encrypted = lport == strconv.Itoa(p.tlsPort)
	all := redisFields(strings.Join(info, ""), "\r\n", ":")
	st.Sent, _ = strconv.ParseInt(all["master_repl_offset"], 10, 64)
	st.State = redisFields(all["slave0"], ",", "=")["state"]
	st.SyncState = "async"
	if st.Encrypted {
		got, err := p.command(ctx, "CONFIG", "GET", "tls-protocols")
		if err == nil && len(got) == 2 && !strings.Contains(got[1], " ") {
			st.Version = got[1]
		}
	}
	return st, nil
}

// redisFields splits "a=1 b=2" (sep " ", kv "=") into a map.
func redisFields(s, sep, kv string) map[string]string {
	out := map[string]string{}
	for f := range strings.SplitSeq(s, sep) {
		if k, v, ok := strings.Cut(strings.TrimSpace(f), kv); ok {
			out[k] = v
		}
	}
	return out
}

// redisResyncKeys is the data set a Resync copies: this many keys of
// redisResyncValue bytes (about 25 MB in the RDB), beside the writes'.
const (
	redisResyncKeys  = 200000
	redisResyncValue = 100
	redisResyncBatch = 1000 // keys per MSET
)

// Resync times a full sync of the primary to the replica over link l: the
// data set filled to redisResyncKeys keys first (once), the link set,
// then REPLICAOF NO ONE, which gives the replica a replication ID of its
// own that the primary does not know, and REPLICAOF again: the primary
// sends its whole data set as an RDB, with the server's own settings
// (Redis 7.0: diskless, a forked child writing the RDB to the socket).
// Newer Redis sends a disk-based sync's file with sendfile(2) over a
// plain link, never over TLS; Redis 7.0.15 (Debian 12) has no such path,
// so here both links copy through user space. Timed until the replica's
// link is up again (its load done), polled every 20 ms; bytes are the
// primary's total_net_repl_output_bytes over the copy.
func (c *RedisCluster) Resync(ctx context.Context, l cluster.Link) (result.Resync, error) {
	p := c.Primary
	if err := c.fill(ctx); err != nil {
		return result.Resync{}, fmt.Errorf("Redis lab cluster: filling the primary for a resync: %w", err)
	}
	if _, err := c.SetLink(ctx, l); err != nil {
		return result.Resync{}, err
	}
	mode := "disk-based"
	if got, err := p.command(ctx, "CONFIG", "GET", "repl-diskless-sync"); err == nil && len(got) == 2 && got[1] == "yes" {
		mode = "diskless"
	}
	sent0, full0, err := c.syncStats(ctx)
	if err != nil {
		return result.Resync{}, err
	}
	cpu0, err := c.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	start := time.Now()
	if _, err := c.relink(ctx, l); err != nil {
		return result.Resync{}, err
	}
	elapsed := time.Since(start)
	cpu1, err := c.CPU()
	if err != nil {
		return result.Resync{}, err
	}
	sent1, full1, err := c.syncStats(ctx)
	if err != nil {
		return result.Resync{}, err
	}
	if full1 == full0 {
		return result.Resync{}, errors.New("Redis lab cluster: the replica came back without a full sync (the primary's sync_full did not advance): no resync to time")
	}
	return result.Resync{Method: fmt.Sprintf("Redis full sync, %s (REPLICAOF after REPLICAOF NO ONE) of %d keys of %d bytes; bytes: the primary's total_net_repl_output_bytes", mode, redisResyncKeys, redisResyncValue),
		Bytes: sent1 - sent0, Elapsed: elapsed, SourceCPU: cpu1[0] - cpu0[0], DestCPU: cpu1[1] - cpu0[1]}, nil
}

// fill writes the resync's data set on the primary, once: MSETs of
// redisResyncBatch keys over one connection.
func (c *RedisCluster) fill(ctx context.Context) error {
	n, err := c.Primary.command(ctx, "EXISTS", fmt.Sprintf("tlsbench:fill:%d", redisResyncKeys-1))
	if err == nil && len(n) == 1 && n[0] == "1" {
		return nil
	}
	cc, err := openRedisConn(ctx, c.Primary, false)
	if err != nil {
		return err
	}
	defer cc.Close()
	rc := cc.(*redisConn)
	// Random values: the RDB compresses a repeated one to nothing.
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, redisResyncValue/2)
	for i := 0; i < redisResyncKeys; i += redisResyncBatch {
		args := []string{"MSET"}
		for k := i; k < min(i+redisResyncBatch, redisResyncKeys); k++ {
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			args = append(args, fmt.Sprintf("tlsbench:fill:%d", k), hex.EncodeToString(raw))
		}
		if _, err := rc.do(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// syncStats reads the primary's replication output bytes so far and its
// count of full syncs (INFO stats).
func (c *RedisCluster) syncStats(ctx context.Context) (sent, full int64, err error) {
	info, err := c.Primary.command(ctx, "INFO", "stats")
	if err != nil {
		return 0, 0, err
	}
	all := redisFields(strings.Join(info, ""), "\r\n", ":")
	out, ok := all["total_net_repl_output_bytes"]
	if !ok {
		return 0, 0, errors.New("Redis lab cluster: INFO stats has no total_net_repl_output_bytes (Redis 7.0 or later has)")
	}
	sent, _ = strconv.ParseInt(out, 10, 64)
	full, _ = strconv.ParseInt(all["sync_full"], 10, 64)
	return sent, full, nil
}

// PrimaryAddr is the primary's plaintext address.
func (c *RedisCluster) PrimaryAddr() string { return c.LinkAddr(false) }

// LinkAddr is the primary's address a replica dials over a link of TLS
// (its tls-port) or plain: a relay on a TLS link dials the tls-port.
func (c *RedisCluster) LinkAddr(tls bool) string {
	port := c.Primary.port
	if tls {
		port = c.Primary.tlsPort
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// OpenPrimary opens a session on the primary, over its tls-port or plain.
func (c *RedisCluster) OpenPrimary(ctx context.Context, useTLS bool) (cluster.Conn, error) {
	return openRedisConn(ctx, c.Primary, useTLS)
}

// OpenReplica opens a plain session on the replica.
func (c *RedisCluster) OpenReplica(ctx context.Context) (cluster.Conn, error) {
	return openRedisConn(ctx, c.Replica, false)
}

// redisConn is a cluster.Conn on one lab Redis node: RESP2 over one
// connection, logged in as the lab user.
type redisConn struct {
	c   net.Conn
	br  *bufio.Reader
	n   int
	pad string
}

func openRedisConn(ctx context.Context, s *redisServer, useTLS bool) (cluster.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, redisAdminTimeout)
	defer cancel()
	var d net.Dialer
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	var nc net.Conn
	var err error
	if useTLS {
		td := tls.Dialer{NetDialer: &d, Config: &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1"}}
		nc, err = td.DialContext(cctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort)))
	} else {
		nc, err = d.DialContext(cctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	rc := &redisConn{c: nc, br: bufio.NewReader(nc), pad: strings.Repeat("x", 100)}
	if _, err := rc.do(cctx, "AUTH", redisUser, s.password); err != nil {
		nc.Close()
		return nil, fmt.Errorf("AUTH: %w", err)
	}
	return rc, nil
}

// do sends one command and reads its reply, bounded by ctx.
func (r *redisConn) do(ctx context.Context, args ...string) ([]string, error) {
	stop := context.AfterFunc(ctx, func() { r.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := r.c.Write(req); err != nil {
		return nil, err
	}
	return redisReply(r.br)
}

func (r *redisConn) Write(ctx context.Context) error {
	r.n = (r.n + 1) % redisWritesKeys
	_, err := r.do(ctx, "SET", "tlsbench:w:"+strconv.Itoa(r.n), r.pad)
	return err
}

func (r *redisConn) Beat(ctx context.Context, seq int64) error {
	_, err := r.do(ctx, "SET", redisHeartbeatKey, strconv.FormatInt(seq, 10))
	return err
}

func (r *redisConn) Seen(ctx context.Context) (int64, error) {
	v, err := r.do(ctx, "GET", redisHeartbeatKey)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 || v[0] == "" {
		return 0, errors.New("the heartbeat key is missing")
	}
	return strconv.ParseInt(v[0], 10, 64)
}

func (r *redisConn) Close() error { return r.c.Close() }

// CPU is the CPU time each node's process has used so far, the
// primary's first.
func (c *RedisCluster) CPU() ([]time.Duration, error) {
	return nodesCPU(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// Alive reports why a node is gone, if one is.
func (c *RedisCluster) Alive() error {
	return nodesAlive(primaryReplica, &c.Primary.labBase, &c.Replica.labBase)
}

// Info describes both nodes for the result.
func (c *RedisCluster) Info() []result.Server {
	p, r := c.Primary.Info(), c.Replica.Info()
	p.Lab, r.Lab = "primary", "replica"
	return []result.Server{p, r}
}

// Notes are what a reader of a Redis cluster's figures needs.
func (c *RedisCluster) Notes() []string {
	return append(c.Primary.Notes(),
		"replica: REPLICAOF the primary's port (plain) or tls-port (tls-replication yes, verifying the primary's CA); each variant runs REPLICAOF NO ONE, then REPLICAOF again (a full sync: the replica's new replication ID is not the primary's), and checks from the primary's CLIENT LIST that the replica's connection came in on the port of its variant; the TLS version is the one the primary's tls-protocols allows (Redis does not report a connection's)",
		"Redis replicates asynchronously only, without persistence here (save \"\", appendonly no)")
}

// Stop stops the replica, then the primary, and removes their dirs.
func (c *RedisCluster) Stop() error {
	var errs []error
	for _, s := range []*redisServer{c.Replica, c.Primary} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}
