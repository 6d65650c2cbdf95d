package stats

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The recorded range and precision, in nanoseconds.
const (
	lowest  = int64(100 * time.Nanosecond)
	highest = int64(10 * time.Minute)
	digits  = 3
)

// Recorder is a latency histogram (HdrHistogram, nanoseconds, 100 ns to
// 10 min, 3 significant digits). Use one per worker and merge them at the
// end: it is not safe for concurrent use.
//
// It is the sparse (packed) form of HdrHistogram: ~1-20 KB instead of the
// dense form's 200 KB, which matters with thousands of workers times phases.
// Recording costs ~50 ns instead of ~3, still far below any operation it times.
type Recorder struct {
	h *hdr.PackedHistogram
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{h: hdr.NewPacked(lowest, highest, digits)}
}

// Record adds one latency. Values outside the range are clamped to it, never
// dropped, so that Count always equals the number of operations.
func (r *Recorder) Record(d time.Duration) {
	v := min(max(int64(d), lowest), highest)
	// In range, RecordValue fails only on a total count past MaxInt64.
	_ = r.h.RecordValue(v)
}

// Merge adds the values recorded in o.
func (r *Recorder) Merge(o *Recorder) { r.h.Merge(o.h) }

// Count is the number of recorded values.
func (r *Recorder) Count() int64 { return r.h.TotalCount() }

// Hist is a latency distribution: a summary in milliseconds and the full
// HdrHistogram (nanoseconds, V2 compressed, base64). result.Hist has the
// same fields, and converts from it.
type Hist struct {
	Count  int64
	Mean   float64
	StdDev float64
	P50    float64
	P95    float64
	P99    float64
	Max    float64
	HDR    string
}

// Hist summarizes the recorded values in milliseconds and carries the full
// histogram as its V2 compressed encoding (base64).
func (r *Recorder) Hist() Hist {
	enc, _ := r.h.Encode() // the packed encoder writes to memory and never fails
	h := Hist{Count: r.h.TotalCount(), HDR: string(enc)}
	if h.Count == 0 {
		return h
	}
	q := r.h.ValueAtPercentilesSlice([]float64{50, 95, 99})
	h.Mean = r.h.Mean() / 1e6
	h.StdDev = r.h.StdDev() / 1e6
	h.P50 = ms(q[0])
	h.P95 = ms(q[1])
	h.P99 = ms(q[2])
	h.Max = ms(r.h.Max())
	return h
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// DecodeHist rebuilds a Recorder from a Hist's HDR encoding.
func DecodeHist(h Hist) (*Recorder, error) {
	if h.HDR == "" {
		return nil, errors.New("histogram has no HDR encoding")
	}
	p, err := hdr.DecodePacked([]byte(h.HDR))
	if err != nil {
		return nil, fmt.Errorf("decoding HDR histogram: %w", err)
	}
	return &Recorder{h: p}, nil
}

// Buckets calls yield with each populated bucket's value (nanoseconds)
// and count, in increasing order, until yield returns false: what an
// exporter needs to rebuild the distribution in another form. The value
// is the bucket's highest, the one its percentiles report.
func (r *Recorder) Buckets(yield func(value, count int64) bool) {
	r.h.ForEachBucket(func(low, count int64) bool { return yield(top(low), count) })
}

// top is the highest value of the bucket that holds v: buckets are
// 2^unit wide up to 2^(unit+11), twice as wide in each octave above
// (HdrHistogram's geometry for lowest and 3 digits: 2048 sub-buckets).
func top(v int64) int64 {
	unit := bits.Len64(uint64(lowest)) - 1
	width := int64(1) << (unit + max(0, bits.Len64(uint64(v))-1-(unit+10)))
	return v&^(width-1) + width - 1
}
