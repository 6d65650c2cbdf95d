package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseScriptArg(t *testing.T) {
	for _, tc := range []struct {
		arg, file string
		weight    int
		err       string
	}{
		{arg: "bench.sql", file: "bench.sql", weight: 1},
		{arg: "bench.sql@3", file: "bench.sql", weight: 3},
		{arg: "a@b.sql@0", file: "a@b.sql", weight: 0},
		{arg: "bench.sql@", err: `"bench.sql@": the weight after @ must be a whole number from 0 to 2147483647`},
		{arg: "bench.sql@-1", err: "the weight after @ must be a whole number"},
		{arg: "bench.sql@x", err: "the weight after @ must be a whole number"},
		{arg: "bench.sql@99999999999", err: "the weight after @ must be a whole number"},
		{arg: "@2", err: `"@2" names no file: give FILE or FILE@WEIGHT`},
	} {
		sc, err := ParseScriptArg(tc.arg)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %s", tc.arg, err, tc.err)
		case tc.err == "" && (err != nil || sc.File != tc.file || sc.Weight != tc.weight):
			t.Errorf("%s: %+v %v, want %s@%d", tc.arg, sc, err, tc.file, tc.weight)
		}
	}
}

// TestScripts: where scripts may run, what they exclude, and what the
// Spec records of them.
func TestScripts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.sql", "\\set id random(1, :rows)\nSELECT c FROM sbtest1 WHERE id = :id;\n")
	bad := write("bad.sql", "SELECT 1;\n\\gset\n")
	two := write("two.sql", "BEGIN;\nEND;\n")
	scripts := func(s ...Script) []Script { return s }
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: good, Weight: 1})}, ""},
		{Spec{Lab: "mariadb", Scripts: scripts(Script{File: good, Weight: 1})}, ""},
		{Spec{Target: "postgres://u@127.0.0.1/db", Scripts: scripts(Script{File: good, Weight: 1})}, ""},
		{Spec{Lab: "redis", Scripts: scripts(Script{File: good, Weight: 1})}, "scripts: pgbench scripts run on PostgreSQL and MySQL/MariaDB targets (a postgres:// or mysql:// URL, lab postgres or mariadb), not on lab:redis"},
		{Spec{Scripts: scripts(Script{File: good, Weight: 1})}, "not on builtin"},
		{Spec{Lab: "postgres", Workload: "read-only", Scripts: scripts(Script{File: good, Weight: 1})}, "give workload read-only or scripts, not both: a script is the workload"},
		{Spec{Lab: "postgres", Experiments: []Experiment{Stream}, Scripts: scripts(Script{File: good, Weight: 1})}, "the stream experiment reads one large result: leave scripts out"},
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: bad, Weight: 1})}, bad + `:2: \gset is not supported by tlsbench`},
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: filepath.Join(dir, "missing.sql"), Weight: 1})}, "scripts " + filepath.Join(dir, "missing.sql") + ": no such file or directory"},
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: dir, Weight: 1})}, "is a directory: give the path of a file"},
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: "/dev/zero", Weight: 1})}, "is not a regular file"},
		{Spec{Lab: "postgres", Scripts: scripts(Script{File: good, Weight: 0}, Script{File: two, Weight: 0})}, "scripts: the total weight of the scripts is zero"},
		{Spec{Lab: "postgres", QueryMode: "extended", Scripts: scripts(Script{File: good, Weight: 1})}, `query_mode "extended": use prepared or simple`},
	} {
		_, err := New(tc.spec)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("New(%+v): %v", tc.spec.Scripts, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("New(%+v) = %v, want %q", tc.spec, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("New(%+v): %q is more than one line", tc.spec, err)
		}
	}

	raw := Spec{Lab: "postgres", Scripts: scripts(Script{File: good, Weight: 3}, Script{File: two, Weight: 1})}
	s, err := New(raw)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Scripts[0].Text != "" {
		t.Error("New changed the caller's Scripts")
	}
	text, _ := os.ReadFile(good)
	sum := sha256.Sum256(text)
	if sc := s.Scripts[0]; sc.Text != string(text) || sc.SHA256 != hex.EncodeToString(sum[:]) || sc.Weight != 3 || sc.File != good {
		t.Errorf("recorded %+v", sc)
	}
	if s.Workload != "script" || s.QueryMode != "prepared" || s.Tables != DefaultTables {
		t.Errorf("workload %q, query mode %q, tables %d", s.Workload, s.QueryMode, s.Tables)
	}
	mix := s.ScriptMix()
	if mix == nil || len(mix.Scripts) != 2 || mix.Statements() != 1 { // (3*1 + 1*2) / 4, rounded
		t.Errorf("mix %+v", mix)
	}
	// The result file records the scripts whole.
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Scripts) != 2 || back.Scripts[1].Text != "BEGIN;\nEND;\n" || back.Scripts[1].SHA256 == "" {
		t.Errorf("round trip: %+v", back.Scripts)
	}
}
