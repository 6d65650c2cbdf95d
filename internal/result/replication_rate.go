package result

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// LagCapacity is one variant's outcome of a replicate write-rate search
// at one count of writers: the highest rate whose trial kept the
// heartbeat lag p99 under the lag SLO (and, in a synchronous mode, the
// commit p99 under the SLO), bracketed by the next step's rate, which
// broke it twice in a row.
type LagCapacity struct {
	Variant string `json:"variant"`
	Writers int    `json:"writers"`
	// Rate is the highest write rate sustained, 0 when not even the
	// search's first; Next the first rate that was not, and Why not; 0
	// and "" when the search reached its last step.
	Rate float64 `json:"rate"`
	Next float64 `json:"next,omitempty"`
	Why  string  `json:"why,omitempty"`
	// Trials is how many trials the search ran for it.
	Trials int `json:"trials"`
}

// OverLag says why a replicate trial at a write rate is not sustained,
// "" when it is: the open loop's own reasons (OverSLO: drops, failures, a
// rate the client could not offer, and with slo above 0 the commit p99
// over it), heartbeats the replica had not shown by the trial's drain
// (--timeout), or the heartbeat lag p99 over lagSLO.
func (t Trial) OverLag(lagSLO, slo time.Duration) string {
	if slo <= 0 {
		slo = math.MaxInt64 // an asynchronous commit does not wait for the replica
	}
	if why := t.OverSLO(slo); why != "" {
		if strings.HasPrefix(why, "p99 ") {
			why = "commit " + why
		}
		return why
	}
	r := t.Replication
	switch {
	case r == nil || t.Open == nil:
		return ""
	case r.Unseen > 0 || r.BehindTimeout:
		return fmt.Sprintf("%d of %d heartbeats not on the replica within --timeout", r.Unseen, r.Heartbeats)
	case r.Lag.P99 > float64(lagSLO)/1e6:
		return fmt.Sprintf("lag p99 %.1f ms above %v", r.Lag.P99, lagSLO)
	}
	return ""
}
