package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	auto := &Knee{From: KneeFrom, To: MaxRate, Factor: KneeFactor}
	tests := []struct {
		name string
		spec Spec
		err  string // part of the error, "" for none
	}{
		{"fixed rates", Spec{Rates: []float64{100, 200}}, ""},
		{"pool at a rate", Spec{Experiments: []Experiment{Pool}, Rates: []float64{100}, Concurrency: []int{4}}, ""},
		{"a search", Spec{Knee: auto}, ""},
		{"zero", Spec{Rates: []float64{0}}, "rates: 0 is out of range: give arrivals per second above 0"},
		{"negative", Spec{Rates: []float64{-5}}, "rates: -5 is out of range"},
		{"twice", Spec{Rates: []float64{100, 100}}, "rates: 100/s is given twice"},
		{"max-inflight negative", Spec{Rates: []float64{100}, MaxInflight: -1}, "max_inflight: -1 is out of range: use 1 to 65536"},
		{"max-inflight without a rate", Spec{MaxInflight: 5}, "max_inflight bounds the arrivals in flight of an open loop: give rates too"},
		{"slo without a search", Spec{Rates: []float64{100}, SLO: time.Second}, "slo is the bound of a rate search: give rates auto"},
		{"slo alone", Spec{SLO: time.Second}, "slo is the bound of a rate search"},
		{"arrivals without a rate", Spec{Arrivals: "uniform"}, "arrivals shapes the arrivals of an open loop: give rates too"},
		{"unknown process", Spec{Rates: []float64{1}, Arrivals: "bursty"}, `arrivals "bursty": use poisson or uniform`},
		{"stream", Spec{Experiments: []Experiment{Stream}, Target: "postgres://u@127.0.0.1/db", Rates: []float64{1}}, "rates applies to connect and pool: stream"},
		{"preset", Spec{Preset: PresetDefault, Rates: []float64{1}}, "rates does not apply to preset default"},
		{"connect's workers", Spec{Rates: []float64{1}, Concurrency: []int{8}}, "concurrency sets a closed loop's workers"},
		{"backwards range", Spec{Knee: &Knee{From: 500, To: 100}}, "rates 500..100: a search range goes up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.spec)
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			case tt.err != "":
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is more than one line", err)
				}
				return
			}
			if s.Arrivals != ArrivalsPoisson || s.MaxInflight != DefaultMaxInflight {
				t.Errorf("defaults: arrivals %q, max-inflight %d", s.Arrivals, s.MaxInflight)
			}
			if s.Knee != nil && (s.SLO != DefaultSLO || s.Duration != DefaultKneeDuration) {
				t.Errorf("a search's defaults: slo %v, duration %v", s.SLO, s.Duration)
			}
		})
	}
}

func TestParseRates(t *testing.T) {
	tests := []struct {
		in    string
		rates []float64
		knee  *Knee
		err   bool
	}{
		{"200", []float64{200}, nil, false},
		{"100, 250.5", []float64{100, 250.5}, nil, false},
		{"auto", nil, &Knee{KneeFrom, MaxRate, KneeFactor}, false},
		{"100..5000", nil, &Knee{100, 5000, KneeFactor}, false},
		{"fast", nil, nil, true},
		{"1..x", nil, nil, true},
	}
	for _, tt := range tests {
		rates, knee, err := ParseRates(tt.in)
		if (err != nil) != tt.err || !slices.Equal(rates, tt.rates) || (knee == nil) != (tt.knee == nil) || knee != nil && *knee != *tt.knee {
			t.Errorf("ParseRates(%q) = %v, %v, %v", tt.in, rates, knee, err)
		}
	}
	if got := (Knee{From: 100, To: 500, Factor: 1.5}).Steps(); !slices.Equal(got, []float64{100, 150, 230, 340}) {
		t.Errorf("steps %v", got)
	}
}

func TestKneeSteps(t *testing.T) {
	got := Knee{From: KneeFrom, To: 2000, Factor: KneeFactor}.Steps()
	want := []float64{20, 30, 45, 68, 100, 150, 230, 340, 510, 770, 1200, 1700}
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
}
