package export

import (
	"math"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// The exponential histograms durations are exported as: scale 7 (bucket
// bounds 2^(1/128) apart, 0.54% wide) while a series' values span at most
// MaxBuckets of them (16 octaves: 100 µs to 6.5 s), one scale coarser per
// doubling of the span beyond. Each HdrHistogram bucket goes whole into
// the bucket of the value HdrHistogram's percentiles report for it
// (stats.Recorder.Buckets), so a quantile read at the geometric middle of
// its bucket (Quantile) is within half a bucket of HdrHistogram's: 0.27%
// at scale 7, 0.54% at scale 6, under 1% down to scale 6.
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
// geometric middle of the bucket that holds it; 0 for an empty h. Its
// rank is HdrHistogram's (q × count, rounded, at least 1), so that the
// two read the same value where values are sparse (a trial's tail).
func (h ExpHist) Quantile(q float64) float64 {
	rank := min(max(uint64(q*float64(h.Count)+0.5), 1), h.Count)
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return math.Exp2((float64(h.Offset+int32(i)) + 0.5) / math.Exp2(float64(h.Scale)))
		}
	}
	return 0
}
