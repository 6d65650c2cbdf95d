package lab

import (
	"cmp"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
)

// TestGaleraCluster: one cluster of three nodes, for these in order.
func TestGaleraCluster(t *testing.T) {
	slow(t)
	c, err := StartGaleraCluster(context.Background(), Options{Keys: []string{"ecdsa-p256"}})
	needInstalled(t, err)
	t.Cleanup(func() { c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// A heartbeat written on node 1 shows on node 2 and node 3 over the
	// plain group link, then TLS 1.3 and TLS 1.2 (a restart each), each
	// as every node's log and group port show it; node 1's replicated
	// bytes count the writes.
	t.Run("replicates", func(t *testing.T) {
		for i, l := range []cluster.Link{{TLS: "off"}, {TLS: "1.3", Key: "ecdsa-p256"}, {TLS: "1.2", Key: "ecdsa-p256"}} {
			st, err := c.SetLink(ctx, l)
			if err != nil {
				t.Fatalf("%+v: %v", l, err)
			}
			if st.Encrypted != (l.TLS != "off") || l.TLS != "off" && st.Version != "TLSv"+l.TLS || st.State != "synced" || st.SyncState != "sync" {
				t.Errorf("%+v: the link shows encrypted=%v %q %s, state %q %q", l, st.Encrypted, st.Version, st.Cipher, st.State, st.SyncState)
			}
			line, scheme, err := c.logScheme(1)
			t.Logf("%+v: %s %s; node 2 logged %q", l, cmp.Or(st.Version, "plain"), st.Cipher, line)
			if want := map[bool]string{false: "tcp", true: "ssl"}[l.TLS != "off"]; err != nil || scheme != want {
				t.Errorf("%+v: node 2's log says %s:// (%v), want %s://", l, scheme, err, want)
			}
			w, err := c.OpenPrimary(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.Nodes[1:] {
				r, err := openMariaDBConn(ctx, n, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := seesBeat(ctx, w, r, int64(i+1)); err != nil {
					t.Errorf("%+v, %s: %v", l, n.role, err)
				}
				r.Close()
			}
			w.Close()
			after, err := c.LinkState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if after.Sent <= st.Sent {
				t.Errorf("%+v: node 1 replicated %d bytes, then %d: want more", l, st.Sent, after.Sent)
			}
		}
		cpu, err := c.CPU()
		if err != nil || len(cpu) != 3 || cpu[2] <= 0 {
			t.Errorf("CPU %v (%v), want all three nodes'", cpu, err)
		}
	})

	// An IST after writes is an IST, over the link's TLS (node 1 serving
	// it over ssl://) or plain (tcp://), and node 3 reads the rows written
	// while it was down; an SST after its data dir is gone is a whole
	// copy with the same rows.
	t.Run("state transfers", func(t *testing.T) {
		rows := func() int64 {
			var n int64
			if err := c.Nodes[2].admin.QueryRowContext(ctx, "SELECT count(*) FROM "+mariaDBDatabase+"."+galeraFillTable).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, l := range []cluster.Link{{TLS: "1.2", Key: "ecdsa-p256"}, {TLS: "off"}} {
			rs, err := c.Resync(ctx, l)
			if err != nil {
				t.Fatalf("%+v: %v", l, err)
			}
			t.Logf("%+v: %s %d bytes in %v (%.1f MB/s), donor %v, joiner %v; %s", l, rs.Transfer, rs.Bytes, rs.Elapsed, rs.MBPerSec(), rs.SourceCPU, rs.DestCPU, rs.Shown)
			if rs.Transfer != "IST" || rs.Encrypted != (l.TLS != "off") || rs.Bytes < galeraFillBytes || rs.SourceCPU <= 0 || rs.DestCPU <= 0 {
				t.Errorf("%+v: the IST shows %+v", l, rs)
			}
			if n := rows(); n != galeraFillRows {
				t.Errorf("%+v: node 3 reads %d rows after its IST, node 1 wrote %d", l, n, galeraFillRows)
			}
			if l.TLS == "off" {
				continue // one SST is enough: it is plain whatever the link
			}
			rs, err = c.FullResync(ctx, l)
			if err != nil {
				t.Fatalf("%+v: %v", l, err)
			}
			t.Logf("%+v: %s %d bytes in %v (%.1f MB/s), donor %v, joiner %v; %s", l, rs.Transfer, rs.Bytes, rs.Elapsed, rs.MBPerSec(), rs.SourceCPU, rs.DestCPU, rs.Shown)
			if rs.Transfer != "SST" || rs.Encrypted || rs.Bytes < galeraFillBytes || rs.DestCPU <= 0 {
				t.Errorf("%+v: the SST shows %+v", l, rs)
			}
		}
	})

	// A node that cannot join (its group link plain, the others' TLS,
	// or the other way round) fails with its log quoted, naming it; Stop
	// then leaves no process.
	t.Run("cannot join", func(t *testing.T) {
		n := c.Nodes[2]
		if err := n.proc.stopWithin(0, galeraStopGrace); err != nil {
			t.Fatal(err)
		}
		unlike := cluster.Link{TLS: "off"}
		if c.link.TLS == "off" {
			unlike = cluster.Link{TLS: "1.3"}
		}
		n.extra = c.args(2, unlike)
		start := time.Now()
		err := n.launch(ctx)
		if err == nil {
			err = c.synced(ctx, 2, 3)
		}
		t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
		first, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
		if !strings.Contains(first, "Galera node 3") || !strings.Contains(first, "its log ends:") || !strings.Contains(rest, "WSREP") {
			t.Errorf("the error does not name node 3 and quote its log:\n%v", err)
		}
		pids := c.PIDs()
		if err := c.Stop(); err != nil && !strings.Contains(err.Error(), "exited by itself") {
			t.Errorf("stop: %v", err)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("process %d is still there after Stop", pid)
			}
		}
		for _, m := range c.Nodes {
			if _, err := os.Stat(m.dir); err == nil {
				t.Errorf("%s's dir is still there after Stop", m.role)
			}
		}
	})
}
