package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Cluster is a primary and its replica as the replicate experiment drives
// them (lab.PostgresCluster is one): only the replication link changes
// between its variants.
type Cluster interface {
	// SetLink switches the replication link and returns it as the
	// primary shows it, verified.
	SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error)
	LinkState(ctx context.Context) (cluster.LinkState, error)
	// Resync copies the whole primary over link l, timed (Galera: the
	// writesets a stopped node missed, an IST; see fullResyncer).
	Resync(ctx context.Context, l cluster.Link) (result.Resync, error)
	OpenPrimary(ctx context.Context, tls bool) (cluster.Conn, error)
	OpenReplica(ctx context.Context) (cluster.Conn, error)
	// PrimaryAddr is what a relay on the link dials.
	PrimaryAddr() string
	// CPU is each node's CPU time so far: the primary (Galera: the node
	// written to) first, then the replica the heartbeat is read on, then
	// any other node.
	CPU() ([]time.Duration, error)
	// Alive says which node is gone, and why, if one is.
	Alive() error
}

// fullResyncer is a Cluster whose Resync is incremental (Galera's IST)
// and which times a whole copy too (Galera's SST), after it.
type fullResyncer interface {
	FullResync(ctx context.Context, l cluster.Link) (result.Resync, error)
}

// linkDelayer is a Cluster that delays its replication links by
// cluster.Link.RTT itself (Galera: node 3 behind a delay link), where a
// relay on one address cannot.
type linkDelayer interface {
	DelaysLinks() bool
}

// linkAddrer is a Cluster whose primary takes a TLS replication link on
// a port of its own (Redis's tls-port): a relay on a TLS link dials
// LinkAddr(true), one on a plain link PrimaryAddr.
type linkAddrer interface {
	LinkAddr(tls bool) string
}

// ReplicateProgress is told the trial about to run (label) and how many
// are done of all.
type ReplicateProgress func(done, total int, label string)

// serverLagEvery is how often a trial samples the primary's replay_lag.
const serverLagEvery = 100 * time.Millisecond

// Replicate runs res.Replicate.Plan against c: a resync over each
// variant's link when the plan asks, then its trials, the variants
// interleaved round by round. Each trial is added to res as it finishes,
// so that an error or Ctrl-C keeps those before it; res records how the
// run ended.
func Replicate(ctx context.Context, res *result.Result, c Cluster, progress ReplicateProgress) (err error) {
	defer func() { res.End(ctx, err) }()
	if progress == nil {
		progress = func(int, int, string) {}
	}
	p := res.Replicate.Plan
	vs := p.Variants()
	for _, v := range vs {
		res.Variants = append(res.Variants, v.Variant())
	}
	var addr, tlsAddr string
	var relays []*netx.Relay
	delays := false
	if d, ok := c.(linkDelayer); ok {
		delays = d.DelaysLinks()
	}
	if p.RTT > 0 && !delays {
		// The link alone has the RTT: the replica dials the primary
		// through a delaying relay; the writers do not.
		relay := func(to string) (string, error) {
			rl, err := netx.StartRelay(ctx, to, (&netx.Dialer{}).WithRTT(p.RTT))
			if err != nil {
				return "", fmt.Errorf("the relay that emulates %s of RTT on the replication link: %w", plan.RTTLabel(p.RTT), err)
			}
			relays = append(relays, rl)
			return rl.Addr(), nil
		}
		defer func() {
			for _, rl := range relays {
				rl.Close()
			}
		}()
		if addr, err = relay(c.PrimaryAddr()); err != nil {
			return err
		}
		if la, ok := c.(linkAddrer); ok {
			if tlsAddr, err = relay(la.LinkAddr(true)); err != nil {
				return err
			}
		}
		res.Notes = append(res.Notes, fmt.Sprintf("rtt %s on the replication link only: the replica reaches the primary through tlsbench's relay on loopback, which delays each direction by half of it and passes the bytes untouched (TLS stays end to end between the nodes); the writers' link to the primary has none", plan.RTTLabel(p.RTT)))
	}
	link := func(v plan.ReplicaVariant) cluster.Link {
		l := cluster.Link{TLS: v.TLS, Key: v.Key, Sync: v.Sync, Addr: addr, RTT: p.RTT}
		if v.TLS != "off" && tlsAddr != "" {
			l.Addr = tlsAddr
		}
		return l
	}
	cells := len(p.Concurrency) * len(p.RateCells())
	res.PlannedTrials = len(vs) * cells * p.Trials
	if p.Knee != nil { // at most: the search stops where the bounds break
		res.PlannedTrials = len(vs) * cells * 2 * len(p.Knee.Steps())
	}
	total := res.PlannedTrials
	if p.Resync {
		// Once per link: the commit mode does not change a copy.
		var links []plan.ReplicaVariant
		for _, v := range vs {
			if !slices.ContainsFunc(links, func(l plan.ReplicaVariant) bool { return l.LinkID == v.LinkID }) {
				links = append(links, v)
			}
		}
		full, _ := c.(fullResyncer)
		copies := 1
		if full != nil {
			copies = 2
		}
		total += copies * len(links)
		for i, v := range links {
			progress(copies*i, total, "resync "+v.LinkID)
			rs, err := c.Resync(ctx, link(v))
			if err != nil {
				return fmt.Errorf("resync over %s: %w", v.LinkID, err)
			}
			rs.Link = v.LinkID
			res.Replicate.Resyncs = append(res.Replicate.Resyncs, rs)
			if full == nil {
				continue
			}
			progress(copies*i+1, total, "full resync "+v.LinkID)
			if rs, err = full.FullResync(ctx, link(v)); err != nil {
				return fmt.Errorf("full resync over %s: %w", v.LinkID, err)
			}
			rs.Link = v.LinkID
			res.Replicate.Resyncs = append(res.Replicate.Resyncs, rs)
		}
	}
	done := total - res.PlannedTrials
	if p.Knee != nil {
		err := replicateKnee(ctx, res, c, vs, link, func(label string) { progress(done, total, label); done++ })
		if err == nil {
			progress(done, total, "")
		}
		return err
	}
	for round := range p.Trials {
		for _, rate := range p.RateCells() {
			for _, n := range p.Concurrency {
				for _, v := range vs {
					load := replLoad{writers: n, rate: rate}
					label := load.label(p, v.ID) + fmt.Sprintf(" #%d", round+1)
					progress(done, total, label)
					load.seed = seedOf(label, 0)
					t, err := replicateTrial(ctx, p, c, v, link(v), round, load)
					if err != nil {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						return fmt.Errorf("%s, trial %d: %w", load.label(p, v.ID), round+1, err)
					}
					res.Trials = append(res.Trials, t)
					done++
				}
			}
		}
	}
	progress(done, total, "")
	return nil
}

// replLoad is the load of a replicate trial: its writers, in a closed
// loop, or serving arrivals at rate (writes/s) from the seeded schedule.
type replLoad struct {
	writers int
	rate    float64
	seed    uint64
}

// label names a trial of variant id under the load in progress lines and
// errors: "tls1.3 async", "tls1.3 async c=16", "tls1.3 async at 200/s".
func (l replLoad) label(p plan.Replication, id string) string {
	if len(p.Concurrency) > 1 {
		id += " " + plan.Label(l.writers)
	}
	if l.rate > 0 {
		id += " at " + plan.RateLabel(l.rate)
	}
	return id
}

// beats is a trial's heartbeats: when each commit was answered on the
// primary and when the replica first showed it, both on tlsbench's clock.
type beats struct {
	mu      sync.Mutex
	acked   map[int64]time.Time
	visible map[int64]time.Time
	last    int64 // the last seq the replica showed
	readNs  time.Duration
	reads   int64
}

// seen records that the replica shows seq at now: every beat up to it
// is visible from now on, if it was not before (a seq of an earlier trial
// is below last, where the trial's beats begin).
func (b *beats) seen(seq int64, now time.Time, took time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := b.last + 1; s <= seq; s++ {
		b.visible[s] = now
	}
	b.last = max(b.last, seq)
	b.readNs += took
	b.reads++
}

// lags is each acked beat's lag (0 when the replica had it before the
// commit answered) and how many acked beats were never seen.
func (b *beats) lags() (*stats.Recorder, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := stats.NewRecorder()
	var unseen int64
	for s, a := range b.acked {
		v, ok := b.visible[s]
		if !ok {
			unseen++
			continue
		}
		rec.Record(max(v.Sub(a), 0))
	}
	return rec, unseen
}

// replicateTrial is one trial: the link set and verified, load's writers
// on the primary for the warm-up and the duration, in a closed loop or
// serving writes at its rate (openWrites), a
// heartbeat written every p.Heartbeat and polled on the replica every
// p.LagPoll, the primary's replay_lag sampled, then a drain until the
// replica shows the last heartbeat (at most p.Timeout) and the link
// verified again.
func replicateTrial(ctx context.Context, p plan.Replication, c Cluster, v plan.ReplicaVariant, l cluster.Link, round int, load replLoad) (t result.Trial, err error) {
	if _, err := c.SetLink(ctx, l); err != nil {
		return t, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A node that dies ends the trial with why, not with each session's
	// error.
	fail := func(err error) {
		if aerr := nodeGone(c); aerr != nil {
			err = aerr
		}
		cancel(err)
	}
	conns := make([]cluster.Conn, 0, load.writers+2)
	defer func() {
		for _, cc := range conns {
			cc.Close()
		}
	}()
	open := func(f func() (cluster.Conn, error)) (cluster.Conn, error) {
		cc, err := f()
		if err == nil {
			conns = append(conns, cc)
		}
		return cc, err
	}
	for range load.writers + 1 { // the writers and the heartbeat's
		if _, err := open(func() (cluster.Conn, error) { return c.OpenPrimary(ctx, p.ClientTLS) }); err != nil {
			return t, errors.Join(fmt.Errorf("connecting to the primary: %w", err), c.Alive())
		}
	}
	reader, err := open(func() (cluster.Conn, error) { return c.OpenReplica(ctx) })
	if err != nil {
		return t, errors.Join(fmt.Errorf("connecting to the replica: %w", err), c.Alive())
	}
	op := func(f func(context.Context) error) error {
		octx, ocancel := context.WithTimeout(ctx, p.Timeout)
		defer ocancel()
		return f(octx)
	}

	begin := time.Now()
	start := begin.Add(p.Warmup)
	end := start.Add(p.Duration)
	var wg sync.WaitGroup
	recs := make([]*stats.Recorder, load.writers)
	errs := make([]int64, load.writers)
	samples := make([]string, load.writers)
	// write commits one write on writer i; false when it failed: counted,
	// and the trial ended when a node is gone or writes keep failing.
	write := func(i int) bool {
		err := op(conns[i].Write)
		if err == nil || ctx.Err() != nil {
			return err == nil
		}
		errs[i]++
		if samples[i] == "" {
			samples[i] = err.Error()
		}
		if c.Alive() != nil || errs[i] > 100 {
			fail(fmt.Errorf("writes fail: %w", err))
		}
		return false
	}
	var ow *openWrites // at a rate
	if load.rate > 0 {
		ow = startOpenWrites(ctx, load, begin, start, end, end.Add(p.Timeout), write)
	} else {
		for i := range load.writers {
			recs[i] = stats.NewRecorder()
			wg.Go(func() {
				for ctx.Err() == nil {
					t0 := time.Now()
					if !t0.Before(end) {
						return
					}
					if write(i) && !t0.Before(start) {
						recs[i].Record(time.Since(t0))
					}
				}
			})
		}
	}

	// The heartbeat and its poll run in the measured span only.
	if err := sleepUntil(ctx, start); err != nil {
		wg.Wait()
		if ow != nil {
			ow.wait()
		}
		return t, context.Cause(ctx)
	}
	cpu0, err := c.CPU()
	if err != nil && !errors.Is(err, cluster.ErrNoNodeCPU) {
		fail(err)
	}
	client0 := host.ProcessCPU()
	st0, err := c.LinkState(ctx)
	if err != nil {
		fail(err)
	}
	at0 := time.Now()
	// The row keeps the last trial's seq: this trial's begin above it,
	// at the clock's nanoseconds, which no trial's beats reach.
	base := time.Now().UnixNano()
	b := &beats{acked: map[int64]time.Time{}, visible: map[int64]time.Time{}, last: base}
	lastSeq := base
	beatDone := make(chan struct{})
	go func() { // the heartbeat writer
		defer close(beatDone)
		hb := conns[load.writers]
		tick := time.NewTicker(p.Heartbeat)
		defer tick.Stop()
		for seq := base + 1; time.Now().Before(end); seq++ {
			if err := op(func(ctx context.Context) error { return hb.Beat(ctx, seq) }); err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("the heartbeat on the primary: %w", err))
				}
				return
			}
			now := time.Now()
			b.mu.Lock()
			b.acked[seq], lastSeq = now, seq
			b.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	serverLag := stats.NewRecorder()
	var queueMax int64
	sampleDone := make(chan struct{})
	go func() { // the primary's own view
		defer close(sampleDone)
		for time.Now().Before(end) && ctx.Err() == nil {
			if st, err := c.LinkState(ctx); err == nil {
				if st.HasReplayLag {
					serverLag.Record(st.ReplayLag)
				}
				queueMax = max(queueMax, st.Queue)
			}
			select {
			case <-ctx.Done():
			case <-time.After(serverLagEvery):
			}
		}
	}()
	// The poll, on this goroutine: through the measured span, then until
	// the replica shows the last heartbeat, for at most p.Timeout.
	behind := false
	for ctx.Err() == nil {
		t0 := time.Now()
		var seq int64
		err := op(func(ctx context.Context) (err error) { seq, err = reader.Seen(ctx); return err })
		if err != nil {
			if ctx.Err() == nil {
				fail(fmt.Errorf("the heartbeat's read on the replica: %w", err))
			}
			break
		}
		now := time.Now()
		b.seen(seq, now, now.Sub(t0))
		if now.After(end) {
			<-beatDone
			b.mu.Lock()
			caught := b.last >= lastSeq
			b.mu.Unlock()
			if caught {
				break
			}
			if now.After(end.Add(p.Timeout)) {
				behind = true
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(p.LagPoll - min(time.Since(t0), p.LagPoll)):
		}
	}
	wg.Wait()
	if ow != nil {
		ow.wait()
	}
	<-beatDone
	<-sampleDone
	if err := context.Cause(ctx); err != nil {
		return t, err
	}
	cpu1, err := c.CPU()
	if err != nil && !errors.Is(err, cluster.ErrNoNodeCPU) {
		return t, err
	}
	nodes := cpuSpent(cpu0, cpu1)
	// The link is checked again: a walreceiver that dialed again during
	// the trial must have got the same link.
	st1, err := c.LinkState(ctx)
	if err == nil {
		err = l.Verify(st1)
	}
	if err != nil {
		return t, err
	}
	paused := float64(st1.Paused-st0.Paused) / float64(time.Since(at0))

	commit := stats.NewRecorder()
	var nerr int64
	sample := ""
	for i, r := range recs {
		if r != nil {
			commit.Merge(r)
		}
		nerr += errs[i]
		if sample == "" {
			sample = samples[i]
		}
	}
	var ol *result.OpenLoop
	if ow != nil {
		commit, ol = ow.figures()
		if q := ow.queued.Load(); q > 0 {
			nerr += q
			sample = cmp.Or(sample, errQueued.Error())
		}
	}
	lag, unseen := b.lags()
	t = result.Trial{Experiment: plan.Replicate, Variant: v.ID, Concurrency: load.writers, Round: round, Start: start,
		Elapsed: p.Duration, Ops: commit.Count(), Conns: int64(len(conns)),
		ClientCPU: host.ProcessCPU() - client0, ServerCPU: sumCPU(nodes),
		Latency: result.Hist(commit.Hist()), Open: ol}
	if nerr > 0 {
		t.Errors = map[string]int64{"write": nerr}
		t.ErrorSamples = map[string]string{"write": sample}
	}
	res := 0 * time.Nanosecond
	if b.reads > 0 {
		res = p.LagPoll + b.readNs/time.Duration(b.reads)
	}
	t.Replication = &result.Replication{
		Commit: t.Latency, Lag: result.Hist(lag.Hist()), LagResolution: res,
		Heartbeats: int64(len(b.acked)), Unseen: unseen, ServerLag: result.Hist(serverLag.Hist()),
		ServerQueueMax: queueMax, FlowControlPaused: paused,
		WritesPerSec: t.Throughput(), LinkBytes: st1.Sent - st0.Sent,
		PrimaryCPU: nodeAt(nodes, 0), ReplicaCPU: nodeAt(nodes, 1), NodeCPU: nodes,
		LinkEncrypted: st1.Encrypted, LinkTLS: st1.Version, Sync: cmp.Or(v.Sync, st1.SyncState), BehindTimeout: behind,
	}
	return t, nil
}

// cpuSpent is each node's CPU between two readings of Cluster.CPU; none
// when the nodes' CPU is not measured.
func cpuSpent(before, after []time.Duration) []time.Duration {
	if len(before) != len(after) || len(after) == 0 {
		return nil
	}
	out := make([]time.Duration, len(after))
	for i := range after {
		out[i] = after[i] - before[i]
	}
	return out
}

func sumCPU(ds []time.Duration) (total time.Duration) {
	for _, d := range ds {
		total += d
	}
	return total
}

// nodeAt is ds[i], 0 past its end.
func nodeAt(ds []time.Duration, i int) time.Duration {
	if i < len(ds) {
		return ds[i]
	}
	return 0
}

// nodeGone is why a node of c is gone, if one is. A node's death shows in
// its sessions' errors a moment before its process is seen to have
// exited ("terminating connection due to unexpected postmaster exit"), so
// it looks again for up to a second.
func nodeGone(c Cluster) error {
	for range 10 {
		if err := c.Alive(); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// sleepUntil waits until at, or ctx is done.
func sleepUntil(ctx context.Context, at time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(at)):
		return nil
	}
}
