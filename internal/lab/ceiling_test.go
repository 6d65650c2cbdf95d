package lab

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/speed"
)

// TestCeilingSigner checks who signs for each target: Go for the built-in
// server and FerretDB, OpenSSL for the other lab servers, nobody tlsbench
// knows of for a URL.
func TestCeilingSigner(t *testing.T) {
	ctx := context.Background()
	ossl, err := speed.FindOpenSSL(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"builtin":                  runtime.Version(),
		"lab:mongodb":              runtime.Version(),
		"lab:postgres":             ossl.Library,
		"lab:mariadb":              ossl.Library,
		"lab:redis":                ossl.Library,
		"https://127.0.0.1:8443/":  "",
		"postgres://u@127.0.0.1/d": "",
	} {
		tg, err := plan.ParseTarget(target)
		if err != nil {
			t.Fatal(err)
		}
		s, ok, err := Signer(ctx, tg)
		switch {
		case err != nil:
			t.Errorf("%s: %v", target, err)
		case ok != (want != ""):
			t.Errorf("%s: signer %v, want %v", target, ok, want != "")
		case ok && (s.Library != want || s.Rate == nil):
			t.Errorf("%s: signer %q (rate %v), want %q", target, s.Library, s.Rate != nil, want)
		}
	}

	t.Setenv("PATH", t.TempDir())
	tg, _ := plan.ParseTarget("lab:postgres")
	if _, ok, err := Signer(ctx, tg); !ok || err == nil || !strings.Contains(err.Error(), "the lab postgres server signs with OpenSSL, and no openssl") {
		t.Errorf("lab postgres without openssl: %v, %v; want an error saying so", ok, err)
	}
}

// TestCeilings checks which runs measure ceilings, and that a lab server
// whose library is missing gets a note, not an error.
func TestCeilings(t *testing.T) {
	ctx := context.Background()
	vs := []plan.Variant{{ID: "plain", TLS: "off"}, {ID: "tls1.3 ecdsa-p256", TLS: "1.3", Key: "ecdsa-p256"}}
	connect := []plan.Experiment{plan.Connect}
	spec := func(raw plan.Spec) plan.Spec {
		t.Helper()
		s, err := plan.New(raw)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	cs, notes, err := Ceilings(ctx, spec(plan.Spec{Experiments: connect, Target: "builtin"}), vs)
	if err != nil || len(cs) != 1 || cs[0].Key != "ecdsa-p256" || cs[0].Library != runtime.Version() || len(notes) != 0 {
		t.Errorf("builtin: %+v, %q, %v; want Go's ecdsa-p256 ceiling", cs, notes, err)
	}
	for _, s := range []plan.Spec{
		spec(plan.Spec{Experiments: []plan.Experiment{plan.Pool}, Target: "builtin"}),
		spec(plan.Spec{Experiments: connect, Target: "https://127.0.0.1:8443/"}),
		{Experiments: connect, Target: "builtin"}, // not made by plan.New: no parsed target
	} {
		if cs, notes, err := Ceilings(ctx, s, vs); cs != nil || notes != nil || err != nil {
			t.Errorf("%v on %s: %+v, %q, %v; want no ceilings", s.Experiments, s.Target, cs, notes, err)
		}
	}

	redis := spec(plan.Spec{Experiments: connect, Target: "lab:redis"})
	t.Setenv("PATH", t.TempDir())
	cs, notes, err = Ceilings(ctx, redis, vs)
	if err != nil || cs != nil || len(notes) != 1 || !strings.HasPrefix(notes[0], "no signature ceilings: the lab redis server signs with OpenSSL") {
		t.Errorf("lab redis without openssl: %+v, %q, %v; want one note", cs, notes, err)
	}
}
