package advise

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestNewLabCalibration: advise --lab plans a connect run on the
// capture's engine with each change's from and to variants as observed
// (the capture's group offered, not Go's default), at the capture's load
// (its rate, capped, and RTT), with a pool of the variant like the
// observed for pooling; what the lab cannot calibrate is said; another
// engine's lab is refused.
func TestNewLabCalibration(t *testing.T) {
	a := pgbenchTLS12(t)
	c, err := NewLabCalibration(a, "postgres", ReplayOptions{Trials: 2, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Spec
	if s.Lab != "postgres" || s.Trials != 2 || s.Duration != time.Second || !slices.Equal(s.Rates, []float64{MaxReplayRate}) ||
		!slices.Equal(s.RTT, []time.Duration{2 * time.Millisecond}) || !slices.Equal(s.Experiments, []plan.Experiment{plan.Connect, plan.Pool}) ||
		!sameSet(s.TLS, []string{"1.2", "1.3", "off"}) || !slices.Equal(s.Keys, []string{"rsa2048", "ecdsa-p256"}) ||
		!slices.Equal(s.Groups, []string{plan.GroupP256}) || s.PerConn != nil || !slices.Equal(s.Negotiation, []string{plan.NegotiationPostgres}) {
		t.Errorf("calibration %+v", s)
	}
	if len(c.Left) != 1 || !strings.Contains(c.Left[0], "direct TLS needs PostgreSQL 17+") {
		t.Errorf("left %q", c.Left)
	}
	if want, picked := []string{"tls1.2 rsa2048 p256 rtt2ms", "tls1.2 ecdsa-p256 p256 rtt2ms", "tls1.3 rsa2048 p256 rtt2ms", "plain rtt2ms"}, picked(t, s, plan.Connect, c.Pick); !sameSet(picked, want) {
		t.Errorf("picked %q, want %q", picked, want)
	}
	if want, pooled := []string{"tls1.2 rsa2048 p256 rtt2ms"}, picked(t, s, plan.Pool, c.Pick); !slices.Equal(pooled, want) {
		t.Errorf("pooled %q, want %q", pooled, want)
	}

	// On PostgreSQL 18 direct TLS is calibrated too.
	if c, err := NewLabCalibration(a, "postgres:18", ReplayOptions{}); err != nil || len(c.Left) != 0 || !slices.Equal(c.Spec.Negotiation, []string{plan.NegotiationPostgres, plan.NegotiationDirect}) {
		t.Errorf("postgres:18: %v, left %q, negotiation %q", err, c.Left, c.Spec.Negotiation)
	}
	if _, err := NewLabCalibration(a, "redis", ReplayOptions{}); err == nil || err.Error() != "--lab redis: the capture's endpoint 127.0.0.1:5432 is postgres: calibrate on the same engine (--lab postgres)" {
		t.Errorf("another engine's lab: %v", err)
	}
	unknown := a
	unknown.Profile.Engine = ""
	var nl *NoLabError
	if _, err := NewLabCalibration(unknown, "postgres", ReplayOptions{}); !errors.As(err, &nl) {
		t.Errorf("an unknown engine: %v", err)
	}
}
