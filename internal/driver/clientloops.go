package driver

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
)

// PhaseQuery is the phase of a session's first operation, as every engine
// names it.
const PhaseQuery = "query"

// ClientLoops is a Driver that can time whole clients of its engine's own
// library, as the MongoDB seed study timed pymongo's (--preset
// mongodb-seed): a new client per iteration, and one reused client's
// operations. The new-client and reused-client experiments need it.
type ClientLoops interface {
	// NewClient runs one iteration: a new client, its first operation,
	// then a close that is not timed.
	NewClient(ctx context.Context) (ClientSample, error)
	// OpenReused starts a client and runs its first operation, untimed,
	// so that what follows reuses its connection.
	OpenReused(ctx context.Context) (ReusedClient, error)
}

// ClientSample is one new client's iteration.
type ClientSample struct {
	// Connect is building the client (the seed's only-connection);
	// FirstQuery is from there to the end of its first operation, which
	// opens its connections (the seed's first-query).
	Connect, FirstQuery time.Duration
	// Op and Monitor are the client's two connections: the operation's
	// phases (tcp, tls-handshake, hello, auth, query) and its monitor's.
	Op, Monitor netx.Trace
	// TLS is the operation connection's state; Secure is false for plain.
	TLS    tls.ConnectionState
	Secure bool
}

// RoundTrips is the client turns of both connections: all of them happen
// within FirstQuery.
func (s ClientSample) RoundTrips() int {
	n := 0
	for _, tr := range []netx.Trace{s.Op, s.Monitor} {
		for _, p := range tr.Phases {
			n += p.RoundTrips
		}
	}
	return n
}

// ReusedClient is one client whose operations are timed one by one.
type ReusedClient interface {
	// Op times one operation.
	Op(ctx context.Context) (time.Duration, error)
	// Conn is the client's operation connection, for its bytes, round
	// trips (its PhaseQuery holds its first operation and the ones
	// after) and TLS state; nil if there is none yet.
	Conn() (*netx.Conn, *tls.Conn)
	// Close disconnects the client.
	Close() error
}
