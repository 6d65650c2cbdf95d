package netx_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
)

// TestRelayPostgres connects pgx, dialing by itself, to a lab PostgreSQL
// through the relay at a 20 ms RTT, plain and with TLS: the login takes at
// least the round trips its protocol needs (the connect, SCRAM's three,
// with TLS the SSLRequest's and TLS 1.3's), a query answers, and a TLS
// connection's socket ends as it does without the relay, in the server's
// reset.
func TestRelayPostgres(t *testing.T) {
	srv := labtest.Start(t, "postgres", lab.Options{})
	base, err := srv.URL("", false) // scram-sha-256
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(base[strings.LastIndex(base, "@"):], "@")
	target = target[:strings.Index(target, "/")]
	rtt := 20 * time.Millisecond
	r, err := netx.StartRelay(context.Background(), target, &netx.Dialer{RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tt := range []struct {
		sslmode    string
		roundTrips int
	}{{"disable", 1 + 3}, {"require", 1 + 1 + 1 + 3}} {
		t.Run(tt.sslmode, func(t *testing.T) {
			direct := pgEnd(t, base+"?sslmode="+tt.sslmode, "", 0)
			through := pgEnd(t, base+"?sslmode="+tt.sslmode, r.Addr(), time.Duration(tt.roundTrips)*rtt)
			// A server's reset (TLS) reaches the client through the
			// relay as it does without. A plain close is a race on who
			// sends FIN first, which a loaded machine tips to the server
			// on bare loopback, and the relay, one RTT/2 nearer the
			// client, tips to the client (TIME_WAIT): both are ends a
			// real link gives, so only the reset is compared.
			if tt.sslmode == "require" && direct != through {
				t.Errorf("the client's socket ends in %s through the relay, in %s without", through, direct)
			}
		})
	}
	if err := r.Err(); err != nil {
		t.Error(err)
	}
}

// pgEnd logs in to url (at via instead of its host:port if set), in no
// less than least, runs a query, closes, and returns the state the
// client's socket settles in: TIME_WAIT or gone.
func pgEnd(t *testing.T, url, via string, least time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if via != "" {
		host, port, _ := net.SplitHostPort(via)
		p, _ := strconv.Atoi(port)
		cfg.Host, cfg.Port = host, uint16(p)
	}
	dial := cfg.DialFunc
	var local, remote netip.AddrPort
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			local = netip.MustParseAddrPort(c.LocalAddr().String())
			remote = netip.MustParseAddrPort(c.RemoteAddr().String())
		}
		return c, err
	}
	start := time.Now()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	login := time.Since(start)
	if login < least {
		t.Errorf("login in %v, under %v", login, least)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
	if _, ok := c.PgConn().Conn().(*tls.Conn); ok != (cfg.TLSConfig != nil) {
		t.Errorf("TLS %v, want %v", ok, cfg.TLSConfig != nil)
	}
	c.Close(ctx)
	// The server's FIN or RST comes a few RTTs later at most.
	var state string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if state = tcpState(t, local, remote); state == "TIME_WAIT" || state == "gone" {
			t.Logf("%s: login in %v, the client's socket then %s", remote, login, state)
			return state
		}
	}
	t.Fatalf("the client's socket %v->%v still in %s", local, remote, state)
	return ""
}

// tcpState is the state of the IPv4 TCP socket from local to remote, as
// /proc/net/tcp says: "gone" when it has none.
func tcpState(t *testing.T, local, remote netip.AddrPort) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hex := func(a netip.AddrPort) string {
		b := a.Addr().As4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
	}
	states := map[string]string{"01": "ESTABLISHED", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0B": "CLOSING"}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 3 && f[1] == hex(local) && f[2] == hex(remote) {
			return states[f[3]]
		}
	}
	return "gone"
}
