package export

import (
	"math"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// The exponential histograms durations are exported as: scale 7 (bucket
// bounds 2^(1/128) apart, 0.54% wide) while a series' values span at most
// MaxBuckets of them (16 octaves: 100 µs to 6.5 s), coarser only beyond.
// A quantile read at a bucket's geometric middle is then within 0.27% of
// any value in the bucket, and the HdrHistogram's own 3 digits add 0.1%:
// p50 and p99 stay within 1% of the HdrHistogram's down to scale 6.
const (
	MaxScale   = 7
	MaxBuckets = 2048
)

// ExpHist is a distribution of durations in seconds as a base-2
// exponential histogram (OpenTelemetry's, Prometheus' native): Counts[i]
// counts the values in (base^(Offset+i), base^(Offset+i+1)], base =
// 2^(2^-Scale).
type ExpHist struct {
	Scale    int32
	Offset   int32
	Counts   []uint64
	Count    uint64
	Sum      float64 // seconds
	Min, Max float64 // seconds
}

// expIndex is the bucket of v > 0 at scale.
func expIndex(v float64, scale int32) int32 {
	return int32(math.Ceil(math.Log2(v)*math.Exp2(float64(scale)))) - 1
}

// toExp rebuilds r's distribution (nanoseconds) as an exponential
// histogram of seconds, each of r's buckets whole in one of its buckets.
func toExp(r *stats.Recorder) ExpHist {
	h := ExpHist{Scale: MaxScale}
	first, last := true, 0.0
	var lo, hi int32
	r.Buckets(func(value, count int64) bool {
		v := float64(value) / 1e9
		if first {
			h.Min, first = v, false
		}
		last = v
		h.Count += uint64(count)
		h.Sum += v * float64(count)
		return true
	})
	if h.Count == 0 {
		return h
	}
	h.Max = last
	lo, hi = expIndex(h.Min, h.Scale), expIndex(h.Max, h.Scale)
	for int(hi-lo)+1 > MaxBuckets {
		h.Scale--
		lo, hi = lo>>1, hi>>1
	}
	h.Offset = lo
	h.Counts = make([]uint64, hi-lo+1)
	r.Buckets(func(value, count int64) bool {
		h.Counts[expIndex(float64(value)/1e9, h.Scale)-lo] += uint64(count)
		return true
	})
	return h
}

// Quantile is the q-quantile (0 < q <= 1) of h in seconds, read at the
// geometric middle of the bucket that holds it; 0 for an empty h.
func (h ExpHist) Quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(h.Count)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return math.Exp2((float64(h.Offset+int32(i)) + 0.5) / math.Exp2(float64(h.Scale)))
		}
	}
	return 0
}
