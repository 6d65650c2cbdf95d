package plan

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Replicate is the experiment of `tlsbench replicate`: writes on a
// primary, the replica's lag behind them, with only the replication link
// changing between variants.
const Replicate Experiment = "replicate"

// ReplicaSyncs are the commit modes of a replicate variant: asynchronous
// (off), and synchronous with synchronous_commit on (the replica has the
// WAL on disk) or remote_apply (the replica has applied it).
var ReplicaSyncs = []string{"off", "on", "remote_apply"}

// ReplicaLabs are the engines whose lab cluster replicate builds:
// mariadb is a primary and an asynchronous replica, galera three nodes.
var ReplicaLabs = []string{"postgres", "redis", "mariadb", "galera"}

// GaleraSync is the one commit mode of a Galera cluster: each write
// certified by every node before its commit answers.
const GaleraSync = "galera"

// Replicate's bounds and defaults.
const (
	DefaultHeartbeat = 20 * time.Millisecond // within the 10-50 ms a heartbeat table usually ticks at
	DefaultLagPoll   = 2 * time.Millisecond  // the heartbeat lag's resolution, with the read's own time
	MaxRTTReplicate  = 10 * time.Second
)

// Replication is what a replicate run measures. Build it with
// NewReplication, which applies defaults and validates.
type Replication struct {
	// Lab is the engine whose lab cluster is built (ReplicaLabs).
	Lab string `json:"lab"`
	// TLS is the replication link's variants: off, 1.2, 1.3.
	TLS []string `json:"tls"`
	// Keys are the primary's certificate keys of the TLS variants.
	Keys []string `json:"keys"`
	// Sync is the commit modes (ReplicaSyncs; GaleraSync alone for
	// galera); nil is off.
	Sync []string `json:"sync"`
	// RTT is the emulated round trip of the replication link alone
	// (Galera: of every group link to node 3, behind a delay link).
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// ClientTLS makes the writers' link to the primary TLS (Go's
	// default, 1.3) in every variant; plain by default.
	ClientTLS bool `json:"client_tls,omitempty"`
	// Concurrency is the writers: sessions on the primary, each a closed
	// loop; several (-c 1,4,16) sweep them, each a cell of every variant,
	// interleaved. At a rate (Rates, Knee) they serve the arrivals.
	Concurrency []int `json:"concurrency"`
	// Rates are write rates (arrivals per second) instead of the closed
	// loop, each a cell; Knee searches per variant the highest rate at
	// which the heartbeat lag p99 stays under LagSLO and, in a
	// synchronous commit mode, the commit p99 under SLO (replication_rate.go).
	Rates    []float64     `json:"rates,omitempty"`
	Knee     *Knee         `json:"knee,omitempty"`
	LagSLO   time.Duration `json:"lag_slo_ns,omitempty"`
	SLO      time.Duration `json:"slo_ns,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	Trials   int           `json:"trials"`
	// Heartbeat is how often the heartbeat row is written, LagPoll how
	// often the replica is read for it.
	Heartbeat time.Duration `json:"heartbeat_ns"`
	LagPoll   time.Duration `json:"lag_poll_ns"`
	// Timeout bounds one operation, a link's switch, and how long the
	// replica may take to show the last heartbeat after the writes stop
	// (a trial past it is marked behind).
	Timeout time.Duration `json:"timeout_ns"`
	// Resync copies the whole primary over each variant's link once
	// before the trials (pg_basebackup), timed; on Galera an IST and an
	// SST to node 3.
	Resync bool `json:"resync"`
	// Primary and Replica are the URLs of a cluster of the user's own
	// (postgres://), measured as it is: one variant, its link as
	// configured; "" for a lab cluster. Stored redacted; the secret
	// ones are PrimaryURL and ReplicaURL.
	Primary                string `json:"primary,omitempty"`
	Replica                string `json:"replica,omitempty"`
	primaryURL, replicaURL string

	givenFields
}

// NewReplication fills defaults into raw and validates it.
func NewReplication(raw Replication) (Replication, error) {
	r := raw
	if r.Primary != "" || r.Replica != "" {
		return r.ownCluster()
	}
	if r.Lab == "" {
		r.Lab = "postgres"
	}
	if err := r.version(); err != nil {
		return r, err
	}
	if !slices.Contains(ReplicaLabs, r.Engine()) {
		return r, errorf("⟨lab⟩: no lab cluster of %q: use %s", r.Lab, strings.Join(ReplicaLabs, ", "))
	}
	if r.Lab == "galera" {
		if len(r.Sync) > 0 && !slices.Equal(r.Sync, []string{GaleraSync}) {
			return r, errorf("⟨sync⟩: a Galera cluster commits one way (each write certified by every node before it answers): drop it")
		}
		r.Sync = []string{GaleraSync}
	}
	if len(r.TLS) == 0 {
		r.TLS = []string{"off", "1.3"}
	}
	for _, t := range r.TLS {
		if !slices.Contains([]string{"off", "1.2", "1.3"}, t) {
			return r, errorf("⟨tls⟩: %q is no replication link: use off, 1.2 or 1.3", t)
		}
	}
	if len(r.Keys) == 0 {
		r.Keys = []string{DefaultKey}
	}
	for _, k := range r.Keys {
		if !slices.Contains(KeyTypes, k) {
			return r, errorf("⟨keys⟩: unknown key type %q: use %s", k, strings.Join(KeyTypes, ", "))
		}
	}
	if len(r.Sync) == 0 {
		r.Sync = []string{"off"}
	}
	for _, s := range r.Sync {
		if !slices.Contains(ReplicaSyncs, s) && r.Engine() != "galera" {
			return r, errorf("⟨sync⟩: %q is no commit mode: use off (asynchronous), on or remote_apply", s)
		}
	}
	for _, l := range [][]string{r.TLS, r.Keys, r.Sync} {
		if d := firstDuplicate(l); d != "" {
			return r, errorf("%q is given twice: give each variant once", d)
		}
	}
	switch r.Engine() {
	case "redis":
		switch {
		case len(r.Sync) > 1 || r.Sync[0] != "off":
			return r, errorf("⟨sync⟩: Redis replicates asynchronously only: use off")
		}
	case "mariadb":
		switch {
		case len(r.Sync) > 1 || r.Sync[0] != "off":
			return r, errorf("⟨sync⟩: the MariaDB lab replica is asynchronous only (semi-synchronous replication is to come): use off")
		case r.Resync:
			return r, errorf("⟨resync⟩: no MariaDB resync figure: the tables a new replica copies are nearly empty before the trials, so a copy's rate says nothing (each run times the replica's build from its snapshot): drop it")
		}
	case "galera":
		switch {
		case r.ClientTLS && slices.Contains(r.TLS, "1.2"):
			// The pin is the node's OpenSSL configuration, its mysqld's too.
			return r, errorf("⟨client_tls⟩: a Galera node's TLS 1.2 holds for its clients too, so the writers' link would change with the variant: drop --client-tls or TLS 1.2")
		}
	}
	if len(r.Concurrency) == 0 && !r.Given("concurrency") {
		r.Concurrency = []int{4}
	}
	if len(r.Concurrency) == 0 {
		return r, errorf("⟨concurrency⟩: give the writers, e.g. 4, or a list to sweep, e.g. 1,4,16")
	}
	for _, c := range r.Concurrency {
		if c < 1 || c > 256 {
			return r, errorf("⟨concurrency⟩: %d writers is out of range: use 1 to 256", c)
		}
	}
	if err := twice("⟨concurrency⟩", r.Concurrency, strconv.Itoa); err != nil {
		return r, err
	}
	if err := r.rate(); err != nil {
		return r, err
	}
	if r.Duration == 0 && !r.Given("duration") {
		r.Duration = DefaultDuration
	}
	if r.Warmup == 0 && !r.Given("warmup") {
		r.Warmup = DefaultWarmup
	}
	if r.Trials == 0 && !r.Given("trials") {
		r.Trials = DefaultTrials
	}
	if r.Timeout == 0 && !r.Given("timeout") {
		r.Timeout = DefaultTimeout
	}
	if r.Heartbeat == 0 && !r.Given("heartbeat") {
		r.Heartbeat = DefaultHeartbeat
	}
	if r.LagPoll == 0 && !r.Given("lag_poll") {
		r.LagPoll = DefaultLagPoll
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"duration", r.Duration}, {"timeout", r.Timeout}, {"heartbeat", r.Heartbeat}, {"lag_poll", r.LagPoll}} {
		if d.v <= 0 {
			return r, errorf("⟨%s⟩: %v is no time: give a positive duration", d.field, d.v)
		}
	}
	if r.Warmup < 0 {
		return r, errorf("⟨warmup⟩: %v is negative: give 0 or more", r.Warmup)
	}
	if r.Trials < 1 {
		return r, errorf("⟨trials⟩: %d: give at least 1 trial (3 or more for intervals)", r.Trials)
	}
	if r.LagPoll > r.Heartbeat {
		return r, errorf("⟨lag_poll⟩: %v is slower than the heartbeat (%v): poll at least as often as it beats", r.LagPoll, r.Heartbeat)
	}
	if r.RTT < 0 || r.RTT > MaxRTTReplicate {
		return r, errorf("⟨rtt⟩: %v is out of range: use 0 to %v", r.RTT, MaxRTTReplicate)
	}
	return r, nil
}

// ownCluster checks a plan for the user's own cluster: two postgres://
// URLs, none of the lab's link settings, the defaults of the load.
func (r Replication) ownCluster() (Replication, error) {
	for _, f := range []string{"lab", "tls", "keys", "sync", "rtt", "resync", "client_tls"} {
		if r.Given(f) {
			return r, errorf("⟨%s⟩ changes a lab cluster's link: your own cluster is measured as it is (drop it, or use --lab postgres)", f)
		}
	}
	if r.Replica == "" {
		return r, errorf("⟨replica⟩: give the replica's URL (--replica postgres://...) beside the primary's")
	}
	if r.Primary == "" {
		return r, errorf("⟨replica⟩ is a cluster of your own: give the primary's URL too (tlsbench replicate PRIMARY_URL --replica URL)")
	}
	for _, u := range []string{r.Primary, r.Replica} {
		if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
			return r, errorf("%s: your own cluster is measured on PostgreSQL only so far: give postgres:// URLs", Redact(u))
		}
	}
	r.primaryURL, r.replicaURL = r.Primary, r.Replica
	r.Primary, r.Replica = Redact(r.Primary), Redact(r.Replica)
	r.Lab, r.TLS, r.Keys, r.Sync = "", []string{""}, nil, []string{""}
	lab := r
	lab.Primary, lab.Replica, lab.Lab, lab.TLS, lab.Sync = "", "", "postgres", nil, nil
	d, err := NewReplication(lab)
	if err != nil {
		return r, err
	}
	r.Concurrency, r.Duration, r.Warmup, r.Trials, r.Timeout, r.Heartbeat, r.LagPoll = d.Concurrency, d.Duration, d.Warmup, d.Trials, d.Timeout, d.Heartbeat, d.LagPoll
	r.Rates, r.Knee, r.LagSLO, r.SLO = d.Rates, d.Knee, d.LagSLO, d.SLO
	return r, nil
}

// UnmarshalJSON reads a plan, also one of a tlsbench before -c took a
// list, whose concurrency was one number.
func (r *Replication) UnmarshalJSON(b []byte) error {
	type fields Replication
	var aux struct {
		*fields
		Concurrency json.RawMessage `json:"concurrency"`
	}
	aux.fields = (*fields)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	var one int
	switch {
	case len(aux.Concurrency) == 0:
		return nil
	case json.Unmarshal(aux.Concurrency, &one) == nil:
		r.Concurrency = []int{one}
		return nil
	}
	return json.Unmarshal(aux.Concurrency, &r.Concurrency)
}

// URLs are the secret URLs of the user's own cluster ("" for a lab's):
// never stored or printed.
func (r Replication) URLs() (primary, replica string) { return r.primaryURL, r.replicaURL }

func firstDuplicate(xs []string) string {
	for i, x := range xs {
		if slices.Contains(xs[:i], x) {
			return x
		}
	}
	return ""
}

// ReplicaVariant is one replication link of a replicate run.
type ReplicaVariant struct {
	// ID is the link and the commit mode: "tls1.3 async", "plain
	// sync=remote_apply".
	ID string `json:"id"`
	// LinkID is the link alone: "tls1.3", "tls1.3 ecdsa-p256", "plain".
	LinkID string `json:"link"`
	TLS    string `json:"tls"`
	Key    string `json:"key,omitempty"`
	Sync   string `json:"sync"`
	// Baseline marks the plain link of its Sync, which the TLS links of
	// that Sync are compared with.
	Baseline bool `json:"baseline,omitempty"`
}

// Variants is the matrix: each commit mode, each link (TLS variants once
// per key), plain first within a mode.
func (r Replication) Variants() []ReplicaVariant {
	if r.Primary != "" {
		// The user's cluster: one variant, its link as configured (TLS
		// and Sync "": whatever the servers show).
		return []ReplicaVariant{{ID: "as configured", LinkID: "as configured", Baseline: true}}
	}
	var out []ReplicaVariant
	for _, s := range r.Sync {
		mode := "async"
		switch s {
		case "off":
		case GaleraSync:
			mode = GaleraSync
		default:
			mode = "sync=" + s
		}
		tls := slices.Clone(r.TLS)
		slices.SortStableFunc(tls, func(a, b string) int { // plain first: the baseline
			return boolInt(b == "off") - boolInt(a == "off")
		})
		for _, t := range tls {
			if t == "off" {
				out = append(out, ReplicaVariant{ID: "plain " + mode, LinkID: "plain", TLS: t, Sync: s, Baseline: true})
				continue
			}
			for _, k := range r.Keys {
				link := "tls" + t
				if len(r.Keys) > 1 {
					link += " " + k
				}
				out = append(out, ReplicaVariant{ID: link + " " + mode, LinkID: link, TLS: t, Key: k, Sync: s})
			}
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Variant is v as a result's variants list it: its ID, link TLS and key
// (Sync is in the ID and in each trial).
func (v ReplicaVariant) Variant() Variant {
	return Variant{ID: v.ID, TLS: v.TLS, Key: v.Key, Baseline: v.Baseline}
}
