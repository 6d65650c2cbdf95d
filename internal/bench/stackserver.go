package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The server's own view of a client stack's connections (--client). Go's
// check asks the server on its own connection (driver.ServerChecker); a
// stack's connections are another process's, so tlsbench asks on a
// session of its own (the variant's Go driver, a driver.PeerChecker) what
// the server sees of the others while the stack holds a pool of one open:
// PostgreSQL's pg_stat_ssl of each of the user's backends, Redis's CLIENT
// LIST (the port each connection reached), MariaDB's counts of the
// connections it accepted and of those over TLS. The same
// for every stack, the C tools included (pgbench and sysbench cannot run
// a query of ours), without a line of the programs; clients/PROTOCOL.md
// says why.

// StackHold is how long a stack holds its pool of one open while the
// server is asked about it: whole seconds, as pgbench's -T runs.
const StackHold = time.Second

// peerPoll is how often the server is asked while the stack holds it.
const peerPoll = 20 * time.Millisecond

// stackServer is the server's view of v's stack's connections, checked
// against v; nil and why where the server cannot say (an engine whose
// driver is no driver.PeerChecker: MongoDB, HTTPS).
func (r *Runner) stackServer(ctx context.Context, v plan.Variant, client clientstack.Client) (*result.ServerView, string, error) {
	s, err := r.askSession(ctx, v)
	if err != nil {
		return nil, "", err
	}
	defer s.Close()
	pc, ok := s.(driver.PeerChecker)
	if !ok {
		return nil, "not available from this server: it keeps no view of another connection's TLS that a client can read", nil
	}
	before, err := pc.Peers(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("asking the server about client %s's connections: %w", v.Client, err)
	}
	exp := plan.Pool
	if o := plan.ClientOnly(v.Client); o != "" {
		exp = o
	}
	run := clientstack.Run{Experiment: string(exp), Concurrency: 1, PerConn: 1, Duration: StackHold}
	var rep clientstack.Report
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, runErr = client.Run(ctx, run)
	}()
	seen := map[string]driver.ServerView{}
	tick := time.NewTicker(peerPoll)
	defer tick.Stop()
	var after driver.Peers
	for held := true; held; {
		select {
		case <-done:
			held = false // one more look: MariaDB's counts are the run's whole
		case <-tick.C:
		}
		if after, err = pc.Peers(ctx); err != nil {
			<-done
			return nil, "", fmt.Errorf("asking the server about client %s's connections: %w", v.Client, err)
		}
		for id, sv := range after.Open {
			if _, old := before.Open[id]; !old {
				seen[id] = sv
			}
		}
	}
	if runErr == nil && !slices.ContainsFunc(rep.Ops, func(o clientstack.Op) bool { return !o.Failed() }) {
		// An operation may fail where --max-error-rate lets it; none
		// that succeeded is a pool that never worked.
		if i := slices.IndexFunc(rep.Ops, clientstack.Op.Failed); i >= 0 {
			o := rep.Ops[i]
			runErr = fmt.Errorf("%s: %s: %s", o.Phase, o.Kind, ErrorSample(errors.New(o.Message)))
		}
	}
	if runErr != nil {
		return nil, "", fmt.Errorf("client %s: its pool of one, held while the server was asked about it: %w", v.Client, runErr)
	}
	var views []driver.ServerView
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		views = append(views, seen[id])
	}
	return judgePeers(v, r.Configs[v.ID].ServerTLS, before, after, views)
}

// judgePeers checks what the server saw of v's stack: the views of its
// sessions (seen open), or the server's counts before and after it held
// its pool. hopTLS, when set, is whether an intermediary (a pooler) that
// makes the connections to the server uses TLS (driver.Config.ServerTLS):
// the server sees its connections, not the stack's. A plain variant the
// server saw encrypted, or a TLS one it saw in plaintext or at another
// version, is an error naming the stack, what it was asked and what the
// server saw.
func judgePeers(v plan.Variant, hopTLS *bool, before, after driver.Peers, views []driver.ServerView) (*result.ServerView, string, error) {
	wantTLS, version, asked := !v.Plain(), "", "plaintext"
	switch {
	case hopTLS != nil:
		wantTLS, asked = *hopTLS, "plaintext from its intermediary to the server"
		if wantTLS {
			asked = "TLS from its intermediary to the server"
		}
	case v.TLS == "1.2" || v.TLS == "1.3":
		version, asked = v.TLS, "TLS "+v.TLS
	case wantTLS:
		asked = "TLS"
	}
	if after.Counted {
		n, tls := after.Accepted-before.Accepted, after.TLS-before.TLS
		counted := fmt.Sprintf("%d of the %d connections it accepted meanwhile (every client's: Connections, Ssl_finished_accepts)", tls, n)
		switch {
		case n <= 0:
			return nil, "", fmt.Errorf("client %s: the server counted no connection while the client held its pool of one for %v", v.Client, StackHold)
		case wantTLS && tls < n:
			return nil, "", fmt.Errorf("client %s: asked for %s, the server counted TLS on %s", v.Client, asked, counted)
		case !wantTLS && tls > 0:
			return nil, "", fmt.Errorf("client %s: asked for %s, the server counted TLS on %s", v.Client, asked, counted)
		}
		// The counts say TLS or not; the version only the session's own
		// status says (or performance_schema, off by default).
		return &result.ServerView{TLS: wantTLS}, "", nil
	}
	if len(views) == 0 {
		return nil, "", fmt.Errorf("client %s: the server showed none of its connections while it held a pool of one for %v (its view of the user's other sessions)", v.Client, StackHold)
	}
	for _, sv := range views {
		saw := "a plaintext connection"
		if sv.TLS {
			saw = "a connection over " + sv.Version + " " + sv.Cipher
		}
		// Redis says TLS or not, no version.
		if sv.TLS != wantTLS || version != "" && sv.Version != "" && versionNumber(sv.Version) != version {
			return nil, "", fmt.Errorf("client %s: asked for %s, the server reports %s", v.Client, asked, saw)
		}
	}
	sv := views[0]
	return &result.ServerView{TLS: sv.TLS, Version: sv.Version, Cipher: sv.Cipher, ClientCert: sv.ClientCert}, "", nil
}
