package lab

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
)

// startCluster starts a lab PostgreSQL cluster for t, stopped when t ends.
func startCluster(t *testing.T, keys ...string) *PostgresCluster {
	t.Helper()
	slow(t)
	c, err := StartPostgresCluster(context.Background(), Options{Keys: keys})
	needInstalled(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// TestClusterReplicates: the replica shows a heartbeat written on the
// primary; each link is verified from the primary (pg_stat_ssl of the
// walsender): plain when plain, TLS of the asked version otherwise, and
// synchronous when asked; and the replica's resync is counted.
func TestClusterReplicates(t *testing.T) {
	c := startCluster(t, "ecdsa-p256", "rsa2048")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.Built.Bytes < 1<<20 || c.Built.Elapsed <= 0 {
		t.Errorf("the replica's pg_basebackup: %+v, want megabytes copied in a positive time", c.Built)
	}
	w, err := c.OpenPrimary(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := c.OpenReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seq := int64(0)
	for _, l := range []cluster.Link{
		{TLS: "off", Sync: "off"},
		{TLS: "1.3", Key: "ecdsa-p256", Sync: "off"},
		{TLS: "1.2", Key: "rsa2048", Sync: "on"},
		{TLS: "off", Sync: "remote_apply"},
	} {
		st, err := c.SetLink(ctx, l)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if st.Encrypted != (l.TLS != "off") || l.TLS != "off" && st.Version != "TLSv"+l.TLS {
			t.Errorf("%+v: the primary shows the link encrypted=%v %s", l, st.Encrypted, st.Version)
		}
		if want := map[bool]string{false: "async", true: "sync"}[l.Sync != "off"]; st.SyncState != want {
			t.Errorf("%+v: sync_state %s, want %s", l, st.SyncState, want)
		}
		seq++
		if err := w.Write(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Beat(ctx, seq); err != nil {
			t.Fatal(err)
		}
		err = pgPollFor(ctx, 10*time.Second, func() error {
			got, err := r.Seen(ctx)
			if err == nil && got != seq {
				err = os.ErrNotExist
			}
			return err
		})
		if err != nil {
			t.Errorf("%+v: the replica did not show heartbeat %d: %v", l, seq, err)
		}
		if l.Sync == "remote_apply" {
			// Applied on the replica before the commit returned.
			if got, err := r.Seen(ctx); err != nil || got != seq {
				t.Errorf("remote_apply: the replica shows %d (%v) right after the commit of %d", got, err, seq)
			}
		}
	}
	rs, err := c.Resync(ctx, cluster.Link{TLS: "1.3", Key: "ecdsa-p256"})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Bytes < 1<<20 || rs.SourceCPU <= 0 || rs.DestCPU <= 0 {
		t.Errorf("resync over TLS 1.3: %+v, want megabytes and both ends' CPU", rs)
	}
}

// TestRedisClusterReplicates: a Redis replica shows a heartbeat set on the
// primary, over a plain link and a TLS 1.3 one, each verified from the
// primary (the port the replica's connection came in on).
func TestRedisClusterReplicates(t *testing.T) {
	slow(t)
	c, err := StartRedisCluster(context.Background(), Options{Keys: []string{"ecdsa-p256"}})
	needInstalled(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := c.OpenPrimary(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := c.OpenReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for seq, l := range []cluster.Link{{TLS: "1.3", Sync: "off"}, {TLS: "off", Sync: "off"}, {TLS: "1.2", Sync: "off"}} {
		st, err := c.SetLink(ctx, l)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if st.Encrypted != (l.TLS != "off") || l.TLS != "off" && st.Version != "TLSv"+l.TLS {
			t.Errorf("%+v: the primary shows the link encrypted=%v %q", l, st.Encrypted, st.Version)
		}
		if err := w.Write(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Beat(ctx, int64(seq+1)); err != nil {
			t.Fatal(err)
		}
		err = pgPollFor(ctx, 10*time.Second, func() error {
			got, err := r.Seen(ctx)
			if err == nil && got != int64(seq+1) {
				err = os.ErrNotExist
			}
			return err
		})
		if err != nil {
			t.Errorf("%+v: the replica did not show heartbeat %d: %v", l, seq+1, err)
		}
	}
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "off", Sync: "on"}); err == nil || !strings.Contains(err.Error(), "asynchronously only") {
		t.Errorf("a synchronous Redis link: %v", err)
	}
}
