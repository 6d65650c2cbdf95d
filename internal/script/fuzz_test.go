package script

import (
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzParse: any text parses or fails with one line naming the file and a
// line of it, never panics; a script that parses runs a pass whose
// statements all reach exec, in both dialects and both modes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
		"\\set x random_zipfian(1, 10, 1.5) + random_gaussian(1, 9, 2.5) * random_exponential(1, 9, 3)\nSELECT :x::int, ':x', $$:x$$;",
		"BEGIN;\n\\set d random(-5000, 5000)\nUPDATE t SET v = v + :d WHERE id = :client_id;\n\\sleep 1 us\nEND;",
		"\\set c case when :client_id > 1 then hash(:client_id) else greatest(1, 2.5) end\nSELECT :c /* ; */;",
		"SELECT 'a''b', \"c\"\"d\", E'\\'', `e`, # x\n-- y\n1;",
		"\\set x ((((1))))\n\\gset\n\\if true\nSELECT 1 \\; SELECT 2",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, src string, mysql bool) {
		d := Postgres
		if mysql {
			d = MySQL
		}
		sc, err := Parse(context.Background(), "fz.sql", src, 1, d)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "fz.sql:") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q is not one line naming the file", msg)
			}
			return
		}
		m, err := NewMix(sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetTimeout(time.Second); err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "fz.sql:") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q is not one line naming the file", msg)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		for _, prepared := range []bool{true, false} {
			n := 0
			err := m.NewClient(1, prepared, 1, 1).Pass(ctx, func(st *Statement, q string, args []Value) error {
				n++
				if prepared && (q != st.Prepared || len(args) != len(st.Vars)) {
					t.Fatalf("prepared %q with %d args for %q", q, len(args), st.Prepared)
				}
				return nil
			})
			if err == nil && n != len(sc.Statements) {
				t.Fatalf("a pass ran %d of %d statements", n, len(sc.Statements))
			}
		}
	})
}
