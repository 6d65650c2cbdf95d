package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestPredictMeasured checks the model on a real run on the built-in server
// (testdata/measured-rtt.json: --rtt 0,20ms --predict-rtt 20ms,60ms): the
// round trips are the protocol's, and the prediction at 20 ms is within 10%
// of the emulated measurement.
func TestPredictMeasured(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "measured-rtt.json"))
	if err != nil {
		t.Fatal(err)
	}
	ps := Predict(r)
	want := map[string]float64{"plain": 2, "tls1.2 ecdsa-p256": 4, "tls1.3 ecdsa-p256": 3}
	if len(ps) != len(want) {
		t.Fatalf("%d predictions, want %d: %+v", len(ps), len(want), ps)
	}
	for _, p := range ps {
		if p.RoundTrips != want[p.Variant] {
			t.Errorf("%s: %v round trips, want %v", p.Variant, p.RoundTrips, want[p.Variant])
		}
		if p.Local <= 0 || p.Local > 10 {
			t.Errorf("%s: loopback setup %v ms", p.Variant, p.Local)
		}
		if len(p.At) != 2 || p.At[0].RTT != 20*time.Millisecond || p.At[1].RTT != 60*time.Millisecond {
			t.Fatalf("%s: points %+v", p.Variant, p.At)
		}
		at20, at60 := p.At[0], p.At[1]
		if at20.Variant != p.Variant+" rtt20ms" || math.Abs(at20.Error()) > 0.10 {
			t.Errorf("%s at 20ms: predicted %.2f, measured %.2f (%s), error %.3f", p.Variant, at20.Predicted, at20.Measured, at20.Variant, at20.Error())
		}
		if at60.Variant != "" || !math.IsNaN(at60.Measured) || !math.IsNaN(at60.Error()) {
			t.Errorf("%s at 60ms: nothing was measured, got %+v", p.Variant, at60)
		}
		if got := p.Local + p.RoundTrips*60; math.Abs(at60.Predicted-got) > 1e-9 {
			t.Errorf("%s at 60ms: predicted %v, want %v", p.Variant, at60.Predicted, got)
		}
		if p.Variant == "plain" {
			if p.Plain != "" || !math.IsNaN(at20.Overhead) {
				t.Errorf("plain has an overhead: %+v", p)
			}
			continue
		}
		if p.Plain != "plain" || math.IsNaN(at20.MeasuredOverhead) || math.Abs(at20.Overhead-at20.MeasuredOverhead) > 0.1*at20.MeasuredOverhead {
			t.Errorf("%s: overhead vs %q predicted %.2f, measured %.2f", p.Variant, p.Plain, at20.Overhead, at20.MeasuredOverhead)
		}
	}
	var b bytes.Buffer
	if err := Build(r).Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"tls1.3 ecdsa-p256: setup = 3 round trips + ",
		" ms of local time (crypto, protocol, scheduling); TLS adds 1 round trip + ",
		"at 60ms, TLS 1.3 instead of 1.2 saves ≈ ",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the report lacks %q:\n%s", line, b.String())
		}
	}
}

// TestPredictNothing: a run without --predict-rtt or emulated RTT shows no
// model (its output stays as before), and a pool-only run predicts nothing.
func TestPredictNothing(t *testing.T) {
	for _, name := range []string{"measured-connect.json", "measured-pool.json", "measured-postgres-connect.json"} {
		r, err := result.Read(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "setup = ") || len(PredictRTTs(r)) != 0 {
			t.Errorf("%s: a model without --predict-rtt", name)
		}
		r.Spec.PredictRTT = []time.Duration{44 * time.Millisecond}
		ps := Predict(r)
		if name == "measured-pool.json" {
			if len(ps) != 0 {
				t.Errorf("pool run: predictions %+v", ps)
			}
			continue
		}
		if len(ps) == 0 || len(ps[0].At) != 1 || ps[0].At[0].Predicted <= 44 {
			t.Errorf("%s: predictions %+v", name, ps)
		}
	}
}

// TestPredictStacks: the model treats a client stack's variants as Go's
// where their trials have phases (as a capture gives them: here Go's of
// the same variant and concurrency, lent to testdata/clients-connect.json's
// stack trials, which have none), and where they have none it invents no
// round trip: it models Go's variants and names the stacks' it leaves out.
func TestPredictStacks(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "clients-connect.json"))
	if err != nil {
		t.Fatal(err)
	}
	goPhases := map[string][]result.Phase{}
	for _, tr := range r.Trials {
		if rest, ok := strings.CutPrefix(tr.Variant, "go "); ok {
			goPhases[fmt.Sprint(rest, tr.Concurrency)] = tr.Phases
		}
	}
	for i, tr := range r.Trials {
		if _, rest, _ := strings.Cut(tr.Variant, " "); !strings.HasPrefix(tr.Variant, "go ") {
			r.Trials[i].Phases = goPhases[fmt.Sprint(rest, tr.Concurrency)]
		}
	}
	r.Spec.PredictRTT = []time.Duration{44 * time.Millisecond}
	modelled := func(r *result.Result) (ids []string) {
		for _, p := range Predict(r) {
			ids = append(ids, p.Variant)
		}
		return ids
	}
	text := func(r *result.Result) string {
		var b bytes.Buffer
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	all := "go plain|go tls1.3 rsa2048|psycopg plain|psycopg tls1.3 rsa2048|pgjdbc plain|pgjdbc tls1.3 rsa2048"
	if got := strings.Join(modelled(r), "|"); got != all {
		t.Errorf("with phases: modelled %q, want %q", got, all)
	}
	if out := text(r); strings.Contains(out, "not in the round-trip model") || !strings.Contains(out, "psycopg tls1.3 rsa2048: setup = ") {
		t.Errorf("with phases, the stacks are not modelled as Go's:\n%s", out)
	}
	for i, tr := range r.Trials {
		if !strings.HasPrefix(tr.Variant, "go ") {
			r.Trials[i].Phases = nil
		}
	}
	if got := strings.Join(modelled(r), "|"); got != "go plain|go tls1.3 rsa2048" {
		t.Errorf("without the stacks' phases: modelled %q, want Go's alone", got)
	}
	out := text(r)
	if !strings.Contains(out, "psycopg plain, psycopg tls1.3 rsa2048, pgjdbc plain, pgjdbc tls1.3 rsa2048: not in the round-trip model") ||
		strings.Contains(out, "psycopg plain: setup = ") {
		t.Errorf("without the stacks' phases, the report does not say it leaves them out:\n%s", out)
	}
}
