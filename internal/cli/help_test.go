package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the help golden files")

// helpCommands are the commands whose --help has a golden file.
var helpCommands = [][]string{
	{}, {"connect"}, {"pool"}, {"stream"}, {"storm"},
	{"kube", "connect"}, {"kube", "pool"}, {"kube", "storm"},
	{"serve"}, {"lab"}, {"crypto"}, {"prepare"}, {"report"}, {"compare"}, {"merge"}, {"wire"}, {"advise"}, {"replicate"},
}

// TestHelpGolden: each command's --help is its golden file
// (testdata/help-CMD.golden); go test -run TestHelpGolden -update
// rewrites them.
func TestHelpGolden(t *testing.T) {
	for _, args := range helpCommands {
		name := "help-" + strings.Join(append([]string{"tlsbench"}, args...)[min(1, len(args)):], "-") + ".golden"
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, append(args, "--help")...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if stdout != string(want) {
				t.Errorf("%v --help drifted from %s (go test -run TestHelpGolden -update to accept):\n%s", args, path, stdout)
			}
		})
	}
}

// TestHelpListsWhatApplies: a measuring command's help lists only the
// flags that apply to it, under the sections, and never one of another
// experiment.
func TestHelpListsWhatApplies(t *testing.T) {
	tests := []struct {
		args      []string
		has, lack []string
	}{
		{[]string{"storm"}, []string{"--clients", "--first-op", "Load shape:"}, []string{"--rate", "--per-conn", "--concurrency", "--duration", "--count", "--warmup", "--predict-rtt", "--wire"}},
		{[]string{"pool"}, []string{"--concurrency", "--rate", "--warmup", "Open loop (--rate):"}, []string{"--per-conn", "--predict-rtt", "--clients", "--wire"}},
		{[]string{"stream"}, []string{"--concurrency", "--warmup"}, []string{"--rate", "--per-conn", "--clients"}},
		{[]string{"connect"}, []string{"--per-conn", "--predict-rtt", "--wire", "Target and TLS:", "Paths:", "Output:"}, []string{"--clients", "--warmup"}},
		{[]string{"kube", "pool"}, []string{"--shards", "Kubernetes:", "--concurrency"}, []string{"--key", "--source", "--lab", "--output", "--per-conn"}},
	}
	for _, tt := range tests {
		_, stdout, _ := runMain(t, append(tt.args, "--help")...)
		for _, h := range tt.has {
			if !strings.Contains(stdout, h) {
				t.Errorf("%v --help does not list %s", tt.args, h)
			}
		}
		for _, l := range tt.lack {
			if strings.Contains(stdout, " "+l+" ") {
				t.Errorf("%v --help lists %s, which does not apply", tt.args, l)
			}
		}
	}
}

// TestHelpDefaultIsPlans: every default a measuring command's --help
// shows is the one plan uses when the flag is left out, in the flag's
// context; and given as shown, the flag gives the same value.
func TestHelpDefaultIsPlans(t *testing.T) {
	root := newRootCmd(nil, nil, nil)
	cmds := map[cmdSet]*cobra.Command{onRoot: root}
	for _, c := range root.Commands() {
		if e := plan.Experiment(c.Name()); commandSet(e) != 0 {
			cmds[commandSet(e)] = c
		}
	}
	shown := 0
	for set, cmd := range cmds {
		var exps []plan.Experiment
		if set != onRoot {
			exps = []plan.Experiment{plan.Experiment(cmd.Name())}
		}
		for _, o := range options {
			fl := cmd.Flags().Lookup(o.flag)
			if o.on&set == 0 || fl == nil || o.def == nil {
				continue
			}
			omitted := specFor(t, set, exps, o, nil)
			if fl.DefValue == "" && o.def(omitted) == "" {
				continue // none: --preset
			}
			shown++
			given := specFor(t, set, exps, o, []string{"--" + o.flag + "=" + fl.DefValue})
			if got := o.def(omitted); got != fl.DefValue {
				t.Errorf("%s --%s: help shows %q, plan uses %q", cmd.Name(), o.flag, fl.DefValue, got)
			}
			if got := o.def(given); got != fl.DefValue {
				t.Errorf("%s --%s=%s (the default shown): plan makes it %q", cmd.Name(), o.flag, fl.DefValue, got)
			}
		}
	}
	if shown < 40 {
		t.Errorf("%d defaults checked, want every command's", shown)
	}
}

// specFor is the spec command set makes of args in o's context, through
// the flags as Main parses them.
func specFor(t *testing.T, set cmdSet, exps []plan.Experiment, o runOption, args []string) plan.Spec {
	t.Helper()
	var f runFlags
	cmd := &cobra.Command{Use: "x"}
	f.register(cmd, set, exps)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatalf("--%s: %v", o.flag, err)
	}
	base := defaultSpec(set, exps)
	raw, err := f.spec(cmd, base.Target, exps)
	raw.Lab = base.Lab
	if err != nil {
		t.Fatalf("--%s %v: %v", o.flag, args, err)
	}
	if ctx := contexts[o.when]; ctx != nil {
		ctx(&raw)
	}
	s, err := plan.New(raw)
	if err != nil {
		t.Fatalf("--%s %v: %v", o.flag, args, err)
	}
	return s
}

// TestOptionsSpellEveryField: every field plan's errors name has its flag
// in options, and every option's field is one plan names.
func TestOptionsSpellEveryField(t *testing.T) {
	for _, tt := range []struct{ field, want string }{
		{"concurrency", "-c/--concurrency"}, {"method", "-X/--request"}, {"headers", "-H/--header"},
		{"keys", "--key"}, {"ca_file", "--ca"}, {"response_size", "--size"}, {"rates", "--rate"},
		{"start_at", "--start-at"}, {"client_certs", "--client-cert"}, {"per_conn", "--per-conn"},
		{"tls_max", "--tls-max"}, {"client_ca", "--client-ca"}, {"sizes", "--sizes"}, // serve's, crypto's
	} {
		if got := flagName(tt.field); got != tt.want {
			t.Errorf("flagName(%q) = %q, want %q", tt.field, got, tt.want)
		}
	}
	seen := map[string]bool{}
	for _, o := range options {
		if seen[o.flag] {
			t.Errorf("--%s is in options twice", o.flag)
		}
		seen[o.flag] = true
	}
}

// TestFlagsThatDoNotApply: a flag a command does not list is refused in
// one line that says why or names the command it belongs to, before any
// server starts.
func TestFlagsThatDoNotApply(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"storm", "builtin", "-d", "5s"}, "storm: --duration does not apply: every client connects once; give --clients N"},
		{[]string{"storm", "builtin", "-n", "5"}, "storm: --count does not apply"},
		{[]string{"pool", "builtin", "--predict-rtt", "44ms"}, "--predict-rtt predicts connection setup: it needs the connect experiment"},
		{[]string{"stream", "--lab", "postgres", "--wire"}, "unknown flag: --wire: --wire belongs to connect"},
		{[]string{"--rate", "100"}, "--rate does not apply to --preset default"},
		{[]string{"storm", "builtin", "--trails", "2"}, "did you mean --trials?"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line saying %q", tt.args, code, stderr, tt.want)
		}
	}
}
