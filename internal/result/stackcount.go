package result

// ServerCount is the server's own count of a client stack's trial
// (Trial.ServerCount): how much its running count of connections grew
// from just before the stack's run to just after, beside what the stack
// said it opened. The stack's connections are another process's, so the
// server's count is what shows that they are what it reported.
type ServerCount struct {
	// Counter names the count as the server does
	// ("pg_stat_database.sessions", "Connections",
	// "total_connections_received"); Conns is how much it grew.
	Counter string `json:"counter"`
	Conns   int64  `json:"conns"`
	// TLSCounter and TLS are those over TLS, where the server counts them
	// apart (MariaDB's Ssl_finished_accepts).
	TLSCounter string `json:"tls_counter,omitempty"`
	TLS        int64  `json:"tls,omitempty"`
	// Want and WantMax bound what the server should have counted: the
	// trial's connections (Trial.Conns), those the stack opened besides
	// (a C tool's own, a warm-up run's) and, at most, one for each failed
	// operation. WantMax is 0 where the stack cannot tell how many it
	// opened besides (a warm-up of new connections): Conns is then at
	// least Want.
	Want    int64 `json:"want"`
	WantMax int64 `json:"want_max,omitempty"`
	// Open is how many of the login's other sessions were still open
	// when the count was read, on a server that may count a session as
	// late as its end (PostgreSQL); omitted for none.
	Open int64 `json:"open,omitempty"`
}

// Agrees reports whether the server counted what the stack said it
// opened: Conns within Want..WantMax (at least Want without WantMax),
// and, where the server counts TLS apart, none over TLS on a plain
// variant, at least Want on a TLS one (tls).
func (c ServerCount) Agrees(tls bool) bool {
	switch {
	case c.Conns < c.Want, c.WantMax > 0 && c.Conns > c.WantMax:
		return false
	case c.TLSCounter == "":
		return true
	case tls:
		return c.TLS >= c.Want
	}
	return c.TLS == 0
}
