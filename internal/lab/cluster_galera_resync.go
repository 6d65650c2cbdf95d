package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A Galera cluster's state transfers, timed (replicate --resync), node 1
// the donor and node 3 the joiner: an IST, the writesets node 3 missed
// while it was stopped, sent from node 1's gcache over a connection made
// with the group link's socket.ssl; and an SST, node 3's whole state
// copied by rsync (wsrep_sst_method), which socket.ssl does not cover:
// wsrep_sst_rsync wraps it in stunnel where the node's option file's
// [sst] section names its certificates (sstConf), on a TLS link.

const (
	// galeraGcache is each node's gcache.size: it holds the IST's
	// writesets (galeraFillBytes) with room; a smaller one would have
	// dropped the first of them, and node 3 would need an SST.
	galeraGcache = "256M"
	// The IST's data: galeraFillBytes of random rows of galeraFillRow
	// bytes, galeraFillBatch rows (1 MiB) a transaction, written on
	// node 1 while node 3 is stopped, within galeraFillTimeout.
	galeraFillTable   = "tlsbench_fill"
	galeraFillBytes   = 64 << 20
	galeraFillRow     = 4096
	galeraFillBatch   = 256
	galeraFillTimeout = 5 * time.Minute
)

// galeraFillRows is how many rows the IST's fill writes.
const galeraFillRows = galeraFillBytes / galeraFillRow

// galeraISTRecvRE finds the writesets a joiner received by IST in its
// log: "... Receiving IST: 64 writesets, seqnos 12-75".
var galeraISTRecvRE = regexp.MustCompile(`Receiving IST: +(\d+) writesets`)

// galeraISTServeRE finds the donor's IST sender and the scheme it
// connects with: "... async IST sender starting to serve ssl://...".
var galeraISTServeRE = regexp.MustCompile(`async IST sender starting to serve (ssl|tcp)://\S+`)

// galeraSSTLines are what a joiner's log says of an SST it received, the
// most telling first.
var galeraSSTLines = []string{"SST received", "SST succeeded", "Prepared SST request"}

// galeraSSTStunnel is what wsrep_sst_rsync logs when it wraps rsync in
// stunnel (the [sst] section's certificates).
const galeraSSTStunnel = "Using stunnel for SSL encryption"

// Resync times an IST over link l (the cluster restarted with it first,
// if it was another): the fill table emptied, node 3 stopped cleanly,
// galeraFillBytes written on node 1, node 3 started again and timed from
// its start until it is synced. Both ends' logs must show an IST of the
// link's kind: node 3 receiving writesets, node 1 serving them over
// ssl:// (TLS) or tcp:// (plain); anything else is an error. Bytes are
// node 1's wsrep_replicated_bytes over the fill: the writesets the IST
// carries, before TLS's framing.
func (c *GaleraCluster) Resync(ctx context.Context, l cluster.Link) (result.Resync, error) {
	if _, err := c.SetLink(ctx, l); err != nil {
		return result.Resync{}, err
	}
	donor, joiner := c.Nodes[0], c.Nodes[2]
	fill := mariaDBDatabase + "." + galeraFillTable
	if err := mariaDBExec(ctx, donor.admin, c.name()+": the IST's table", "",
		"CREATE TABLE IF NOT EXISTS "+fill+" (id int PRIMARY KEY, pad varbinary("+strconv.Itoa(galeraFillRow)+") NOT NULL) ENGINE=InnoDB",
		"TRUNCATE TABLE "+fill); err != nil {
		return result.Resync{}, err
	}
	donorAt := c.logSize(0)
	if err := joiner.proc.stopWithin(0, galeraStopGrace); err != nil {
		return result.Resync{}, fmt.Errorf("%s: stopping node 3 for an IST: %w", c.name(), err)
	}
	sent0, err := c.replicatedBytes(ctx)
	if err != nil {
		return result.Resync{}, err
	}
	if err := c.fill(ctx); err != nil {
		return result.Resync{}, fmt.Errorf("%s: writing the IST's %d MiB on node 1: %w", c.name(), galeraFillBytes>>20, err)
	}
	sent1, err := c.replicatedBytes(ctx)
	if err != nil {
		return result.Resync{}, err
	}
	rs, joined, err := c.rejoin(ctx, l)
	if err != nil {
		return result.Resync{}, err
	}
	served, err := c.logSince(0, donorAt)
	if err != nil {
		return result.Resync{}, err
	}
	got := galeraISTRecvRE.FindStringSubmatch(joined)
	if got == nil {
		return result.Resync{}, fmt.Errorf("%s: node 3 rejoined without an IST (its log has no %q line); its log:\n%s", c.name(), "Receiving IST", galeraTrouble(joiner.logFile()))
	}
	if n, _ := strconv.Atoi(got[1]); n < galeraFillRows/galeraFillBatch {
		return result.Resync{}, fmt.Errorf("%s: node 3's IST carried %d writesets, fewer than the %d transactions it missed: %q", c.name(), n, galeraFillRows/galeraFillBatch, logLine(joined, got[0]))
	}
	sender := galeraISTServeRE.FindStringSubmatch(served)
	if sender == nil {
		return result.Resync{}, fmt.Errorf("%s: node 1 logged no IST sender for node 3 (no %q line); its log:\n%s", c.name(), "async IST sender starting to serve", galeraTrouble(donor.logFile()))
	}
	if want := map[bool]string{false: "tcp", true: "ssl"}[l.TLS != "off"]; sender[1] != want {
		return result.Resync{}, fmt.Errorf("%s: asked for an IST over %s, node 1 served it over %s://: %q", c.name(), linkName(l), sender[1], logLine(served, sender[0]))
	}
	rs.Transfer, rs.Encrypted, rs.Bytes = "IST", sender[1] == "ssl", sent1-sent0
	rs.Method = fmt.Sprintf("Galera IST of %s writesets (%d MiB of rows written on node 1 while node 3 was stopped) from node 1's gcache (gcache.size %s) over a connection with the group link's socket.ssl; timed from node 3's start to Synced; bytes: node 1's wsrep_replicated_bytes over the writes",
		got[1], galeraFillBytes>>20, galeraGcache)
	rs.Shown = "node 3: " + logLine(joined, got[0]) + "; node 1: " + logLine(served, sender[0])
	return rs, nil
}

// FullResync times an SST over link l, after Resync: node 3 stopped, its
// data dir removed, started again, which galera can bring up to date by
// nothing but a whole copy from node 1 (rsync: through stunnel on a TLS
// link, as node 3's log must say, plain on a plain one or across a delay
// link, see sstConf); timed from its
// start until it is synced, it must then hold the rows the IST's fill
// wrote. Bytes are node 3's data dir after the copy, without galera's
// own files.
func (c *GaleraCluster) FullResync(ctx context.Context, l cluster.Link) (result.Resync, error) {
	joiner := c.Nodes[2]
	if err := joiner.proc.stopWithin(0, galeraStopGrace); err != nil {
		return result.Resync{}, fmt.Errorf("%s: stopping node 3 for an SST: %w", c.name(), err)
	}
	data := filepath.Join(joiner.dir, "data")
	if err := errors.Join(os.RemoveAll(data), os.MkdirAll(data, 0o700)); err != nil {
		return result.Resync{}, err
	}
	rs, joined, err := c.rejoin(ctx, l)
	if err != nil {
		return result.Resync{}, err
	}
	if m := galeraISTRecvRE.FindStringSubmatch(joined); m != nil && m[1] != "0" {
		// Not a whole copy: galera found a state to add to.
		return result.Resync{}, fmt.Errorf("%s: node 3, its data dir removed, got an IST, not an SST: %q", c.name(), logLine(joined, m[0]))
	}
	var rows int64
	if err := joiner.admin.QueryRowContext(ctx, "SELECT count(*) FROM "+mariaDBDatabase+"."+galeraFillTable).Scan(&rows); err != nil {
		return result.Resync{}, fmt.Errorf("%s: node 3 after its SST: %w", c.name(), err)
	}
	if rows != galeraFillRows {
		return result.Resync{}, fmt.Errorf("%s: node 3 after its SST holds %d rows of the fill, node 1 wrote %d", c.name(), rows, galeraFillRows)
	}
	if rs.Bytes, err = galeraStateSize(data); err != nil {
		return result.Resync{}, err
	}
	for _, m := range galeraSSTLines {
		if strings.Contains(joined, m) {
			rs.Shown = "node 3: " + logLine(joined, m)
			break
		}
	}
	if rs.Shown == "" {
		return result.Resync{}, fmt.Errorf("%s: node 3, its data dir removed, rejoined, but its log shows no SST (none of %q); its log:\n%s", c.name(), galeraSSTLines, galeraTrouble(joiner.logFile()))
	}
	// The SST script says so when it wraps rsync in stunnel.
	tunnel := strings.Contains(joined, galeraSSTStunnel)
	if tunnel != c.sstTunnel(l) {
		return result.Resync{}, fmt.Errorf("%s: asked for an SST over %s, node 3's SST script %s %q", c.name(), linkName(l), map[bool]string{false: "did not log", true: "logged"}[tunnel], galeraSSTStunnel)
	}
	if tunnel {
		rs.Shown += "; " + logLine(joined, galeraSSTStunnel)
	}
	rs.Transfer, rs.Encrypted = "SST", tunnel
	rs.Method = "Galera SST by rsync (wsrep_sst_method rsync), through stunnel over a TLS link ([sst] tca, tcert, tkey, ssl-mode VERIFY_CA: the nodes' certificates), plain over a plain one, of node 1's whole data dir to node 3's, removed; timed from node 3's start to Synced; bytes: node 3's data dir after it, without galera.cache"
	return rs, nil
}

// rejoin starts node 3, stopped, with link l and times it until it is
// synced in the whole cluster: the elapsed time, node 1's CPU over it (the
// donor's) and node 3's since its start (the joiner's, with the SST
// script and rsync it runs), and what node 3 logged meanwhile.
func (c *GaleraCluster) rejoin(ctx context.Context, l cluster.Link) (result.Resync, string, error) {
	donor, joiner := c.Nodes[0], c.Nodes[2]
	cpu0, err := donor.CPU()
	if err != nil {
		return result.Resync{}, "", fmt.Errorf("node 1: %w", err)
	}
	start := time.Now()
	if err := c.startNode(ctx, 2, l, false, len(c.Nodes)); err != nil {
		return result.Resync{}, "", err
	}
	elapsed := time.Since(start)
	cpu1, err := donor.CPU()
	if err != nil {
		return result.Resync{}, "", fmt.Errorf("node 1: %w", err)
	}
	dest, err := joiner.CPU()
	if err != nil {
		return result.Resync{}, "", fmt.Errorf("node 3: %w", err)
	}
	log, err := c.logSince(2, c.logAt[2])
	return result.Resync{Elapsed: elapsed, SourceCPU: cpu1 - cpu0, DestCPU: dest}, log, err
}

// fill writes galeraFillRows random rows on node 1, galeraFillBatch a
// transaction, within galeraFillTimeout.
func (c *GaleraCluster) fill(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, galeraFillTimeout)
	defer cancel()
	conn, err := c.Nodes[0].admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	q := "INSERT INTO " + mariaDBDatabase + "." + galeraFillTable + " (id, pad) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?),", galeraFillBatch), ",")
	stmt, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer stmt.Close()
	// Random bytes: the writesets are not compressed, but a reader of
	// the figure should not have to know that.
	rng := rand.New(rand.NewPCG(3, 4))
	args := make([]any, 0, 2*galeraFillBatch)
	for id := 0; id < galeraFillRows; {
		args = args[:0]
		for range galeraFillBatch {
			pad := make([]byte, galeraFillRow)
			for j := 0; j < len(pad); j += 8 {
				v := rng.Uint64()
				for k := range 8 {
					pad[j+k] = byte(v >> (8 * k))
				}
			}
			args = append(args, id, pad)
			id++
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// replicatedBytes is node 1's wsrep_replicated_bytes now.
func (c *GaleraCluster) replicatedBytes(ctx context.Context) (int64, error) {
	st, err := mariaDBShow(ctx, c.Nodes[0].admin, "SHOW GLOBAL STATUS LIKE 'wsrep_replicated_bytes'")
	if err != nil {
		return 0, fmt.Errorf("%s: node 1's wsrep_replicated_bytes: %w", c.name(), err)
	}
	return strconv.ParseInt(st["wsrep_replicated_bytes"], 10, 64)
}

// galeraStateSize is the bytes of a node's data dir without galera's own
// files (its gcache and state files), which no SST copies.
func galeraStateSize(data string) (int64, error) {
	all, err := dirSize(data)
	if err != nil {
		return 0, err
	}
	for _, f := range []string{"galera.cache", "grastate.dat", "gvwstate.dat"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err == nil {
			all -= fi.Size()
		}
	}
	return all, nil
}

// linkName names link l in messages: "TLS 1.3", "plain".
func linkName(l cluster.Link) string {
	if l.TLS == "off" {
		return "plain"
	}
	return "TLS " + l.TLS
}
