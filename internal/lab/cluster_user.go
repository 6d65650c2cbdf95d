package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/result"
)

// UserCluster is a PostgreSQL primary and replica of the user's own,
// reached by their URLs and measured as they are: the link is what the
// cluster has now. It is here beside the lab clusters because it speaks
// to PostgreSQL as they do (the same sessions and the same reading of
// pg_stat_replication); it starts and changes nothing but two tables of
// its own (tlsbench_writes_XXXXXXXX, tlsbench_heartbeat_XXXXXXXX) it
// creates on the primary and drops in Stop.
type UserCluster struct {
	primaryURL, replicaURL string
	servers                []result.Server
	// tables are this run's own (a random suffix): a run killed before
	// its Stop leaves them beside another run's, never in its way.
	tables  pgTableNames
	created bool

	mu    sync.Mutex
	admin *pgconn.PgConn // on the primary
}

// OpenUserCluster checks that primaryURL's server is a primary with a
// replica streaming from it, and replicaURL's a replica, and creates the
// writes' and the heartbeat's tables, waiting until the replica has them.
func OpenUserCluster(ctx context.Context, primaryURL, replicaURL string) (_ *UserCluster, err error) {
	suffix := "_" + newPassword()[:8]
	c := &UserCluster{primaryURL: primaryURL, replicaURL: replicaURL, tables: pgTableNames{pgWritesTable + suffix, pgHeartbeatTable + suffix}}
	if c.admin, err = pgDialURL(ctx, primaryURL); err != nil {
		return nil, fmt.Errorf("the primary: %w", err)
	}
	defer func() {
		if err != nil {
			c.admin.Close(context.Background())
		}
	}()
	replica, err := pgDialURL(ctx, replicaURL)
	if err != nil {
		return nil, fmt.Errorf("the replica (--replica): %w", err)
	}
	defer replica.Close(context.Background())
	for _, n := range []struct {
		name string
		c    *pgconn.PgConn
		want string
	}{{"primary", c.admin, "f"}, {"replica", replica, "t"}} {
		rows, err := pgRows(ctx, n.c, "SELECT pg_is_in_recovery(), current_setting('server_version')")
		if err != nil {
			return nil, fmt.Errorf("the %s: %w", n.name, err)
		}
		if rows[0][0] != n.want {
			if n.name == "primary" {
				return nil, errors.New("PRIMARY_URL's server is in recovery, a replica: give the primary's URL first and the replica's as --replica")
			}
			return nil, errors.New("--replica's server is not in recovery, not a replica: give a replica of the primary")
		}
		c.servers = append(c.servers, result.Server{Lab: n.name, Software: "PostgreSQL", Version: rows[0][1], Settings: map[string]string{}})
		if n.name == "primary" { // a primary without a replica says so first
			if _, err := c.LinkState(ctx); err != nil {
				return nil, err
			}
		}
	}
	c.created = true // from the first CREATE on: DROP ... IF EXISTS
	for _, q := range pgTables(c.tables) {
		if _, err := c.admin.Exec(ctx, q).ReadAll(); err != nil {
			c.dropTables()
			return nil, fmt.Errorf("creating tlsbench's tables on the primary (%s, %s; dropped again at the end): %w", c.tables.writes, c.tables.heartbeat, err)
		}
	}
	r := &pgClusterConn{c: replica, tables: c.tables}
	err = pgPollFor(ctx, 30*time.Second, func() error { _, err := r.Seen(ctx); return err })
	if err != nil {
		c.dropTables()
		return nil, fmt.Errorf("the replica did not show tlsbench's heartbeat table within 30 s: is it a replica of this primary? (%w)", err)
	}
	return c, nil
}

// pgRows runs q on c and returns its rows as text.
func pgRows(ctx context.Context, c *pgconn.PgConn, q string) ([][]string, error) {
	res := c.ExecParams(ctx, q, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	out := make([][]string, len(res.Rows))
	for i, row := range res.Rows {
		for _, v := range row {
			out[i] = append(out[i], string(v))
		}
	}
	return out, nil
}

// SetLink changes nothing: it reads the link as it is.
func (c *UserCluster) SetLink(ctx context.Context, _ cluster.Link) (cluster.LinkState, error) {
	return c.LinkState(ctx)
}

// LinkState reads the primary's first streaming walsender (the one of
// its replicas pg_stat_replication lists first).
func (c *UserCluster) LinkState(ctx context.Context) (cluster.LinkState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows, err := pgRows(ctx, c.admin, pgLinkQuery+" ORDER BY r.state = 'streaming' DESC, r.pid")
	if err != nil {
		return cluster.LinkState{}, fmt.Errorf("reading the primary's pg_stat_replication: %w", err)
	}
	if len(rows) == 0 {
		return cluster.LinkState{}, errors.New("the primary has no replica streaming from it (pg_stat_replication is empty): give the primary of a replicating cluster")
	}
	st := pgLinkRow(rows[0])
	if st.State == "" {
		return cluster.LinkState{}, errors.New("the primary hides its replication state from this user: grant it pg_monitor (or pg_read_all_stats)")
	}
	return st, nil
}

// Resync is not measured on a cluster of the user's.
func (c *UserCluster) Resync(context.Context, cluster.Link) (result.Resync, error) {
	return result.Resync{}, errors.New("no resync on your own cluster")
}

// OpenPrimary opens a session as PRIMARY_URL says (its sslmode: the
// client's link as the user has it).
func (c *UserCluster) OpenPrimary(ctx context.Context, _ bool) (cluster.Conn, error) {
	pc, err := pgDialURL(ctx, c.primaryURL)
	if err != nil {
		return nil, err
	}
	return &pgClusterConn{c: pc, tables: c.tables}, nil
}

// OpenReplica opens a session as --replica's URL says.
func (c *UserCluster) OpenReplica(ctx context.Context) (cluster.Conn, error) {
	pc, err := pgDialURL(ctx, c.replicaURL)
	if err != nil {
		return nil, err
	}
	return &pgClusterConn{c: pc, tables: c.tables}, nil
}

// PrimaryAddr: no relay on the user's link.
func (c *UserCluster) PrimaryAddr() string { return "" }

// CPU is not measured: tlsbench did not start the nodes.
func (c *UserCluster) CPU() ([]time.Duration, error) { return nil, cluster.ErrNoNodeCPU }

// Alive is nil: a node that is gone shows as its sessions' errors.
func (c *UserCluster) Alive() error { return nil }

// Info describes both nodes as they said.
func (c *UserCluster) Info() []result.Server { return c.servers }

// Notes say how a cluster of the user's was measured.
func (c *UserCluster) Notes() []string {
	return []string{
		"your own cluster, measured as it is: one variant, the replication link as configured (the figures show what the primary's pg_stat_ssl said of it), the writers' link as PRIMARY_URL asks; no CPU per node, no resync",
		"tlsbench created the tables " + c.tables.writes + " and " + c.tables.heartbeat + " on the primary for the run and dropped them at its end",
	}
}

// Stop drops tlsbench's tables and closes the primary's session.
func (c *UserCluster) Stop() error {
	err := c.dropTables()
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(err, c.admin.Close(context.Background()))
}

func (c *UserCluster) dropTables() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.created {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.admin.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join([]string{c.tables.writes, c.tables.heartbeat}, ", ")).ReadAll()
	return err
}
