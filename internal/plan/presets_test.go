package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDefaults checks that New is the one home of defaults: a Spec that
// leaves everything unset gets plan's defaults, the default preset gets
// DefaultMatrix, what was given stays (an explicit zero warm-up too), and
// New of New's result changes nothing.
func TestDefaults(t *testing.T) {
	tests := []struct {
		name  string
		raw   Spec
		check func(Spec) bool
	}{
		{"plan's", Spec{}, func(s Spec) bool {
			return reflect.DeepEqual(s.Experiments, []Experiment{Connect}) && reflect.DeepEqual(s.Concurrency, []int{1}) &&
				reflect.DeepEqual(s.Keys, []string{"rsa2048"}) && s.Duration == DefaultDuration && s.WarmupTime() == DefaultWarmup &&
				s.Timeout == DefaultTimeout && s.Trials == DefaultTrials && s.ErrorRate() == DefaultMaxErrorRate && s.ResponseSize == DefaultSize
		}},
		{"the matrix", Spec{Preset: PresetDefault}, func(s Spec) bool {
			m := DefaultMatrix
			return reflect.DeepEqual(s.Experiments, m.Experiments) && reflect.DeepEqual(s.TLS, m.TLS) && reflect.DeepEqual(s.Keys, m.Keys) &&
				reflect.DeepEqual(s.Concurrency, m.Concurrency) && s.Duration == m.Duration && s.WarmupTime() == m.Warmup && s.Trials == DefaultTrials
		}},
		{"the matrix, with what was given", Spec{Preset: PresetDefault, Concurrency: []int{8}, Warmup: new(time.Duration), Count: 10}, func(s Spec) bool {
			return reflect.DeepEqual(s.Concurrency, []int{8}) && s.WarmupTime() == 0 && s.Duration == MaxCountDuration && len(s.Keys) == 4
		}},
		{"the seed", Spec{Preset: PresetMongoDBSeed, Target: "lab:mongodb"}, func(s Spec) bool {
			return len(s.Experiments) == 3 && s.Count == presetCount && s.Trials == presetTrials && reflect.DeepEqual(s.TLS, []string{"off", "auto"})
		}},
	}
	for _, tt := range tests {
		if tt.raw.Target == "" {
			tt.raw.Target = Builtin
		}
		s, err := New(tt.raw)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !tt.check(s) {
			t.Errorf("%s: %+v", tt.name, s)
		}
		// What a result records of the Spec: New must not change it.
		again, err := New(s)
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(s)
		if err != nil || string(a) != string(b) {
			t.Errorf("%s: New of New's result differs:\n%s\n%s\n%v", tt.name, a, b, err)
		}
	}
	if _, err := New(Spec{Target: Builtin, Preset: "fast"}); err == nil || err.Error() != `preset "fast": use default or mongodb-seed` {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestErrorFields checks that plan's errors name Spec fields, and that
// Spell writes them as an interface spells them (the command line's flags).
func TestErrorFields(t *testing.T) {
	_, err := New(Spec{Target: Builtin, Concurrency: []int{2, 2}})
	var pe *Error
	if !errors.As(err, &pe) || err.Error() != "concurrency: 2 is given twice" {
		t.Fatalf("error %v", err)
	}
	flag := func(field string) string { return "--" + strings.ReplaceAll(field, "_", "-") }
	if got := pe.Spell(flag); got != "--concurrency: 2 is given twice" {
		t.Errorf("spelled %q", got)
	}
	_, err = New(Spec{Target: Builtin, CAFile: "ca.pem"})
	if !errors.As(err, &pe) || pe.Spell(flag) != "--ca-file applies to URL targets: tlsbench verifies the servers it starts with the CA it made for them" {
		t.Errorf("error %v, spelled %q", err, pe.Spell(flag))
	}
}

// TestGroups checks --group: Go's curve names are taken, each TLS variant
// offers one group (the hybrid in TLS 1.3 only), and mistakes are refused.
func TestGroups(t *testing.T) {
	s, err := New(Spec{Target: Builtin, TLS: []string{"off", "1.2", "1.3"}, Keys: []string{"ecdsa-p256"}, Groups: []string{"X25519MLKEM768", "CurveP256"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range s.Variants() {
		ids = append(ids, v.ID)
	}
	want := "plain|tls1.2 ecdsa-p256 p256|tls1.3 ecdsa-p256 x25519mlkem768|tls1.3 ecdsa-p256 p256"
	if got := strings.Join(ids, "|"); got != want || !reflect.DeepEqual(s.Groups, []string{"x25519mlkem768", "p256"}) {
		t.Errorf("variants %s, groups %v; want %s", got, s.Groups, want)
	}
	// default is the library's offer: the variant without a group.
	s, err = New(Spec{Target: Builtin, TLS: []string{"1.3"}, Keys: []string{"ecdsa-p256"}, Groups: []string{"Default", "p256"}})
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	for _, v := range s.Variants() {
		ids = append(ids, v.ID+"/"+v.Group)
	}
	if got, want := strings.Join(ids, "|"), "tls1.3 ecdsa-p256/|tls1.3 ecdsa-p256 p256/p256"; got != want || s.Groups[0] != GroupDefault {
		t.Errorf("variants %s, groups %v; want %s", got, s.Groups, want)
	}
	for _, tt := range []struct {
		raw  Spec
		want string
	}{
		{Spec{TLS: []string{"1.3"}, Groups: []string{"default", "default"}}, "groups: default is given twice"},
		{Spec{TLS: []string{"1.3"}, Groups: []string{"ffdhe2048"}}, `groups: unknown key-exchange group "ffdhe2048"`},
		{Spec{TLS: []string{"1.3"}, Groups: []string{"p256", "P-256"}}, "groups: p256 is given twice"},
		{Spec{TLS: []string{"off"}, Groups: []string{"x25519"}}, "groups applies to TLS variants"},
		{Spec{TLS: []string{"1.2"}, Groups: []string{"x25519mlkem768"}}, "groups x25519mlkem768 is a TLS 1.3 group: add 1.3 to tls"},
	} {
		tt.raw.Target = Builtin
		if _, err := New(tt.raw); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.raw.Groups, err, tt.want)
		}
	}
}

// TestDHE checks that a finite-field DHE suite, which Go's TLS lacks, is
// refused with the nearest suite it has, named the IANA or OpenSSL way.
func TestDHE(t *testing.T) {
	for in, near := range map[string]string{
		"DHE-RSA-AES256-SHA":                  "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
		"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	} {
		_, err := New(Spec{Target: Builtin, TLS: []string{"1.2"}, Ciphers: []string{in}})
		if want := "ciphers " + in + ": Go's TLS has no finite-field DHE suites: the nearest it has is " + near; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
