package httpdrv

import (
	"crypto/tls"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestTicketDoesNotEndRequest: over TLS 1.3 the built-in server's Go
// stack sends its NewSessionTicket after the client's Finished when it asks
// for a client certificate (without one it sends the ticket in its first
// flight), so the ticket arrives before the response, which waits 20 ms
// here: request ends at the response's first bytes, after the ticket, and
// keeps its one round trip; the handshake ends where the server's flight
// arrived, before the client's Finished.
func TestTicketDoesNotEndRequest(t *testing.T) {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientPEM, clientKey, err := ca.IssueClient("ecdsa-p256", "tlsbench")
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := tls.X509KeyPair(clientPEM, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	const delay = 20 * time.Millisecond
	srv, err := server.Start(server.Config{HTTPSAddr: "127.0.0.1:0", Certs: map[string]tls.Certificate{"ecdsa-p256": cert},
		ResponseSize: 100, ClientCAs: ca.Pool(),
		Check: func(*http.Request) int { time.Sleep(delay); return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	for _, tc := range []struct {
		name   string
		addr   string
		cert   *tls.Certificate
		ticket string // when the ticket comes
	}{
		{"ticket after the client's Finished", srv.MTLSAddrs()["ecdsa-p256"], &clientCert, "after"},
		{"ticket in the first flight", srv.HTTPSAddrs()["ecdsa-p256"], nil, "first flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := plan.Variant{TLS: "1.3", Key: "ecdsa-p256"}
			tickets := &ticketTimes{}
			tcfg, err := tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: ca.Pool(), ServerName: "127.0.0.1",
				ALPN: []string{"http/1.1"}, Certificate: tc.cert})
			if err != nil {
				t.Fatal(err)
			}
			tcfg.ClientSessionCache = tickets
			cfg := driver.Config{Variant: v, Addr: tc.addr, Host: "127.0.0.1", Path: "/", Dialer: &netx.Dialer{},
				Timeout: 10 * time.Second, TLS: tcfg}
			d, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr, state, _ := drivertest.ConnectOnce(t, d)
			if state.Version != tls.VersionTLS13 || state.DidResume {
				t.Fatalf("negotiated %x, resumed %v", state.Version, state.DidResume)
			}
			ticket := tickets.at()
			if ticket.IsZero() {
				t.Fatal("no session ticket arrived")
			}
			hs, _ := tr.Phase(netx.PhaseTLSHandshake)
			req, _ := tr.Phase(PhaseRequest)
			resp, _ := tr.Phase(PhaseResponse)
			t.Logf("handshake %v, ticket handled %v after it, request %v, response %v",
				hs.Duration, ticket.Sub(req.Start), req.Duration, resp.Duration)
			if hs.RoundTrips != 1 || req.RoundTrips != 1 || resp.RoundTrips != 0 {
				t.Errorf("round trips: handshake %d, request %d, response %d; want 1, 1, 0", hs.RoundTrips, req.RoundTrips, resp.RoundTrips)
			}
			if !resp.Start.After(ticket) || req.Duration < delay {
				t.Errorf("request ends %v after the ticket was handled and lasts %v: want it to end at the response, after the ticket, ≥ %v",
					resp.Start.Sub(ticket), req.Duration, delay)
			}
			if tc.ticket == "after" && !ticket.After(req.Start) {
				t.Errorf("the ticket was handled %v before request began: not after the client's Finished", req.Start.Sub(ticket))
			}
		})
	}
}

// ticketTimes is a session cache that notes when the client stored the
// server's first ticket, as it handled it.
type ticketTimes struct {
	mu  sync.Mutex
	put time.Time
}

func (s *ticketTimes) Get(string) (*tls.ClientSessionState, bool) { return nil, false }

func (s *ticketTimes) Put(_ string, cs *tls.ClientSessionState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs != nil && s.put.IsZero() {
		s.put = time.Now()
	}
}

func (s *ticketTimes) at() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put
}
