package report

import (
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The facts of the findings: each type holds the figures one kind of
// sentence states, as rules.go picks them and wording.go phrases them.
// Times are ms; a figure that could not be computed is NaN.

// Fact is the figures behind a finding: one of the types below.
type Fact interface{ isFact() }

// NothingMeasured: no trial finished and nothing else was measured.
type NothingMeasured struct{}

// Interrupted: the run was stopped after Finished of Planned trials
// (Planned 0 when the spec does not tell).
type Interrupted struct{ Finished, Planned int }

// StoppedOnError: the run ended on Error after Finished trials.
type StoppedOnError struct {
	Finished int
	Error    string
}

// OneVariant: only Variant was measured, so nothing can be compared.
// ByDefault says the user asked for no variant: it is what a URL target
// compares by default, of which its URL asks for plaintext only, or the
// server refused the rest (the run's warnings say which).
type OneVariant struct {
	Variant   string
	ByDefault bool
}

// NoPlain: no plain variant was measured.
type NoPlain struct{}

// NoDifference: new TLS connections at the lowest connect concurrency
// that differ measurably from plain in none of Contrasts (plain to TLS).
type NoDifference struct{ Contrasts []Contrast }

// SingleTrial: new TLS connections at the lowest connect concurrency
// that were compared with plain in one pair of trials each (Contrasts,
// plain to TLS): figures without an interval, neither a cost nor its
// absence.
type SingleTrial struct{ Contrasts []Contrast }

// ConnectCost is what a new TLS connection costs against a plain one:
// the dearest full handshake measured, or (Cheapest) the cheapest.
type ConnectCost struct {
	Contrast
	Cheapest bool
}

// LargestPhase: a phase other than TLS takes MS of a Plain connection's
// Total, more on average than TLS adds in the cheapest contrast TLS: More
// when measurably so, else about as much. Diff is the phase minus what
// TLS adds, round by round (its interval decides More).
type LargestPhase struct {
	Plain     string
	Phase     string
	MS, Total float64
	TLS       Contrast
	More      bool
	Diff      stats.Summary
}

// HelloRetry: the server answered the TLS 1.3 hello of Variants with a
// HelloRetryRequest for Groups (as negotiated, e.g. CurveP256); the TLS
// handshake took RoundTrips at the lowest connect concurrency. Every is
// set when Variants are every TLS 1.3 variant, two or more.
type HelloRetry struct {
	Variants, Groups []string
	RoundTrips       float64
	Every            bool
}

// VersionChange is TLS 1.2 against TLS 1.3 (Pairs, 1.2 to 1.3): Saved is
// the round trips 1.3 saves (NaN if unknown); where it saves one, it
// took up to LocalMore more local time, which the round trip repays
// beyond an RTT of EvenAt (0: it took none more). At is the largest
// RTT the run models (0: none) and SavesAt what 1.3 saves there.
type VersionChange struct {
	Pairs             []Contrast
	Saved             float64
	LocalMore, EvenAt float64
	At                time.Duration
	SavesAt           float64
}

// Reason says why TLS 1.3 is preferred.
type Reason string

// The reasons to prefer TLS 1.3.
const (
	SavesRoundTrip Reason = "saves a round trip" // and was not measurably slower
	// SavesRoundTripUntimed: it saves a round trip; one trial each cannot
	// tell whether it is slower.
	SavesRoundTripUntimed Reason = "saves a round trip, untimed"
	BeyondRTT             Reason = "beyond an RTT"      // the round trip outweighs the local time
	MoreConnections       Reason = "more connections/s" // it made measurably more
)

// PreferTLS13 recommends TLS 1.3 over 1.2.
type PreferTLS13 struct {
	Because    Reason
	RoundTrips float64 // saved
	BeyondMS   float64 // the RTT beyond which it pays (BeyondRTT)
}

// KeyChange is server key Key against Ref in each TLS setting (Pairs, Ref
// to Key); the server CPU per connection with each where measured in the
// first setting that has both (CPUAt names its Ref variant; "" if none).
type KeyChange struct {
	Key, Ref       string
	Pairs          []Contrast
	CPURef, CPUKey float64
	CPUAt          string
}

// WeakKeyFastest: Key made the most connections per second in the setting
// of Contrast (the best deployable key to Key), measurably so, but is too
// weak to deploy.
type WeakKeyFastest struct {
	Key string
	Contrast
}

// UseKey recommends server key Best over Worst: Contrast is between their
// variants, Worst against Best if that is measurable, else the other way.
type UseKey struct {
	Best, Worst string
	Contrast
}

// Share is how many of a variant's connections resumed a session.
type Share struct {
	Variant        string
	Resumed, Conns int64
}

// ResumeRefused: the server resumed fewer than half the sessions the
// clients of these variants offered to resume.
type ResumeRefused struct{ Variants []Share }

// Resumption is resumed sessions against full handshakes (Pairs, full to
// resumed); SavesRoundTrip when one saved a round trip.
type Resumption struct {
	Pairs          []Contrast
	SavesRoundTrip bool
}

// LetResume recommends resumption: Best is the largest gain measured.
type LetResume struct{ Best Contrast }

// AuthPair is a contrast between auth methods and the auth phase's time
// with each (NaN where unknown).
type AuthPair struct {
	Contrast
	FromMS, ToMS float64
}

// AuthChange is auth Method against Ref (Pairs, Ref to Method). TLS is the
// headline TLS cost when Method's extra auth time exceeds it on average,
// else nil; More says it does measurably, else it is about as much. Diff
// is the extra auth time minus what TLS adds, round by round.
type AuthChange struct {
	Method, Ref string
	Pairs       []AuthPair
	TLS         *Contrast
	More        bool
	Diff        stats.Summary
}

// TunnelCost is what a new connection costs through the tunnel Variant
// at Concurrency: against plain (Plain) and against the TLS handshake to
// beat (Versus, tunnel against TLS); SetupMS is the tunnel's own set-up,
// once per run (NaN if unknown).
type TunnelCost struct {
	Variant     string
	Concurrency int
	Plain       *Contrast
	Versus      *Contrast
	SetupMS     float64
}

// UseTunnel recommends the tunnel Versus.To: it made measurably more
// connections per second than TLS (Versus.From).
type UseTunnel struct{ Versus Contrast }

// PersistentSame: on persistent connections of Experiment (pool, stream)
// every TLS or tunnelled variant (Variants, against plain at every
// concurrency of Concurrencies) differs alike: not measurably, or
// measurably in the same direction, by Lo to Hi percent. Tunnelled is
// set when a variant is a tunnel (encryption rather than TLS). Single is
// set when every contrast rests on one pair of trials: Lo to Hi are then
// figures without an interval.
type PersistentSame struct {
	Experiment    plan.Experiment
	Variants      []string
	Concurrencies []int
	Measurable    bool
	Single        bool
	Lo, Hi        float64
	Tunnelled     bool
}

// PersistentVariant is one variant against plain on persistent
// connections, at each concurrency (Contrasts, plain to it).
type PersistentVariant struct {
	Experiment plan.Experiment
	Variant    string
	Contrasts  []Contrast
}

// RTTItem is what TLS adds to a connection's setup at one RTT with
// Variant: RoundTrips more than plain, Measured with emulated latency
// (NaN if not) and Predicted by the round-trip model, ms.
type RTTItem struct {
	Variant             string
	RoundTrips          float64
	Measured, Predicted float64
}

// RTTSetup is what TLS adds to connection setup at RTT: measured (Items
// with Measured) or, where nothing was measured there, predicted. Within
// is the model's largest error against a measurement there, a fraction.
type RTTSetup struct {
	RTT    time.Duration
	Items  []RTTItem
	Within float64
}

// Pool recommends pooling: Dearest is the dearest new TLS connection;
// Persistent the largest cost TLS had on persistent connections (pool),
// in percent: 0 when none was measurable, NaN without a pool experiment
// or with one trial of it.
type Pool struct {
	Dearest    Contrast
	Persistent float64
}

// MeasureTunnel recommends measuring a tunnel: at RTT, TLS added (or,
// unless Measured, is predicted to add) MS to every new connection with
// Variant.
type MeasureTunnel struct {
	RTT      time.Duration
	MS       float64
	Variant  string
	Measured bool
}

// Ceiling sets the connection rate measured with a key against what the
// server can sign for.
type Ceiling struct{ CeilingRow }

// SignRates are a library's signatures per second on one core, fastest
// first.
type SignRates struct {
	Library string
	Signs   []result.Primitive
}

// FastKey recommends keys of Fast over Slow: one core of Library signs
// Fast.PerCore/Slow.PerCore as many.
type FastKey struct {
	Library    string
	Fast, Slow result.Primitive
}

// CipherRates are what one core of Library encrypts, Size-byte records.
type CipherRates struct {
	Library string
	Size    int
	Ciphers []result.Primitive
}

func (NothingMeasured) isFact()   {}
func (Interrupted) isFact()       {}
func (StoppedOnError) isFact()    {}
func (OneVariant) isFact()        {}
func (NoPlain) isFact()           {}
func (NoDifference) isFact()      {}
func (SingleTrial) isFact()       {}
func (ConnectCost) isFact()       {}
func (LargestPhase) isFact()      {}
func (HelloRetry) isFact()        {}
func (VersionChange) isFact()     {}
func (PreferTLS13) isFact()       {}
func (KeyChange) isFact()         {}
func (WeakKeyFastest) isFact()    {}
func (UseKey) isFact()            {}
func (ResumeRefused) isFact()     {}
func (Resumption) isFact()        {}
func (LetResume) isFact()         {}
func (AuthChange) isFact()        {}
func (TunnelCost) isFact()        {}
func (UseTunnel) isFact()         {}
func (PersistentSame) isFact()    {}
func (PersistentVariant) isFact() {}
func (RTTSetup) isFact()          {}
func (Pool) isFact()              {}
func (MeasureTunnel) isFact()     {}
func (Ceiling) isFact()           {}
func (SignRates) isFact()         {}
func (FastKey) isFact()           {}
func (CipherRates) isFact()       {}
