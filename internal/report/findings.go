package report

import (
	"github.com/tlsbench/tlsbench/internal/result"
)

// Kind tells what a Finding is.
type Kind string

// The kinds of findings.
const (
	// KindCaveat says what the run cannot tell: it stopped early, it has
	// nothing to compare, it has no plain baseline.
	KindCaveat Kind = "caveat"
	// KindFinding states a measured difference (or its absence).
	KindFinding Kind = "finding"
	// KindRecommendation is a change the findings support.
	KindRecommendation Kind = "recommendation"
)

// Topic is what a finding is about: one rule (rules.go) per topic.
type Topic string

// The topics, in the order the rules run.
const (
	TopicRun        Topic = "run"         // caveats: what the run cannot tell
	TopicConnect    Topic = "connect"     // what a new TLS connection costs
	TopicHelloRetry Topic = "hello-retry" // HelloRetryRequests
	TopicGroup      Topic = "group"       // key-exchange groups: the post-quantum hybrid
	TopicAuth       Topic = "auth"        // authentication methods
	TopicVersion    Topic = "version"     // TLS 1.3 against 1.2
	TopicKey        Topic = "key"         // server keys
	TopicResumption Topic = "resumption"  // resumed sessions, refused ones
	TopicTunnel     Topic = "tunnel"      // SSH tunnels, stunnel
	TopicPersistent Topic = "persistent"  // TLS on open connections (pool, stream)
	TopicRTT        Topic = "rtt"         // setup at emulated or predicted RTTs
	TopicPooling    Topic = "pooling"     // keeping connections open
	TopicPerConn    Topic = "per-conn"    // operations per connection (perconn.go)
	TopicCapacity   Topic = "capacity"    // the knee of a rate search (rate.go)
	TopicClients    Topic = "clients"     // client stacks (--client, clients.go)
	TopicCeiling    Topic = "ceiling"     // signing ceilings per key
	TopicCrypto     Topic = "crypto"      // primitives
	TopicAdvice     Topic = "advice"      // a capture's advice (advise.go)
	TopicReplica    Topic = "replication" // the replication link (replicate.go)
)

// Finding is one sentence drawn from a result's figures: the facts it
// states (Fact, one of the types of facts.go) and their wording (Text).
type Finding struct {
	Kind  Kind   `json:"kind"`
	Topic Topic  `json:"topic"`
	Fact  Fact   `json:"-"`
	Text  string `json:"text"`
}

// Findings states in plain words what r's figures show: caveats first,
// then findings, then the recommendations that follow from them. A
// difference is a finding only when its 95% interval (trials paired by
// round) excludes 0; otherwise it is reported as no measurable difference,
// and it never leads to a recommendation.
func Findings(r *result.Result) []Finding { return newIndex(r).findings() }

// findings runs the rules on the index and words what they found.
func (ix *index) findings() []Finding {
	r := &rules{ix: ix}
	r.caveats()
	if len(ix.r.Trials) > 0 && ix.comparable() && !isReplicate(ix.r) {
		r.connect()
		r.hello()
		r.groups()
		r.auth()
		r.versions()
		r.keys()
		r.resumption()
		r.clientCerts()
		r.negotiation()
		r.serverTLS()
		r.tunnels()
		r.paths()
		r.persistent()
		r.rtt()
		r.pooling()
		r.perConn()
		r.storm()
		r.clients()
	}
	r.wire()
	r.wireChecks()
	r.capacity()
	r.ceilings()
	r.crypto()
	r.hybridKex()
	r.advice()
	r.replication()
	var out []Finding
	for _, k := range []Kind{KindCaveat, KindFinding, KindRecommendation} {
		for _, f := range r.out {
			if f.Kind == k {
				f.Text = ix.phrase(f.Kind, f.Fact)
				out = append(out, f)
			}
		}
	}
	return out
}
