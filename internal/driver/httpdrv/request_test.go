package httpdrv

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// seen is a request as the built-in server received it.
type seen struct {
	method, path, host, body string
	header                   http.Header
}

// builtin starts the built-in server in this process with an HTTPS
// listener and a check that records every request and answers 404 for
// paths that start with /missing. It returns the server's address, a TLS
// config that trusts it, and the requests seen so far.
func builtin(t *testing.T) (addr string, tc *tls.Config, requests func() []seen) {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []seen
	srv, err := server.Start(server.Config{
		HTTPSAddr: "127.0.0.1:0", Certs: map[string]tls.Certificate{"ecdsa-p256": pair}, ResponseSize: 1024,
		Check: func(r *http.Request) int {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, seen{r.Method, r.URL.RequestURI(), r.Host, string(body), r.Header.Clone()})
			mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/missing") {
				return http.StatusNotFound
			}
			return 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	v := plan.Variant{TLS: "1.3"}
	tc, err = tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: ca.Pool(), ServerName: "127.0.0.1", ALPN: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv.HTTPSAddrs()["ecdsa-p256"], tc, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestUserRequest: the user's method, headers and body reach the built-in
// server as given, over TLS, one round trip per request; tlsbench's own
// headers yield to the user's (an empty value leaves one out); --paths
// spreads the requests over its paths; a non-2xx status is a failure
// counted by its status, and the connection goes on.
func TestUserRequest(t *testing.T) {
	addr, tc, requests := builtin(t)
	const ops = 60
	for _, tt := range []struct {
		name  string
		w     plan.UserWorkload
		check func(t *testing.T, got []seen)
		fails int // operations that must fail with status 404
	}{
		{"post", plan.UserWorkload{Method: "POST", Headers: []plan.Header{{Name: "Authorization", Value: "Bearer t0ken"}, {Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"a":1}`), HasBody: true},
			func(t *testing.T, got []seen) {
				for _, r := range got {
					if r.method != "POST" || r.body != `{"a":1}` || r.header.Get("Authorization") != "Bearer t0ken" ||
						r.header.Get("Content-Type") != "application/json" || r.header.Get("User-Agent") != "tlsbench" {
						t.Fatalf("the server saw %+v", r)
					}
				}
			}, 0},
		{"form", plan.UserWorkload{Method: "PUT", Body: []byte("a=1&b=2"), HasBody: true},
			func(t *testing.T, got []seen) {
				r := got[0]
				if r.method != "PUT" || r.body != "a=1&b=2" || r.header.Get("Content-Type") != "application/x-www-form-urlencoded" {
					t.Fatalf("the server saw %+v", r)
				}
			}, 0},
		{"delete without body", plan.UserWorkload{Method: "DELETE", Headers: []plan.Header{{Name: "User-Agent"}, {Name: "Host", Value: "api.example"}}},
			func(t *testing.T, got []seen) {
				r := got[0]
				if r.method != "DELETE" || r.body != "" || r.header.Get("Content-Length") != "" || r.header.Get("User-Agent") != "" || r.host != "api.example" {
					t.Fatalf("the server saw %+v", r)
				}
			}, 0},
		{"head", plan.UserWorkload{Method: "HEAD"}, // a response without its body
			func(t *testing.T, got []seen) {
				if got[0].method != "HEAD" {
					t.Fatalf("the server saw %+v", got[0])
				}
			}, 0},
		{"paths", plan.UserWorkload{Paths: []string{"/a", "/b?q=1", "/c"}},
			func(t *testing.T, got []seen) {
				count := map[string]int{}
				for _, r := range got {
					count[r.path]++
				}
				// 60 requests over 3 paths: about 20 each.
				for _, p := range []string{"/a", "/b?q=1", "/c"} {
					if count[p] < 5 {
						t.Errorf("the server saw %s %d times of %d: %v", p, count[p], ops, count)
					}
				}
				if len(count) != 3 {
					t.Errorf("the server saw paths %v", count)
				}
			}, -1},
		{"404", plan.UserWorkload{Paths: []string{"/missing", "/missing?x"}},
			func(t *testing.T, got []seen) {}, ops},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(requests())
			cfg := driver.Config{Variant: plan.Variant{TLS: "1.3"}, Addr: addr, Host: "127.0.0.1", Path: "/", TLS: tc,
				Dialer: &netx.Dialer{}, Timeout: 5 * time.Second, Reuse: true,
				Workload: driver.Workload{Name: plan.WorkloadRequest, User: tt.w}}
			d, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, err := d.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Round trips are counted from the second request: with TLS
			// 1.3 the first is sent in the handshake's last flight.
			var turns int64
			fails := 0
			for i := range ops {
				if i == 1 {
					turns = s.Conn().Turns()
				}
				switch err := s.Do(ctx); {
				case err == nil:
				case driver.Kind(err) == "response: status 404":
					fails++
				default:
					t.Fatalf("Do: %v (kind %s)", err, driver.Kind(err))
				}
			}
			if n := s.Conn().Turns() - turns; n != ops-1 {
				t.Errorf("%d round trips for %d requests, want one each", n, ops-1)
			}
			s.Close()
			if tt.fails >= 0 && fails != tt.fails {
				t.Errorf("%d requests failed with status 404, want %d", fails, tt.fails)
			}
			got := requests()[before:]
			if len(got) != ops {
				t.Fatalf("the server saw %d requests, want %d", len(got), ops)
			}
			tt.check(t, got)
		})
	}
}
