package lab

import (
	"cmp"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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
	// copy with the same rows, through stunnel on a TLS link.
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
				continue // one SST is enough: a plain one is the build's
			}
			rs, err = c.FullResync(ctx, l)
			if err != nil {
				t.Fatalf("%+v: %v", l, err)
			}
			t.Logf("%+v: %s %d bytes in %v (%.1f MB/s), donor %v, joiner %v; %s", l, rs.Transfer, rs.Bytes, rs.Elapsed, rs.MBPerSec(), rs.SourceCPU, rs.DestCPU, rs.Shown)
			if rs.Transfer != "SST" || rs.Encrypted != (l.TLS != "off") || rs.Bytes < galeraFillBytes || rs.DestCPU <= 0 {
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

// TestGaleraWAN: node 3 behind a delay link, nodes 1 and 2 beside each
// other. The kernel's RTT on nodes 1 and 2's connections to node 3 is the
// link's, on theirs with each other it is not, and a write on node 1
// waits for it (its commit is ordered across node 3), with the group link
// plain and TLS 1.3, verified as on loopback; setting the RTT to 0 needs
// no restart; Stop leaves no process, namespace or device.
func TestGaleraWAN(t *testing.T) {
	slow(t)
	needLink(t)
	c, err := StartGaleraClusterWAN(context.Background(), Options{Keys: []string{"ecdsa-p256"}}, DelayLinkOptions{Exe: tlsbenchExe})
	needInstalled(t, err)
	t.Cleanup(func() { c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// Far above what a loaded machine's scheduling adds to loopback's
	// round trips (up to 20 ms seen at a load of 15), so that the upper
	// bounds below hold beside stress-ng.
	const rtt = 120 * time.Millisecond
	write := func() time.Duration {
		w, err := c.OpenPrimary(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		best := time.Hour
		for range 5 {
			start := time.Now()
			if err := w.Write(ctx); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	for _, l := range []cluster.Link{{TLS: "off", RTT: rtt}, {TLS: "1.3", Key: "ecdsa-p256", RTT: rtt}} {
		st, err := c.SetLink(ctx, l)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if st.Encrypted != (l.TLS != "off") || l.TLS != "off" && st.Version != "TLSv"+l.TLS {
			t.Errorf("%+v: the link shows encrypted=%v %q", l, st.Encrypted, st.Version)
		}
		// The kernel's estimate of a connection made before the RTT
		// was set follows it as packets cross: writes, for up to 30 s.
		var far, near []time.Duration
		var took time.Duration
		for deadline := time.Now().Add(30 * time.Second); ; {
			took = write()
			far, near = galeraKernelRTTs(t, c)
			if time.Now().After(deadline) || len(far) > 0 && slices.Min(far) >= rtt*9/10 {
				break
			}
		}
		t.Logf("%+v: kernel RTTs to node 3 %v, between nodes 1 and 2 %v; a write's commit at best %v", l, far, near, took)
		if len(far) == 0 || len(near) == 0 {
			t.Fatalf("%+v: no group connections to node 3 (%v) or between nodes 1 and 2 (%v)", l, far, near)
		}
		for _, d := range far {
			if d < rtt*9/10 {
				t.Errorf("%+v: a connection to node 3 has a kernel RTT of %v, below the link's %v", l, d, rtt)
			}
		}
		for _, d := range near {
			// Loopback's, with a loaded machine's scheduling: well
			// below the link's.
			if d >= rtt/2 {
				t.Errorf("%+v: a connection between nodes 1 and 2 has a kernel RTT of %v: they are not beside each other", l, d)
			}
		}
		if took < rtt*9/10 {
			t.Errorf("%+v: a write committed in %v, faster than the round trip to node 3 (%v)", l, took, rtt)
		}
	}
	pids := c.PIDs()
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "1.3", Key: "ecdsa-p256"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pids, c.PIDs()) {
		t.Errorf("a new RTT restarted the nodes: %v, then %v", pids, c.PIDs())
	}
	if took := write(); took >= rtt {
		t.Errorf("with the RTT 0, the best of 5 writes took %v", took)
	}
	netns, dev := c.wan.Netns(), c.wan.Device()
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d is still there after Stop", pid)
		}
	}
	if _, err := os.Stat(netns); err == nil {
		t.Errorf("namespace %s left behind", netns)
	}
	if _, err := net.InterfaceByName(dev); err == nil {
		t.Errorf("device %s left behind", dev)
	}
}

// ssRTTRE finds a socket's smoothed RTT in ss -i's output: "rtt:44.1/0.3".
var ssRTTRE = regexp.MustCompile(`\brtt:([0-9.]+)/`)

// galeraKernelRTTs are the kernel's RTTs (ss -ti) of the established TCP
// connections of nodes 1 and 2 (from the link's server address): to node
// 3 (far) and with each other (near).
func galeraKernelRTTs(t *testing.T, c *GaleraCluster) (far, near []time.Duration) {
	t.Helper()
	out, err := exec.Command("ss", "-tinH", "state", "established", "src", c.wan.ServerAddr()).CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v: %s", err, out)
	}
	var peer string
	for l := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			peer = f[3]
			continue
		}
		m := ssRTTRE.FindStringSubmatch(l)
		if m == nil || peer == "" {
			continue
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		d := time.Duration(ms * float64(time.Millisecond))
		host, _, _ := net.SplitHostPort(peer)
		switch host {
		case c.wan.ClientAddr():
			far = append(far, d)
		case c.wan.ServerAddr():
			near = append(near, d)
		}
		peer = ""
	}
	return far, near
}
