package lab

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func TestRedisPlainOnly(t *testing.T) {
	r := startT(t, "redis", Options{Keys: []string{"ecdsa-p256"}, PlainOnly: true}).(*redisServer)
	if _, err := r.URL("", true); err == nil {
		t.Error("a TLS URL without TLS")
	}
	if _, err := r.UseKey(context.Background(), "ecdsa-p256"); err == nil {
		t.Error("UseKey without TLS")
	}
	if eps := r.Info().Endpoints; len(eps) != 1 || eps[""] == "" {
		t.Errorf("endpoints %v, want the plaintext one only", eps)
	}
	if r.Info().Settings["tls-port"] != "0" {
		t.Errorf("tls-port %q, want 0", r.Info().Settings["tls-port"])
	}
	if _, err := r.command(context.Background(), "PING"); err != nil {
		t.Error(err)
	}
}

// TestRedisResumption pins down the finding in the notes: Redis resumes
// Go's TLS 1.2 and 1.3 sessions, in one round trip, by ticket, so also
// without its session cache.
func TestRedisResumption(t *testing.T) {
	r := startT(t, "redis", Options{Keys: []string{"ecdsa-p256"}}).(*redisServer)
	tests := []struct {
		caching    string // tls-session-caching
		version    uint16
		fullTrips  int
		resumeTrip int
	}{
		{"yes", tls.VersionTLS12, 2, 1},
		{"yes", tls.VersionTLS13, 1, 1},
		{"no", tls.VersionTLS12, 2, 1},
		{"no", tls.VersionTLS13, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tls.VersionName(tc.version)+" caching "+tc.caching, func(t *testing.T) {
			if _, err := r.command(context.Background(), "CONFIG", "SET", "tls-session-caching", tc.caching); err != nil {
				t.Fatal(err)
			}
			cfg := &tls.Config{RootCAs: r.RootCAs(), ServerName: "127.0.0.1", MinVersion: tc.version, MaxVersion: tc.version,
				ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			var fullBytes int64
			for i, want := range []struct {
				resumed bool
				trips   int
			}{{false, tc.fullTrips}, {true, tc.resumeTrip}, {true, tc.resumeTrip}} {
				state, trips, received := redisTLSConnect(t, r.Info().Endpoints["ecdsa-p256"], cfg)
				if state.DidResume != want.resumed || trips != want.trips {
					t.Errorf("handshake %d: resumed %v in %d round trips, want %v in %d", i, state.DidResume, trips, want.resumed, want.trips)
				}
				// A resumed handshake does without the certificate.
				if i == 0 {
					fullBytes = received
				} else if cert := len(state.PeerCertificates[0].Raw); received > fullBytes-int64(cert) {
					t.Errorf("handshake %d: received %d bytes, the full one %d, the certificate is %d", i, received, fullBytes, cert)
				}
			}
		})
	}
	if !strings.Contains(redisResumption, "resumption works with tls-session-caching no") {
		t.Errorf("the note says %q; the test finds resumption works, also without the session cache", redisResumption)
	}
}

// redisTLSConnect makes a handshake and one command, so that TLS 1.3
// tickets, sent after the handshake, are read. It returns the handshake's
// round trips and the bytes it received.
func redisTLSConnect(t *testing.T, addr string, cfg *tls.Config) (tls.ConnectionState, int, int64) {
	t.Helper()
	ctx := context.Background()
	c, err := (&netx.Dialer{}).Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, err := netx.Handshake(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, received := c.Counters()
	c.Mark("command")
	if _, err := tc.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := tc.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "-NOAUTH") {
		t.Fatalf("PING without AUTH: %q, %v", buf[:n], err)
	}
	tc.Close()
	p, _ := c.Finish().Phase(netx.PhaseTLSHandshake)
	return tc.ConnectionState(), p.RoundTrips, received
}

// redisLogin is the lifecycle suite's login: connect to rawURL (rediss://
// with tlsConfig), AUTH with its user and password, PING, close.
func redisLogin(ctx context.Context, rawURL string, tlsConfig *tls.Config) (tls.ConnectionState, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	if (u.Scheme == "rediss") != (tlsConfig != nil) {
		return tls.ConnectionState{}, fmt.Errorf("a %s URL with TLS %v", u.Scheme, tlsConfig != nil)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var c net.Conn
	if tlsConfig != nil {
		c, err = (&tls.Dialer{Config: tlsConfig}).DialContext(ctx, "tcp", u.Host)
	} else {
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
	}
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	var state tls.ConnectionState
	if tc, ok := c.(*tls.Conn); ok {
		state = tc.ConnectionState()
	}
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	// Inline commands: the lab's user and password need no quoting.
	pw, _ := u.User.Password()
	if _, err := fmt.Fprintf(c, "AUTH %s %s\r\nPING\r\n", u.User.Username(), pw); err != nil {
		return state, err
	}
	br := bufio.NewReader(c)
	for _, want := range []string{"OK", "PONG"} {
		got, err := redisReply(br)
		if err != nil {
			return state, err
		}
		if len(got) != 1 || got[0] != want {
			return state, fmt.Errorf("got %q, want %s", got, want)
		}
	}
	return state, nil
}

// checkRedis is what only the Redis lab server promises (the lifecycle
// suite runs it): its version and settings as redis-server states them
// (@SECLEVEL=0 for RSA-1024, no persistence), a plaintext and a TLS port,
// and URLs of its one user.
func checkRedis(t *testing.T, srv Server, _ string) {
	r := srv.(*redisServer)
	exe, err := redisBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`v=(\S+)`).FindSubmatch(out)
	info := r.Info()
	if m == nil || info.Version != string(m[1]) {
		t.Errorf("version %q, redis-server --version says %q", info.Version, out)
	}
	for k, want := range map[string]string{"tls-protocols": "TLSv1.2 TLSv1.3", "tls-session-caching": "yes", "tls-ciphers": "DEFAULT:@SECLEVEL=0", "appendonly": "no"} {
		if info.Settings[k] != want {
			t.Errorf("setting %s = %q, want %q", k, info.Settings[k], want)
		}
	}
	if !strings.Contains(strings.Join(r.Notes(), " "), "OPENSSL_CONF") {
		t.Errorf("the notes do not say how RSA-1024 works: %q", r.Notes())
	}
	tlsAddr := info.Endpoints[r.opts.Keys[0]]
	if info.Endpoints[""] == "" || tlsAddr == "" || tlsAddr == info.Endpoints[""] {
		t.Errorf("endpoints %v: want a plaintext and a TLS port", info.Endpoints)
	}
	if got := r.Auths(); len(got) != 1 || got[0] != "password" {
		t.Errorf("Auths() = %v", got)
	}
	for _, tc := range []struct {
		auth    string
		tls     bool
		scheme  string
		address string
	}{
		{"", false, "redis", info.Endpoints[""]},
		{"password", false, "redis", info.Endpoints[""]},
		{"", true, "rediss", tlsAddr},
	} {
		raw, err := r.URL(tc.auth, tc.tls)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if u.Scheme != tc.scheme || u.Host != tc.address || u.User.Username() != redisUser || u.Path != "/0" {
			t.Errorf("URL(%q, %v) = %s", tc.auth, tc.tls, plan.Redact(raw))
		}
	}
}
