package lab

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
)

// seesBeat writes a row and heartbeat seq on w and waits, up to 20 s,
// until r shows seq.
func seesBeat(ctx context.Context, w, r cluster.Conn, seq int64) error {
	if err := w.Write(ctx); err != nil {
		return err
	}
	if err := w.Beat(ctx, seq); err != nil {
		return err
	}
	var got int64
	err := pgPollFor(ctx, 20*time.Second, func() error {
		var err error
		got, err = r.Seen(ctx)
		if err == nil && got != seq {
			err = fmt.Errorf("it shows %d", got)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat %d not seen: %w", seq, err)
	}
	return nil
}

// TestMariaDBClusterReplicates: the replica, made from a timed snapshot
// of the primary, shows a heartbeat written on the primary over each
// link, which the primary's performance_schema shows as asked: plain, or
// TLS of the asked version (1.2 and 1.3: the replica's pin), and the
// replica's SHOW SLAVE STATUS as running; the link's bytes count the
// writes; a synchronous link is refused.
func TestMariaDBClusterReplicates(t *testing.T) {
	slow(t)
	start := time.Now()
	c, err := StartMariaDBCluster(context.Background(), Options{Keys: []string{"ecdsa-p256", "rsa2048"}})
	needInstalled(t, err)
	t.Cleanup(func() { c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Logf("started in %v", time.Since(start).Round(time.Millisecond))
	if c.Built.Bytes <= 0 || c.Built.Elapsed <= 0 || c.Built.DestCPU <= 0 {
		t.Errorf("the replica's snapshot: %+v, want bytes, time and the tools' CPU", c.Built)
	}
	w, err := c.OpenPrimary(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, l := range []cluster.Link{
		{TLS: "off", Sync: "off"},
		{TLS: "1.3", Key: "ecdsa-p256", Sync: "off"},
		{TLS: "1.2", Key: "rsa2048", Sync: "off"},
		{TLS: "off", Sync: "off"},
	} {
		st, err := c.SetLink(ctx, l)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if st.Encrypted != (l.TLS != "off") || l.TLS != "off" && st.Version != "TLSv"+l.TLS || st.State != "running" || !st.HasReplayLag {
			t.Errorf("%+v: the link shows encrypted=%v %q %s, state %q, Seconds_Behind_Master known %v", l, st.Encrypted, st.Version, st.Cipher, st.State, st.HasReplayLag)
		}
		t.Logf("%+v: %s %s after %v", l, cmp.Or(st.Version, "plain"), st.Cipher, time.Since(start).Round(time.Millisecond))
		// A new TLS version restarted the replica: a session after it.
		r, err := c.OpenReplica(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := seesBeat(ctx, w, r, int64(i+1)); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
		r.Close()
		after, err := c.LinkState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.PID != st.PID || after.Sent <= st.Sent {
			t.Errorf("%+v: the replica's connection %d sent %d bytes, then %d (connection %d): want more, on the same", l, st.PID, st.Sent, after.Sent, after.PID)
		}
	}
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "off", Sync: "on"}); err == nil || !strings.Contains(err.Error(), "asynchronous only") {
		t.Errorf("a synchronous MariaDB link: %v", err)
	}
	cpu, err := c.CPU()
	if err != nil || len(cpu) != 2 || cpu[0] <= 0 || cpu[1] <= 0 {
		t.Errorf("CPU %v (%v), want both nodes'", cpu, err)
	}
}
