package result

// Wire experiment: connections decoded from a packet capture (package
// wire), any client's. A wire result has one trial per variant, each
// variant a group of connections that negotiated alike (plain; TLS version,
// suite, group; resumed or full; client certificate; server port).
// Trial.Conns and Trial.Ops count the group's connections, Trial.Latency
// their whole time (first SYN to the last packet), Trial.Phases their
// phases with the same names and round-trip rule as tlsbench's own
// (netx.Conn), Trial.Negotiated what the first of them settled on,
// Trial.Resumed how many resumed, Trial.Wire the rest below.

// Wire is what a capture showed about one trial's connections beyond
// phases and round trips.
type Wire struct {
	// Server is the server's address:port as the capture shows it.
	Server string `json:"server"`
	// Protocol is what the connections spoke: postgres (SSLRequest, a
	// plaintext login, or direct TLS with ALPN postgresql), mysql, http
	// (plain text), tls (TLS from the first byte: HTTPS, Redis, MongoDB)
	// or plain (a plaintext protocol the decoder does not read).
	Protocol string `json:"protocol"`
	// Offered is what the first connection's ClientHello offered; nil
	// without TLS.
	Offered *Offered `json:"offered,omitempty"`
	// HelloRetries counts connections whose server sent a
	// HelloRetryRequest; TicketsOffered those whose ClientHello carried a
	// session ticket or PSK; CertChainBytes is the server certificate
	// chain's size where the capture shows it (TLS 1.2; encrypted in 1.3).
	HelloRetries   int64 `json:"hello_retries,omitempty"`
	TicketsOffered int64 `json:"tickets_offered,omitempty"`
	CertChainBytes int   `json:"cert_chain_bytes,omitempty"`
	// Split divides each phase's time, as seen at the capture point, among
	// the client (its turn to speak), the server (answer time less the
	// network's round trip) and the network (the TCP handshake's round
	// trip per client turn): means over the trial's connections.
	Split []PhaseSplit `json:"split,omitempty"`
	// Flights counts the encrypted flights after the handshake per
	// connection (mean): encryption hides what they carry.
	Flights float64 `json:"flights,omitempty"`
}

// Offered is a ClientHello's offer.
type Offered struct {
	Versions  []string   `json:"versions"` // "TLS 1.3", "TLS 1.2"
	Suites    []string   `json:"suites"`   // crypto/tls names where known, else 0x%04x
	Groups    []string   `json:"groups"`   // supported_groups: "X25519MLKEM768", "X25519", "P-256"
	KeyShares []KeyShare `json:"key_shares,omitempty"`
	SNI       string     `json:"sni,omitempty"`
	ALPN      []string   `json:"alpn,omitempty"`
	// HelloBytes is the ClientHello record's size, header included.
	HelloBytes int `json:"hello_bytes"`
}

// KeyShare is one key share a ClientHello carried.
type KeyShare struct {
	Group string `json:"group"`
	Bytes int    `json:"bytes"`
}

// PhaseSplit is one phase's mean time in milliseconds by whose turn it was.
type PhaseSplit struct {
	Phase   string  `json:"phase"`
	Client  float64 `json:"client_ms"`
	Server  float64 `json:"server_ms"`
	Network float64 `json:"network_ms"`
}

// Capture is where a wire result's packets came from and what in them could
// not be decoded (Result.Capture).
type Capture struct {
	// Source is the capture file's base name, or "live IFACE" for a live
	// capture; Command the command run during a live capture (secrets
	// removed).
	Source  string   `json:"source"`
	Command []string `json:"command,omitempty"`
	Ports   []int    `json:"ports,omitempty"`
	SnapLen int      `json:"snaplen,omitempty"`
	Packets int64    `json:"packets"`
	Conns   int64    `json:"conns"`
	// CutAt is where a file cut short ends inside a packet (bytes); 0 if
	// it is whole.
	CutAt int64 `json:"cut_at,omitempty"`
	// OpenCap is the cap on connections the decoder follows at once, set
	// when it was reached (Unseen["untracked"] counts those not followed).
	OpenCap int `json:"open_cap,omitempty"`
	// Unseen counts what the decoder could not see, by kind:
	// "began-before-capture", "ended-after-capture", "lost" (bytes missing
	// from a stream), "reordered", "retransmitted", "truncated" (packets
	// cut by the snap length), "cut-short" (a file that ends mid-packet),
	// "dropped" (by the kernel during a live capture), "untracked"
	// (connections past OpenCap, not followed), "not-tcp",
	// "other-ports", "no-answer" (a SYN nobody answered), "undecodable" (a
	// stream whose protocol could not be read).
	Unseen map[string]int64 `json:"unseen,omitempty"`
}

// WireCheck sets tlsbench's own phase time beside the wire's for one
// variant and phase, over the same connections (connect --wire): the
// connections of each trial are those the capture shows starting within
// the trial's time.
type WireCheck struct {
	Variant string  `json:"variant"`
	Phase   string  `json:"phase"`
	Conns   int64   `json:"conns"`
	Tool    float64 `json:"tool_ms"` // mean
	Wire    float64 `json:"wire_ms"` // mean
	// RoundTrips are the mean client turns each counted.
	ToolRoundTrips float64 `json:"tool_round_trips"`
	WireRoundTrips float64 `json:"wire_round_trips"`
	// Client is the client stack of a variant other than Go's: tlsbench
	// times none of its phases, so the wire's are its only ones and Tool
	// and ToolRoundTrips are unset, not zero.
	Client string `json:"client,omitempty"`
	// Split divides the wire's mean time among the client, the server and
	// the network, as Wire.Split does.
	Split *PhaseSplit `json:"split,omitempty"`
}

// WireNegotiated is what the wire shows a client stack's variant
// negotiated over the connections starting within its connect trials
// (connect --wire): where the stack says what it negotiated, this is
// what it did.
type WireNegotiated struct {
	Variant string `json:"variant"`
	Client  string `json:"client"`
	// Conns counts the connections the capture showed, TLS those of them
	// over TLS.
	Conns int64 `json:"conns"`
	TLS   int64 `json:"tls"`
	// Negotiated is what the first TLS connection settled on, with its
	// server key and client certificate where TLS 1.2 shows them.
	Negotiated *Negotiated `json:"negotiated,omitempty"`
	// HelloRetries counts the connections whose server asked for another
	// key share, Resumed those that resumed a session.
	HelloRetries int64 `json:"hello_retries,omitempty"`
	Resumed      int64 `json:"resumed,omitempty"`
	// ClientCert is what the wire shows of a client certificate: "sent",
	// "none", or "hidden" where TLS 1.3 encrypts it.
	ClientCert string `json:"client_cert,omitempty"`
	// Failed is how the connections differ from what the variant asks
	// for ("asked for TLS 1.3, 40 of 40 connections negotiated TLS 1.2"),
	// a failed check as Go's connections' fails; "" when they agree.
	Failed string `json:"failed,omitempty"`
}

// WirePhasesPast says by how much, ms, the phase means of a wire trial
// add up past its total (0: they do not). A capture's phases tile each
// connection, and each mean is over all the trial's connections, as the
// total's is: more is a bug, or a result written before that was so
// (direct TLS and SSLRequest connections in one variant, each phase a
// mean over those that had it).
func WirePhasesPast(t Trial) float64 {
	sum := 0.0
	for _, p := range t.Phases {
		sum += p.Latency.Mean
	}
	// Sums of exact means may pass by a rounding error.
	if past := sum - t.Latency.Mean; past > 1e-9*max(1, t.Latency.Mean) {
		return past
	}
	return 0
}
