package stats

import (
	"math"
	"testing"
	"time"
)

// within reports whether got is within HDR's 3-digit precision of want.
func within(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1e-9 }

func TestRecorderHist(t *testing.T) {
	r := NewRecorder()
	// 1..1000 µs, once each: p50 500 µs, p95 950 µs, p99 990 µs, max 1 ms.
	for i := 1; i <= 1000; i++ {
		r.Record(time.Duration(i) * time.Microsecond)
	}
	h := r.Hist()
	want := Hist{Count: 1000, Mean: 0.5005, StdDev: 0.288675, P50: 0.5, P95: 0.95, P99: 0.99, Max: 1}
	if h.Count != want.Count || !within(h.Mean, want.Mean) || !within(h.StdDev, want.StdDev) ||
		!within(h.P50, want.P50) || !within(h.P95, want.P95) || !within(h.P99, want.P99) || !within(h.Max, want.Max) {
		t.Errorf("Hist() = %+v\nwant ≈ %+v", h, want)
	}
	if h.HDR == "" {
		t.Error("Hist().HDR is empty")
	}
}

// TestRecorderRank pins the rank convention docs/result.md states: the
// q-quantile of n values is the one of rank ⌊q·n + 0.5⌋ (HdrHistogram's),
// one below nearest-rank's ⌈q·n⌉ when q·n's fraction is below one half.
func TestRecorderRank(t *testing.T) {
	tests := []struct {
		n             int
		p50, p95, p99 float64 // ms: the value of rank
	}{
		{100, 50, 95, 99},
		{150, 75, 143, 149}, // 142.5 and 148.5 round up, as nearest-rank
		{160, 80, 152, 158}, // 158.4: nearest-rank 159
		{728, 364, 692, 721},
	}
	for _, tt := range tests {
		r := NewRecorder()
		for i := 1; i <= tt.n; i++ {
			r.Record(time.Duration(i) * time.Millisecond)
		}
		h := r.Hist()
		if !within(h.P50, tt.p50) || !within(h.P95, tt.p95) || !within(h.P99, tt.p99) {
			t.Errorf("1..%d ms: p50 %v p95 %v p99 %v, want %v %v %v", tt.n, h.P50, h.P95, h.P99, tt.p50, tt.p95, tt.p99)
		}
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	r := NewRecorder()
	for i := range 5000 {
		// A loopback-like spread: 50 µs to ~5 ms.
		r.Record(50*time.Microsecond + time.Duration(i*i)*5*time.Nanosecond/25)
	}
	h := r.Hist()
	back, err := DecodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	if back.Count() != r.Count() {
		t.Errorf("decoded Count() = %d, want %d", back.Count(), r.Count())
	}
	if got := back.Hist(); got != h {
		t.Errorf("decoded Hist() = %+v\nwant %+v", got, h)
	}
}

func TestRecorderClamps(t *testing.T) {
	r := NewRecorder()
	r.Record(-time.Second)
	r.Record(0)
	r.Record(time.Hour)
	h := r.Hist()
	if h.Count != 3 {
		t.Fatalf("Count = %d, want 3: out-of-range values must be kept", h.Count)
	}
	if !within(h.Max, float64(10*time.Minute)/1e6) {
		t.Errorf("Max = %v ms, want 10 min", h.Max)
	}
	if h.P50 > 0.0002 {
		t.Errorf("P50 = %v ms, want about 100 ns", h.P50)
	}
}

func TestRecorderMerge(t *testing.T) {
	a, b := NewRecorder(), NewRecorder()
	for range 900 {
		a.Record(100 * time.Microsecond)
	}
	for range 100 {
		b.Record(2 * time.Millisecond)
	}
	a.Merge(b)
	h := a.Hist()
	if h.Count != 1000 || !within(h.P50, 0.1) || !within(h.P95, 2) {
		t.Errorf("merged Hist() = %+v, want 1000 values, p50 0.1 ms, p95 2 ms", h)
	}
	if b.Count() != 100 {
		t.Errorf("Merge changed its source: Count() = %d, want 100", b.Count())
	}
}

func TestRecorderEmpty(t *testing.T) {
	h := NewRecorder().Hist()
	if h.Count != 0 || h.Mean != 0 || h.Max != 0 {
		t.Errorf("empty Hist() = %+v, want zero figures", h)
	}
	back, err := DecodeHist(h)
	if err != nil || back.Count() != 0 {
		t.Errorf("DecodeHist(empty) = %v, %v; want an empty Recorder", back, err)
	}
}

func TestDecodeHistErrors(t *testing.T) {
	for _, h := range []Hist{{}, {Count: 1, HDR: "not base64!"}, {HDR: "AAAA"}} {
		if _, err := DecodeHist(h); err == nil {
			t.Errorf("DecodeHist(%q) succeeded, want an error", h.HDR)
		}
	}
}

func BenchmarkRecord(b *testing.B) {
	r := NewRecorder()
	for i := 0; b.Loop(); i++ {
		r.Record(time.Duration(50_000 + i%100_000))
	}
}

// Buckets reports each bucket at the value its percentiles report, so
// that another form of the distribution reads the same quantiles.
func TestRecorderBuckets(t *testing.T) {
	for _, d := range []time.Duration{100, 7 * time.Microsecond, 34567, 65535, 65536, 131071, 131072, 750 * time.Microsecond, 3 * time.Second, 10 * time.Minute} {
		r := NewRecorder()
		r.Record(d)
		var got []int64
		r.Buckets(func(value, count int64) bool {
			got = append(got, value, count)
			return true
		})
		if want := int64(r.h.ValueAtPercentile(100)); len(got) != 2 || got[0] != want || got[1] != 1 {
			t.Errorf("%d ns: buckets %v, want [%d 1] (ValueAtPercentile)", d, got, want)
		}
	}
}
