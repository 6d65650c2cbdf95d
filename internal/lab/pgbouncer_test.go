package lab

import (
	"context"
	"crypto/tls"
	"net/url"
	"strconv"
	"testing"
)

// TestPgbouncer puts PgBouncer (TLS to its clients, TLS to the server)
// before a lab PostgreSQL and connects through it 300 times: every client
// connection is TLS, and the server saw at most the pool's sessions.
func TestPgbouncer(t *testing.T) {
	slow(t)
	ctx := context.Background()
	srv, err := Start(ctx, "postgres", Options{Keys: []string{"ecdsa-p256"}})
	pg := started(t, srv, err).(*Postgres)
	raw, err := pg.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	server, _ := url.Parse(raw)
	users := map[string]string{}
	for _, u := range pgUsers {
		users[u.user] = u.auth
	}
	b, err := StartPgbouncer(ctx, PgbouncerOptions{Server: server, Users: users, Password: pg.password,
		Key: "ecdsa-p256", CertDir: pg.dir, CAFile: pg.CAFile(), PoolMode: "session", ServerTLS: "verify-full", PoolSize: 2})
	needInstalled(t, err)
	defer b.Stop()
	sessions := func() int {
		c, err := pgDial(ctx, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		res, err := c.Exec(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = current_database()").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(string(res[0].Rows[0][0]))
		return n - 1 // this one
	}
	before := sessions()
	via := *server
	via.Host = b.Addr()
	for i := 0; i < 300; i++ {
		state, err := pgLogin(ctx, via.String(), &tls.Config{RootCAs: pg.RootCAs(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("login %d through pgbouncer: %v", i, err)
		}
		if state.Version != tls.VersionTLS13 {
			t.Fatalf("login %d: TLS version %x", i, state.Version)
		}
	}
	if n := sessions() - before; n < 1 || n > 2 {
		t.Errorf("the server saw %d sessions for 300 client connections through a pool of 2", n)
	}
	if info := b.Info(); info.Software != "PgBouncer" || info.Settings["server_tls_sslmode"] != "verify-full" {
		t.Errorf("info %+v", info)
	}
}
