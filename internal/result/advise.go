package result

// Advise experiment: a capture's connections turned into an observed
// profile per server endpoint and the changes that would apply to it, each
// with what it is predicted to save (package advise). An advise result has
// no trials: Capture says what was read, Advise holds the rest.

// Advised is one server endpoint's profile and the advice for it.
type Advised struct {
	Profile Profile  `json:"profile"`
	Advice  []Change `json:"advice"`
	// Calibration is where the CPU figures came from (--calibration), nil
	// without one: then no CPU figure is given.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Calibrate is the tlsbench command that would measure the CPU figures
	// the advice lacks, "" when none is lacking.
	Calibrate string `json:"calibrate,omitempty"`
	// Replays are the lab replays that measured the advice's figures
	// (advise --confirm): one, and one more for PostgreSQL's direct TLS.
	Replays []Replay `json:"replays,omitempty"`
}

// Replay is what a lab replay of the profile ran (advise --confirm): the
// connect experiment against a lab server of the profile's engine, now
// and one variant per change, interleaved.
type Replay struct {
	Lab    string `json:"lab"`              // --lab ENGINE, or builtin
	Server string `json:"server,omitempty"` // software and version
	// Client is the client stack that made the connections, and why.
	Client string `json:"client"`
	// Rate is the arrivals per second offered (Poisson), 0 for a closed
	// loop of one connection at a time; RTT the emulated round trip, ms
	// (0: the bare link); PerConn the operations per connection.
	Rate    float64 `json:"rate,omitempty"`
	RTT     float64 `json:"rtt_ms,omitempty"`
	PerConn int     `json:"per_conn"`
	Trials  int     `json:"trials"`
	// Variants are the variants measured, now's first.
	Variants []string `json:"variants"`
	// Notes say where the replay departs from the profile.
	Notes []string `json:"notes,omitempty"`
	// Error is why the replay did not run or failed; the advice then
	// stands as predictions.
	Error string `json:"error,omitempty"`
}

// Profile is what a capture showed of one server endpoint's traffic.
type Profile struct {
	Server string `json:"server"` // address:port
	// Engine is what the connections spoke, as a driver names it:
	// postgres, mysql, redis, mongodb, http; "" when unknown (TLS from the
	// first byte on an unknown port).
	Engine string `json:"engine"`
	// EngineFrom is "--engine" where the user named the engine the
	// capture did not tell.
	EngineFrom string `json:"engine_from,omitempty"`
	Protocol   string `json:"protocol"` // as the wire decoder names it
	Conns      int64  `json:"conns"`
	// TLSConns counts the connections that negotiated TLS.
	TLSConns int64 `json:"tls_conns"`
	// Span is from the first connection's SYN to the last one's end, s.
	Span float64 `json:"span_s"`
	// Rate is new connections per second: PerSecond counts the
	// connections begun in each second from the first SYN; Mean is Conns
	// over Span, Peak the busiest second (0 for a span under 2 s, too
	// short for one).
	Rate Rate `json:"rate"`
	// Ops is operations per connection: for a plaintext protocol the round
	// trips after the login (each a query or request), for TLS the
	// encrypted flights after the handshake, the login's included
	// (encryption hides which is which); OpsKind says which.
	Ops     Dist   `json:"ops_per_conn"`
	OpsKind string `json:"ops_kind"`
	// RTT is the TCP handshake's round trip at the capture point, ms;
	// Setup each connection's time up to its close (every phase but
	// close), ms; Bytes both directions' payload per connection.
	RTT   Dist `json:"rtt_ms"`
	Setup Dist `json:"setup_ms"`
	Bytes Dist `json:"bytes"`
	// Versions, Suites and Groups are the TLS connections' shares.
	Versions []Share `json:"versions,omitempty"`
	Suites   []Share `json:"suites,omitempty"`
	Groups   []Share `json:"groups,omitempty"`
	// HelloRetries, Resumed, ClientCerts and SSLRequests count TLS
	// connections: a HelloRetryRequest, a resumed session, a client
	// certificate sent (visible in TLS 1.2 only), PostgreSQL's SSLRequest
	// before the handshake (direct TLS has none).
	HelloRetries int64 `json:"hello_retries"`
	Resumed      int64 `json:"resumed"`
	ClientCerts  int64 `json:"client_certs"`
	SSLRequests  int64 `json:"ssl_requests,omitempty"`
	// CertChainBytes is the server's certificate chain where TLS 1.2 shows
	// it; ServerKey its leaf key ("RSA-2048"), and ServerKeyFrom where
	// that came from: "capture", "--server-key", or "assumed".
	CertChainBytes int    `json:"cert_chain_bytes,omitempty"`
	ServerKey      string `json:"server_key,omitempty"`
	ServerKeyFrom  string `json:"server_key_from,omitempty"`
	// Login counts the TLS connections of PostgreSQL and MySQL by their
	// login after the handshake: its round trips, and the authentication
	// that takes as many ("SCRAM: 3 round trips"), told by the size of
	// the server's answers (PostgreSQL) or assumed, and said.
	Login []Share `json:"login,omitempty"`
	// ClientTLS is the TLS library the first ClientHello looks like:
	// "OpenSSL" (it offers X448, which Go never does), "Go crypto/tls"
	// (the post-quantum hybrid without X448), "" where it cannot tell.
	ClientTLS string `json:"client_tls,omitempty"`
	// Split is each phase's mean time per connection by whose turn it
	// was, as the wire splits it.
	Split []PhaseSplit `json:"split,omitempty"`
}

// Rate is new connections per second.
type Rate struct {
	Mean      float64 `json:"mean"`
	Peak      float64 `json:"peak,omitempty"`
	PerSecond []int64 `json:"per_second"`
}

// Dist summarizes one figure over the profile's connections.
type Dist struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Share is how many connections had one value.
type Share struct {
	Name  string `json:"name"`
	Conns int64  `json:"conns"`
}

// Change is one change that may apply to the profile, and what it is
// predicted to do.
type Change struct {
	Change string `json:"change"` // "TLS 1.2 → 1.3"
	// Applies is why it applies to what was observed, or, with NotApplicable
	// set, why it does not.
	Applies       string `json:"applies"`
	NotApplicable bool   `json:"not_applicable,omitempty"`
	// Conns is how many of the profile's connections it changes.
	Conns int64 `json:"conns"`
	// RoundTripsSaved is per connection, mean over all of the profile's;
	// RoundTripsMeasured the same as the lab replay counted them.
	RoundTripsSaved    float64  `json:"round_trips_saved"`
	RoundTripsMeasured *float64 `json:"round_trips_measured,omitempty"`
	// Model says in words how the prediction was made.
	Model  string `json:"model,omitempty"`
	Setup  Figure `json:"setup_ms"`
	P95    Figure `json:"p95_setup_ms"`
	Server Figure `json:"server_cpu_ms"`
	Client Figure `json:"client_cpu_ms"`
	// Cores is the server CPU at the observed mean connection rate.
	Cores    Figure `json:"server_cores"`
	Bytes    Figure `json:"bytes"`
	Capacity Figure `json:"capacity_conn_s"`
	// Needs names the calibration variants the CPU figures take (from →
	// to); Missing those the calibration given lacked.
	Needs   string   `json:"needs,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// Substituted says which calibration cell stood in for one it lacks
	// (one that negotiated another group, or a HelloRetryRequest the
	// capture did not show), and what that cell negotiated; or that the
	// bytes are the changed cell's own, where the cells' difference would
	// leave fewer than none.
	Substituted []string `json:"substituted,omitempty"`
	// Unmeasured says why a lab replay measured none of the figures.
	Unmeasured string `json:"unmeasured,omitempty"`
}

// Figure is one predicted quantity: now (observed, or for CPU the
// calibration's variant like the observed, or without one the lab
// replay's), predicted, the 95% interval's half-width of each (for CPU
// figures and the cores that follow, PredictedCI is the predicted
// saving's: the calibration's cells paired round by round); measured
// (from a lab replay of the profile, advise --confirm) is now less the
// saving the replay measured, paired round by round and scaled to the
// share of connections the change changes, MeasuredCI that saving's
// interval, and ErrorPct the measured saving's difference from the
// predicted one in percent of the predicted. Absent values are omitted,
// never zero.
type Figure struct {
	Now         *float64 `json:"now,omitempty"`
	NowCI       *float64 `json:"now_ci,omitempty"`
	Predicted   *float64 `json:"predicted,omitempty"`
	PredictedCI *float64 `json:"predicted_ci,omitempty"`
	Measured    *float64 `json:"measured,omitempty"`
	MeasuredCI  *float64 `json:"measured_ci,omitempty"`
	ErrorPct    *float64 `json:"error_pct,omitempty"`
}

// Saved is Now − Predicted, false when either is missing.
func (f Figure) Saved() (float64, bool) {
	if f.Now == nil || f.Predicted == nil {
		return 0, false
	}
	return *f.Now - *f.Predicted, true
}

// Calibration names the lab run the CPU figures came from.
type Calibration struct {
	Source  string `json:"source"`  // the file's base name
	Engine  string `json:"engine"`  // its target's engine
	Server  string `json:"server"`  // software and version, where tlsbench started it
	Started string `json:"started"` // when it ran, RFC 3339
	// Lab: advise --lab ran it on this machine, just before the advice.
	Lab bool `json:"lab,omitempty"`
	// Rate is the new connections per second its connect trials offered
	// (0: a closed loop); RTT the emulated round trip of the trials the
	// advice took, ms (0: the bare link). A connection's CPU depends on
	// both.
	Rate float64 `json:"rate,omitempty"`
	RTT  float64 `json:"rtt_ms,omitempty"`
}
