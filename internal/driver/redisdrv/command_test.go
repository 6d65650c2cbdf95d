package redisdrv

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// commandConfig is the driver config of the user's commands against the
// shared server's database 3.
func commandConfig(t *testing.T, v plan.Variant, keyspace int64, commands ...[]string) driver.Config {
	cfg := config(t, v, "/3", plan.WorkloadCommand)
	cfg.Workload.User = plan.UserWorkload{Commands: commands, Keyspace: keyspace}
	return cfg
}

// commandCalls reads INFO commandstats: calls per command.
func commandCalls(t *testing.T) map[string]int {
	t.Helper()
	info, err := commandAdmin(t).Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, m := range regexp.MustCompile(`cmdstat_([a-z|]+):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		calls[m[1]], _ = strconv.Atoi(m[2])
	}
	return calls
}

// commandAdmin is a plain client of the shared server's database 3.
func commandAdmin(t *testing.T) *redis.Client {
	return adminClient(t, config(t, plan.Variant{TLS: "off"}, "/3", WorkloadGet))
}

// TestCommands: the user's commands reach the server as written, every
// operation sends all of them (INFO commandstats counts operations ×
// commands) in one round trip (a pipeline), each __rand_int__ becomes its
// own 12-digit number below the keyspace, and Statements counts the
// commands.
func TestCommands(t *testing.T) {
	needServer(t)
	const ops, keyspace = 200, 50
	for _, v := range []plan.Variant{{ID: "plain", TLS: "off"}, {ID: "tls", TLS: "1.3", Key: "rsa2048"}} {
		t.Run(v.ID, func(t *testing.T) {
			ctx := context.Background()
			cfg := commandConfig(t, v, keyspace,
				[]string{"SET", "cmd:__rand_int__", "v"},
				[]string{"INCR", "cmd:count"},
				[]string{"GET", "cmd:missing"}) // a nil reply is an answer
			admin := commandAdmin(t)
			if err := admin.FlushDB(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			d := newDriver(t, cfg)
			if n := d.(driver.MultiStatement).Statements(); n != 3 {
				t.Errorf("Statements = %d, want 3", n)
			}
			s, err := d.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := s.Conn().Turns()
			for range ops {
				if err := s.Do(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if turns := s.Conn().Turns() - before; turns != ops {
				t.Errorf("%d round trips for %d operations of 3 commands, want one each (a pipeline)", turns, ops)
			}
			s.Close()
			calls := commandCalls(t)
			for _, c := range []string{"set", "incr", "get"} {
				if calls[c] != ops {
					t.Errorf("the server counted %d calls of %s, want %d: %v", calls[c], c, ops, calls)
				}
			}
			if n, _ := admin.Get(ctx, "cmd:count").Int(); n != ops {
				t.Errorf("cmd:count = %d, want %d", n, ops)
			}
			keys, err := admin.Keys(ctx, "cmd:[0-9]*").Result()
			if err != nil {
				t.Fatal(err)
			}
			// 200 draws from 50 numbers leave about 49 distinct; fewer
			// than 25 would be no random draw.
			if len(keys) < 25 || len(keys) > keyspace {
				t.Errorf("%d distinct keys, want 25 to %d", len(keys), keyspace)
			}
			for _, k := range keys {
				n, err := strconv.Atoi(strings.TrimPrefix(k, "cmd:"))
				if len(k) != len("cmd:")+12 || err != nil || n < 0 || n >= keyspace {
					t.Errorf("key %q: want cmd: and a 12-digit number below %d", k, keyspace)
				}
			}
		})
	}
}

// TestCommandErrors: an error reply fails the operation, counted by its
// code, and names the command; the connection stays usable.
func TestCommandErrors(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	cfg := commandConfig(t, plan.Variant{TLS: "off"}, 0,
		[]string{"SET", "cmd:str", "x"},
		[]string{"LPUSH", "cmd:str", "y"})
	s, err := newDriver(t, cfg).Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		err := s.Do(ctx)
		if err == nil || driver.Kind(err) != "query: WRONGTYPE" || !strings.Contains(err.Error(), "command 2 of 2 (LPUSH): WRONGTYPE") {
			t.Fatalf("Do = %v (kind %q), want a WRONGTYPE error of command 2", err, driver.Kind(err))
		}
	}
}
