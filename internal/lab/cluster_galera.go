package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A lab Galera cluster: three MariaDB nodes with galera-4, each a lab
// MariaDB with its own loopback ports (mysqld, gcomm, IST, SST); node 1
// bootstraps the cluster (--wsrep-new-cluster) and the others join it
// by a state transfer (SST by rsync, unencrypted, once, when the cluster
// is built). What a variant changes is the group link (gcomm, and IST):
// socket.ssl in every node's wsrep_provider_options, which galera reads
// at start only, so a new link restarts the whole cluster: nodes 3, 2, 1
// stopped cleanly, node 1 bootstrapping again from its data, the others
// rejoining with nothing to transfer. galera-4 26.4 has no setting of the
// TLS version (socket.ssl_cipher is TLS 1.2's cipher list) and reports
// none: the nodes' OpenSSL configuration pins it (MinProtocol =
// MaxProtocol), and a TLS handshake of tlsbench's with each node's group
// port checks it; each node's log says whether its group link is ssl://
// or tcp://.

// galeraProvider is galera-4's library as Debian installs it.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// galeraNames name a Galera cluster's nodes in the order of its CPU list:
// node 1 is written to, node 2 read.
var galeraNames = []string{"node 1", "node 2", "node 3"}

// galeraStopGrace is how long a node may take to leave the cluster and
// shut down cleanly, which a restart from its own data needs.
const galeraStopGrace = 60 * time.Second

// GaleraCluster is a running lab Galera cluster of three nodes.
type GaleraCluster struct {
	Nodes []*MariaDB
	// gcomm, ist and sst are each node's group, IST and SST ports.
	gcomm, ist, sst []int
	// link is the group link the nodes run with, shown how the nodes and
	// the handshakes showed it when they started with it.
	link  cluster.Link
	shown cluster.LinkState
	// logAt is where each node's log stood when it last started.
	logAt []int64
	// wan, when set, is the delay link node 3 is behind (see
	// StartGaleraClusterWAN).
	wan *DelayLink
}

func (c *GaleraCluster) name() string { return "Galera lab cluster" }

// StartGaleraCluster starts three Galera nodes on loopback, the group
// link plain; SetLink chooses it. On error nothing is left running, and
// the error quotes the log of the node that failed.
func StartGaleraCluster(ctx context.Context, o Options) (*GaleraCluster, error) {
	return startGalera(ctx, o, nil)
}

// galeraWANNode is the node of a WAN cluster in the other data centre.
const galeraWANNode = 2

// StartGaleraClusterWAN starts three Galera nodes as two data centres,
// the classic Galera WAN layout: nodes 1 and 2 on the server side of a
// delay link (its address, their own ports), node 3 in the link's
// namespace, so that every packet to or from node 3 pays the link's RTT
// and none between nodes 1 and 2 does. The RTT is 0 until SetLink sets
// it (cluster.Link.RTT). wan's Exe is the tlsbench whose forward command
// forwards the link's packets.
func StartGaleraClusterWAN(ctx context.Context, o Options, wan DelayLinkOptions) (*GaleraCluster, error) {
	wan.RTT = 0 // node 3's SST at the build is not what a run measures
	return startGalera(ctx, o, &wan)
}

// startGalera starts a cluster on loopback, or as two data centres across
// a delay link with wan's options.
func startGalera(ctx context.Context, o Options, wan *DelayLinkOptions) (_ *GaleraCluster, err error) {
	if _, err := os.Stat(galeraProvider); err != nil {
		return nil, fmt.Errorf("Galera lab cluster: %s is missing (install galera-4): %w", galeraProvider, ErrNotInstalled)
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		return nil, fmt.Errorf("Galera lab cluster: rsync, its state transfer, is not in PATH (install rsync): %w", ErrNotInstalled)
	}
	if len(o.Keys) == 0 || o.PlainOnly {
		return nil, errors.New("Galera lab cluster: the nodes need their certificates (keys, not plain only)")
	}
	c := &GaleraCluster{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if wan != nil {
		if c.wan, err = StartDelayLink(ctx, NewWireGuardNumber(), *wan); err != nil {
			return nil, fmt.Errorf("%s: node 3's link to the others (--rtt): %w", c.name(), err)
		}
	}
	var cas []byte
	for i := range galeraNames {
		no := o
		if c.wan != nil && i != galeraWANNode {
			// Its certificates name its address on the link, where it
			// listens too.
			no.Tunnel = c.wan.Prefix()
		}
		m, err := newMariaDB(no)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, m)
		if c.wan != nil && i == galeraWANNode {
			m.netns = c.wan.Netns()
		}
		m.role = "Galera " + galeraNames[i]
		// As root, a node runs as mysql: its SST's rsync daemon, as
		// root, would write as nobody, which cannot enter the lab dir.
		if m.runAs, err = serverUser("Galera", "mysql", "a Galera node's rsync SST cannot run as root", m.dir); err != nil {
			return nil, err
		}
		m.user, m.wsrep = "mysql", true
		if i > 0 {
			m.joiner = true
			if err := m.setPassword(c.Nodes[0].password); err != nil {
				return nil, err
			}
		}
		ports := make([]int, 3)
		for j := range ports {
			if ports[j], err = freePort(); err != nil {
				return nil, err
			}
		}
		c.gcomm, c.ist, c.sst = append(c.gcomm, ports[0]), append(c.ist, ports[1]), append(c.sst, ports[2])
		ca, err := os.ReadFile(m.CAFile())
		if err != nil {
			return nil, err
		}
		cas = append(cas, ca...)
	}
	// Each node's certificate is its own lab CA's: each trusts all three.
	for _, m := range c.Nodes {
		if err := os.WriteFile(galeraCAs(m.dir), cas, 0o600); err != nil {
			return nil, err
		}
	}
	c.logAt = make([]int64, len(c.Nodes))
	if err := c.start(ctx, cluster.Link{TLS: "off"}, true); err != nil {
		return nil, err
	}
	return c, nil
}

func galeraCAs(dir string) string { return filepath.Join(dir, "cluster-ca.crt") }

// galeraNodeName is node i's wsrep_node_name: node1, node2, node3.
func galeraNodeName(i int) string { return "node" + strconv.Itoa(i+1) }

// host is node i's address for the others' group, IST and SST
// connections: loopback, or across a WAN cluster's delay link (nodes 1
// and 2 on its server side, node 3 in its namespace).
func (c *GaleraCluster) host(i int) string {
	switch {
	case c.wan == nil:
		return "127.0.0.1"
	case i == galeraWANNode:
		return c.wan.ClientAddr()
	}
	return c.wan.ServerAddr()
}

// at is node i's host with port.
func (c *GaleraCluster) at(i, port int) string {
	return net.JoinHostPort(c.host(i), strconv.Itoa(port))
}

// args are node i's wsrep options for link l; node 1 bootstraps.
func (c *GaleraCluster) args(i int, l cluster.Link) []string {
	m := c.Nodes[i]
	var peers []string
	for j, p := range c.gcomm {
		peers = append(peers, c.at(j, p))
	}
	gcomm := strconv.Itoa(c.gcomm[i])
	opts := []string{"base_port=" + gcomm, "gmcast.listen_addr=tcp://" + c.at(i, c.gcomm[i]),
		"ist.recv_addr=" + c.at(i, c.ist[i]), "gcache.size=" + galeraGcache,
		// A node that cannot reach the others gives up in seconds.
		"pc.wait_prim_timeout=PT15S"}
	if l.TLS == "off" {
		opts = append(opts, "socket.ssl=NO")
	} else {
		opts = append(opts, "socket.ssl=YES", "socket.ssl_cert="+filepath.Join(m.dir, "server.crt"),
			"socket.ssl_key="+filepath.Join(m.dir, "server.key"), "socket.ssl_ca="+galeraCAs(m.dir))
	}
	args := []string{
		"--wsrep-on=ON", "--wsrep-provider=" + galeraProvider, "--wsrep-cluster-name=tlsbench",
		"--wsrep-cluster-address=gcomm://" + strings.Join(peers, ","),
		"--wsrep-node-name=" + galeraNodeName(i), "--wsrep-node-address=" + c.at(i, c.gcomm[i]),
		"--wsrep-node-incoming-address=" + m.addr(),
		"--wsrep-sst-method=rsync", "--wsrep-sst-receive-address=" + c.at(i, c.sst[i]),
		"--wsrep-provider-options=" + strings.Join(opts, ";"),
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2",
		"--innodb-buffer-pool-size=128M", // three on one machine
	}
	if i == 0 {
		args = append(args, "--wsrep-new-cluster")
	} else {
		// Node 1 gives the others their state, so that a timed
		// transfer's donor is the node whose CPU is its source's.
		args = append(args, "--wsrep-sst-donor="+galeraNodeName(0))
	}
	return args
}

// start starts the nodes with link l, in order, each waited for until it
// is synced in a cluster of all started so far, and checks the link: on
// the first start (build) node 1 gets its data dir, accounts and
// tlsbench's tables, and the others their state by SST.
func (c *GaleraCluster) start(ctx context.Context, l cluster.Link, build bool) error {
	for i := range c.Nodes {
		if err := c.startNode(ctx, i, l, build, i+1); err != nil {
			return err
		}
	}
	st, err := c.check(ctx, l)
	if err != nil {
		return err
	}
	c.link, c.shown = l, st
	return nil
}

// sstConf is node i's option file for link l: its rsync SST through
// stunnel with the node's certificate and the three CAs (ssl-mode
// VERIFY_CA: galera's peers are checked by their chain, not their name)
// for a TLS link, plain for a plain one. wsrep_sst_rsync reads it.
// Across the delay link the script's stunnel failed node 3's rejoin
// (the donor's "State transfer to 2.0 (node3) failed: Unknown error
// 255"): there the SST stays plain.
func (c *GaleraCluster) sstConf(i int, l cluster.Link) string {
	if !c.sstTunnel(l) {
		return "[sst]\nssl-mode = DISABLED\n"
	}
	m := c.Nodes[i]
	return "[sst]\ntca = " + galeraCAs(m.dir) + "\ntcert = " + filepath.Join(m.dir, "server.crt") +
		"\ntkey = " + filepath.Join(m.dir, "server.key") + "\nssl-mode = VERIFY_CA\n"
}

// sstTunnel reports whether an SST over link l goes through stunnel.
func (c *GaleraCluster) sstTunnel(l cluster.Link) bool { return l.TLS != "off" && c.wan == nil }

// startNode starts node i with link l and waits until it is synced in a
// primary component of size nodes; on a build, node 1 makes its data dir
// and tlsbench's tables, and a joiner waits for its state from an empty
// data dir.
func (c *GaleraCluster) startNode(ctx context.Context, i int, l cluster.Link, build bool, size int) error {
	m := c.Nodes[i]
	m.extra = c.args(i, l)
	conf := filepath.Join(m.dir, "openssl.cnf")
	m.env = []string{"OPENSSL_CONF=" + conf}
	pin := ""
	if l.TLS != "off" {
		pin = l.TLS
	}
	if err := os.WriteFile(conf, []byte(openSSLConf(pin)), 0o600); err != nil {
		return err
	}
	m.defaults = filepath.Join(m.dir, "sst.cnf")
	if err := os.WriteFile(m.defaults, []byte(c.sstConf(i, l)), 0o600); err != nil {
		return err
	}
	c.logAt[i] = c.logSize(i)
	var err error
	if build {
		err = m.boot(ctx)
	} else {
		err = m.launch(ctx)
	}
	if err != nil {
		if build && i > 0 {
			// A joiner that got no state knows little of why; its
			// donor's log says more.
			err = fmt.Errorf("%w\n(node 1, the donor of its state, logged:\n%s)", err, galeraTrouble(c.Nodes[0].logFile()))
		}
		return err
	}
	if build && i == 0 {
		if err := mariaDBExec(ctx, m.admin, c.name()+": tlsbench's tables", "", mariaDBClusterTables...); err != nil {
			return err
		}
	}
	return c.synced(ctx, i, size)
}

// galeraTrouble is the last lines of a node's log about errors and state
// transfers.
func galeraTrouble(path string) string {
	data, _ := os.ReadFile(path)
	var out []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "SST") || strings.Contains(l, "State transfer") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out[max(0, len(out)-logTail):], "\n")
}

// logFile is the node's error log, where galera writes too.
func (m *MariaDB) logFile() string { return filepath.Join(m.dir, "mariadbd.log") }

// synced waits until node i says it is ready and Synced in a primary
// component of size nodes.
func (c *GaleraCluster) synced(ctx context.Context, i, size int) error {
	m := c.Nodes[i]
	deadline := time.Now().Add(readyTimeout)
	for {
		if err := m.Alive(); err != nil {
			return err
		}
		st, err := mariaDBShow(ctx, m.admin, "SHOW GLOBAL STATUS LIKE 'wsrep_%'")
		state := fmt.Sprint(err)
		if err == nil {
			if st["wsrep_ready"] == "ON" && st["wsrep_local_state_comment"] == "Synced" && st["wsrep_cluster_size"] == strconv.Itoa(size) {
				return nil
			}
			state = fmt.Sprintf("wsrep_ready %s, %s, cluster size %s", st["wsrep_ready"], st["wsrep_local_state_comment"], st["wsrep_cluster_size"])
		}
		if time.Now().After(deadline) {
			return m.proc.failure(fmt.Sprintf("did not join the cluster within %v (%s)", readyTimeout, state))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mariaDBShow runs a SHOW of name/value rows (STATUS, VARIABLES) and
// returns them by name.
func mariaDBShow(ctx context.Context, db *sql.DB, q string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		out[name] = value
	}
	return out, rows.Err()
}

// galeraListenRE finds a node's group listener in its log:
// "... listening at ssl://127.0.0.1:4567".
var galeraListenRE = regexp.MustCompile(`listening at (ssl|tcp)://\S+`)

// galeraPeerRE finds a connection to another node in a node's log:
// "... connection established to 2b7f... ssl://127.0.0.1:4568".
var galeraPeerRE = regexp.MustCompile(`connection established to \S+ (ssl|tcp)://\S+`)

// check reads the group link from each node since it last started: its
// log's listener and peer connections (ssl:// or tcp://, all alike) and
// its socket.ssl, and for TLS, what a handshake with its group port
// gets; it fails where the nodes disagree with each other.
func (c *GaleraCluster) check(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	st := cluster.LinkState{SyncState: "sync", State: "synced"}
	for i, m := range c.Nodes {
		line, scheme, err := c.logScheme(i)
		if err != nil {
			return st, err
		}
		vars, err := mariaDBShow(ctx, m.admin, "SHOW GLOBAL VARIABLES LIKE 'wsrep_provider_options'")
		if err != nil {
			return st, fmt.Errorf("%s: wsrep_provider_options of %s: %w", c.name(), galeraNames[i], err)
		}
		ssl := strings.Contains(strings.ToLower(vars["wsrep_provider_options"]), "socket.ssl = yes")
		if ssl != (scheme == "ssl") {
			return st, fmt.Errorf("%s: %s has socket.ssl %v but its log says %q", c.name(), galeraNames[i], ssl, line)
		}
		enc := scheme == "ssl"
		if i > 0 && enc != st.Encrypted {
			return st, fmt.Errorf("%s: %s's group link is %s, node 1's is not: %q", c.name(), galeraNames[i], scheme, line)
		}
		st.Encrypted = enc
		if !enc {
			continue
		}
		cs, err := c.probe(ctx, i)
		if err != nil {
			return st, fmt.Errorf("%s: a TLS handshake with %s's group port: %w", c.name(), galeraNames[i], err)
		}
		v := tlsVersionName(cs.Version)
		if i > 0 && v != st.Version {
			return st, fmt.Errorf("%s: %s's group port answers %s, node 1's %s", c.name(), galeraNames[i], v, st.Version)
		}
		st.Version, st.Cipher = v, tls.CipherSuiteName(cs.CipherSuite)
	}
	return st, nil
}

func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	}
	return tls.VersionName(v)
}

// logScheme reads node i's log since it last started: the group
// listener's line and its scheme (ssl or tcp), which every peer
// connection it logged must share.
func (c *GaleraCluster) logScheme(i int) (line, scheme string, err error) {
	log, err := c.logSince(i, c.logAt[i])
	if err != nil {
		return "", "", err
	}
	m := galeraListenRE.FindStringSubmatch(log)
	if m == nil {
		return "", "", fmt.Errorf("%s: %s's log does not say where its group link listens (no %q line)", c.name(), galeraNames[i], "listening at")
	}
	for _, p := range galeraPeerRE.FindAllStringSubmatch(log, -1) {
		if p[1] != m[1] {
			return "", "", fmt.Errorf("%s: %s listens at %s:// but logged %q", c.name(), galeraNames[i], m[1], p[0])
		}
	}
	return logLine(log, m[0]), m[1], nil
}

// logSince is node i's log from byte at on (at most 16 MiB of it).
func (c *GaleraCluster) logSince(i int, at int64) (string, error) {
	f, err := os.Open(c.Nodes[i].logFile())
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	return string(data), err
}

// logSize is how long node i's log is now: where what it logs next
// begins.
func (c *GaleraCluster) logSize(i int) int64 {
	fi, err := os.Stat(c.Nodes[i].logFile())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logLine is the whole line of log that holds match, trimmed; match
// itself if none does.
func logLine(log, match string) string {
	for l := range strings.SplitSeq(log, "\n") {
		if strings.Contains(l, match) {
			return strings.TrimSpace(l)
		}
	}
	return match
}

// probe makes a TLS handshake with node i's group port as a peer that
// offers TLS 1.2 and 1.3 (with the node's own certificate, should it ask
// for one): the version the node's OpenSSL settles on with its peers,
// which offer what it offers.
func (c *GaleraCluster) probe(ctx context.Context, i int) (tls.ConnectionState, error) {
	m := c.Nodes[i]
	cert, err := tls.LoadX509KeyPair(filepath.Join(m.dir, "server.crt"), filepath.Join(m.dir, "server.key"))
	if err != nil {
		return tls.ConnectionState{}, err
	}
	cas, err := os.ReadFile(galeraCAs(m.dir))
	if err != nil {
		return tls.ConnectionState{}, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cas)
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(cctx, "tcp", c.at(i, c.gcomm[i]))
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState(), nil
}

// SetLink makes the nodes' group link l: a new link (TLS or key) restarts
// the cluster (see restart); then the link is read and verified.
func (c *GaleraCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	switch {
	case l.Sync != "" && l.Sync != "galera":
		return cluster.LinkState{}, errors.New("Galera lab cluster: a Galera cluster commits one way (certified by every node): drop --sync")
	case l.Addr != "":
		return cluster.LinkState{}, errors.New("Galera lab cluster: a relay cannot delay the group links (every node dials every other): node 3 goes behind a delay link instead (StartGaleraClusterWAN)")
	case l.RTT > 0 && c.wan == nil:
		return cluster.LinkState{}, fmt.Errorf("%s: %v of RTT asked of a cluster on loopback: start it with node 3 behind a delay link (StartGaleraClusterWAN)", c.name(), l.RTT)
	}
	if l.TLS != c.link.TLS || l.TLS != "off" && l.Key != "" && l.Key != c.link.Key {
		if err := c.restart(ctx, l); err != nil {
			return cluster.LinkState{}, err
		}
	}
	// Packets sent from now on pay the new RTT: no restart.
	if c.wan != nil && c.wan.RTT() != l.RTT {
		if err := c.wan.SetRTT(ctx, l.RTT); err != nil {
			return cluster.LinkState{}, fmt.Errorf("%s: node 3's link: %w", c.name(), err)
		}
	}
	st, err := c.LinkState(ctx)
	if err == nil && st.State != "synced" {
		err = fmt.Errorf("%s: not synced: %s", c.name(), st.State)
	}
	if err != nil {
		return st, err
	}
	return st, l.Verify(st)
}

// restart stops every node cleanly (3, 2, then 1, which thus may
// bootstrap again) and starts the cluster with link l and its key.
func (c *GaleraCluster) restart(ctx context.Context, l cluster.Link) error {
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		if err := c.Nodes[i].proc.stopWithin(0, galeraStopGrace); err != nil {
			return fmt.Errorf("%s: stopping %s for a new link: %w", c.name(), galeraNames[i], err)
		}
	}
	if l.TLS != "off" && l.Key != "" {
		for _, m := range c.Nodes {
			if err := m.presentKey(l.Key); err != nil {
				return err
			}
		}
	}
	// Node 1 stopped last, with every write: galera marks it safe to
	// bootstrap from, which a stop that was not clean would not.
	grastate := filepath.Join(c.Nodes[0].dir, "data", "grastate.dat")
	data, err := os.ReadFile(grastate)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), "safe_to_bootstrap: 1") {
		return fmt.Errorf("%s: node 1 is not safe to bootstrap from after a clean stop; its grastate.dat:\n%s", c.name(), data)
	}
	return c.start(ctx, l, false)
}

// LinkState reads the cluster from node 1 (written) and node 2 (read):
// their wsrep state, the bytes node 1 replicated, node 2's receive queue
// and the time flow control paused node 1; the link as checked when the
// nodes started with it.
func (c *GaleraCluster) LinkState(ctx context.Context) (cluster.LinkState, error) {
	st := c.shown
	var s [2]map[string]string
	for i := range s {
		var err error
		if s[i], err = mariaDBShow(ctx, c.Nodes[i].admin, "SHOW GLOBAL STATUS LIKE 'wsrep_%'"); err != nil {
			return st, fmt.Errorf("%s: wsrep status of %s: %w", c.name(), galeraNames[i], err)
		}
	}
	size := strconv.Itoa(len(c.Nodes))
	st.State = "synced"
	if s[0]["wsrep_local_state_comment"] != "Synced" || s[1]["wsrep_local_state_comment"] != "Synced" || s[0]["wsrep_cluster_size"] != size {
		st.State = fmt.Sprintf("node 1 %s, node 2 %s, cluster size %s", s[0]["wsrep_local_state_comment"], s[1]["wsrep_local_state_comment"], s[0]["wsrep_cluster_size"])
	}
	st.Sent, _ = strconv.ParseInt(s[0]["wsrep_replicated_bytes"], 10, 64)
	st.Queue, _ = strconv.ParseInt(s[1]["wsrep_local_recv_queue"], 10, 64)
	ns, _ := strconv.ParseInt(s[0]["wsrep_flow_control_paused_ns"], 10, 64)
	st.Paused = time.Duration(ns)
	return st, nil
}

// PrimaryAddr is node 1's mysqld address.
func (c *GaleraCluster) PrimaryAddr() string { return c.Nodes[0].addr() }

// OpenPrimary opens a session on node 1, which the writes go to.
func (c *GaleraCluster) OpenPrimary(ctx context.Context, useTLS bool) (cluster.Conn, error) {
	return openMariaDBConn(ctx, c.Nodes[0], useTLS)
}

// OpenReplica opens a plain session on node 2, which reads the heartbeat.
func (c *GaleraCluster) OpenReplica(ctx context.Context) (cluster.Conn, error) {
	return openMariaDBConn(ctx, c.Nodes[1], false)
}

// running are the nodes started so far.
func (c *GaleraCluster) running() []*labBase {
	var out []*labBase
	for _, m := range c.Nodes {
		if m.proc != nil {
			out = append(out, &m.labBase)
		}
	}
	return out
}

// PIDs are the nodes' mariadbd processes now, node 1's first: a test
// kills one.
func (c *GaleraCluster) PIDs() []int {
	var out []int
	for _, m := range c.Nodes {
		if m.proc != nil {
			out = append(out, m.proc.cmd.Process.Pid)
		}
	}
	return out
}

// CPU is each node's CPU time so far, node 1's first.
func (c *GaleraCluster) CPU() ([]time.Duration, error) {
	return nodesCPU(galeraNames, c.running()...)
}

// Alive reports why a node is gone, if one is.
func (c *GaleraCluster) Alive() error { return nodesAlive(galeraNames, c.running()...) }

// Info describes the nodes for the result.
func (c *GaleraCluster) Info() []result.Server {
	var out []result.Server
	for i, m := range c.Nodes {
		s := m.Info()
		s.Lab = galeraNames[i] + []string{" (written)", " (read)", ""}[i]
		if c.wan != nil && i == galeraWANNode {
			s.Lab += " (the other data centre, behind the delay link)"
		}
		s.Settings["wsrep"] = "galera-4 (" + galeraProvider + "), wsrep_sst_method rsync (node 1 the donor; through stunnel with the node's certificate on a TLS link), gcache.size " + galeraGcache + "; per variant wsrep_provider_options socket.ssl=NO, or socket.ssl=YES with the node's certificate and the three nodes' CAs, the TLS version pinned by the node's OPENSSL_CONF (MinProtocol = MaxProtocol)"
		out = append(out, s)
	}
	return out
}

// Notes are what a reader of a Galera cluster's figures needs.
func (c *GaleraCluster) Notes() []string {
	where := "3 nodes on loopback"
	if c.wan != nil {
		where = "3 nodes in two data centres"
	}
	out := append(slices.Clone(c.Nodes[0].Notes()),
		"Galera: "+where+", writes on node 1, the heartbeat read on node 2; nodes 2 and 3 got their state from node 1 by SST (wsrep_sst_method = rsync, plain: the cluster starts with a plain link) when the cluster was built; socket.ssl covers the group link and IST only, so on a TLS link an SST goes through stunnel (the node's option file's [sst] tca, tcert and tkey, ssl-mode VERIFY_CA), except across --rtt's delay link, where that failed node 3's rejoin and the SST stays plain; gcache.size "+galeraGcache+", which holds --resync's IST",
		"Galera: socket.ssl is read at start only, so each change of the group link restarts the cluster (nodes 3, 2, 1 stopped cleanly, node 1 bootstrapped again, the others rejoining without a transfer); each variant's first trial follows a restart",
		"Galera: galera-4 26.4 neither sets nor reports a TLS version (socket.ssl_cipher is TLS 1.2's cipher list): each node's OPENSSL_CONF pins it (MinProtocol = MaxProtocol), which pins its mysqld's client TLS too, and a TLS handshake of tlsbench's with each node's group port checks it; each node's log shows its group link listening at ssl:// (TLS) or tcp:// (plain), with every peer alike",
		"Galera: the servers' own view is node 2's wsrep_local_recv_queue (writes received, not applied) and node 1's wsrep_flow_control_paused_ns; a commit answers once every node has certified it, not applied it: the heartbeat's lag is node 2's applying")
	if c.wan != nil {
		out = append(out, "Galera --rtt: two nodes in one data centre, the third in another, the classic Galera WAN layout: nodes 1 and 2 on the server side of a delay link (its address "+c.wan.ServerAddr()+", their own ports), node 3 in the link's namespace ("+c.wan.ClientAddr()+"), so that every group, IST and SST packet to or from node 3 pays the RTT and none between nodes 1 and 2 does; each write's commit waits for its total order across all three nodes, node 3 included, and so for the RTT; the heartbeat's lag is node 2's, in node 1's data centre; the certificates of nodes 1 and 2 name their address on the link, node 3's loopback only: galera-4 verifies a peer's chain (socket.ssl_ca), not its name; "+c.wan.Note())
	}
	return out
}

// DelaysLinks reports whether the cluster delays its own group links
// (node 3 behind a delay link), by cluster.Link.RTT: a relay cannot,
// every node dialing every other.
func (c *GaleraCluster) DelaysLinks() bool { return c.wan != nil }

// Stop stops the nodes, 3 first, and removes their dirs.
func (c *GaleraCluster) Stop() error {
	var errs []error
	for _, m := range slices.Backward(c.Nodes) {
		errs = append(errs, m.Stop())
	}
	if c.wan != nil {
		errs = append(errs, c.wan.Stop())
	}
	return errors.Join(errs...)
}
