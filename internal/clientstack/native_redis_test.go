package clientstack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// redisAdmin is a go-redis client of the lab server's plaintext port, as
// its user.
func redisAdmin(t *testing.T, s lab.Server) *redis.Client {
	t.Helper()
	cfg := nativeConfig(t, s, "redis", "hiredis", "", "off")
	c := redis.NewClient(&redis.Options{Addr: cfg.Host + ":" + strconv.Itoa(cfg.Port), Username: cfg.User, Password: cfg.Password})
	t.Cleanup(func() { c.Close() })
	return c
}

// redisStat is a field of INFO's section: cmdstat_ping's calls, or
// total_connections_received.
func redisStat(t *testing.T, c *redis.Client, section, key, sub string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		if sub == "" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		for _, f := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(f, sub+"="); ok {
				v, _ := strconv.ParseInt(n, 10, 64)
				return v
			}
		}
	}
	return 0
}

// TestHiredis: redis-benchmark drives hiredis against a lab Redis, plain
// and TLS 1.3, connect and pool: the requests it was told to make are the
// server's PINGs and GETs, a connect run's connections the server's; a
// password is refused, never put on its command line.
func TestHiredis(t *testing.T) {
	s := labtest.Start(t, "redis", lab.Options{Keys: []string{"ecdsa-p256"}})
	admin := redisAdmin(t, s)
	ctx := context.Background()
	// redis-benchmark cannot send a password safely: the default user,
	// with none, is its way in.
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	t.Run("password", func(t *testing.T) {
		cfg := nativeConfig(t, s, "redis", "hiredis", "", "off")
		if cfg.Password == "" {
			t.Fatal("the lab's Redis user has no password")
		}
		_, err := Start(ctx, cfg)
		var r *Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "redis-benchmark takes one only on its command line") ||
			!strings.Contains(err.Error(), "use --client redis-py, jedis or ioredis") || strings.Contains(err.Error(), cfg.Password) {
			t.Fatalf("err = %v", strings.ReplaceAll(fmt.Sprint(err), cfg.Password, "xxxxx"))
		}
	})
	for _, tc := range []struct {
		tls, experiment, workload string
	}{
		{"off", "connect", "ping"},
		{"1.3", "connect", "ping"},
		{"off", "pool", "get"},
		{"1.3", "pool", "get"},
	} {
		t.Run(tc.experiment+"-"+tc.tls+"-"+tc.workload, func(t *testing.T) {
			cfg := nativeConfig(t, s, "redis", "hiredis", "", tc.tls)
			cfg.User, cfg.Password, cfg.Verify, cfg.Workload = "", "", "ca", tc.workload
			c := startStack(t, cfg)
			cmd := "cmdstat_" + map[string]string{"ping": "ping", "get": "get"}[tc.workload]
			calls := redisStat(t, admin, "commandstats", cmd, "calls")
			conns := redisStat(t, admin, "stats", "total_connections_received", "")
			const n = 300
			rep, err := c.Run(ctx, Run{Experiment: tc.experiment, Concurrency: 2, PerConn: 1, MaxOps: n, Duration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			tot := rep.Totals
			if tot == nil || tot.Ops != n || tot.Errors != 0 || rep.Ops != nil || rep.CPU <= 0 {
				t.Fatalf("report %+v, totals %+v", rep, tot)
			}
			if !(tot.P50 > 0 && tot.P50 <= tot.P95 && tot.P95 <= tot.P99 && tot.P99 <= tot.Max && tot.Mean > 0) {
				t.Errorf("latencies %+v", tot)
			}
			if got := redisStat(t, admin, "commandstats", cmd, "calls") - calls; got != n {
				t.Errorf("the server counted %d %s, want %d", got, cmd, n)
			}
			// A connection a request under connect, 2 under pool, and
			// redis-benchmark's first, for the server's CONFIG; -k 0 may
			// also open one more a client but one as the run ends, with
			// no request (found by trying: up to n + c in all).
			lo, hi := int64(n+1), int64(n+2)
			if tc.experiment == "pool" {
				lo, hi = 2+1, 2+1
			}
			// The run says so, as its own (besides its n or its 2).
			if own := (Extra{Min: lo - n, Max: hi - n, Known: true}); tc.experiment == "connect" && rep.Extra != own ||
				tc.experiment == "pool" && rep.Extra != exactly(1) {
				t.Errorf("the run says it opened %+v besides its operations' connections", rep.Extra)
			}
			if got := redisStat(t, admin, "stats", "total_connections_received", "") - conns; got < lo || got > hi {
				t.Errorf("the server counted %d connections, want %d to %d", got, lo, hi)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		cfg := nativeConfig(t, s, "redis", "hiredis", "", "off")
		cfg.User, cfg.Password = "", ""
		c := startStack(t, cfg)
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Totals == nil || rep.Totals.Ops < 10 || rep.Elapsed > 20*time.Second {
			t.Errorf("a 1 s run: %+v in %v", rep.Totals, rep.Elapsed)
		}
	})
}
