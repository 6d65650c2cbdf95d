package script

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sum is a \set of a flat sum of n terms, each term, and a statement
// that reads it.
func sum(n int, term string) string {
	return "\\set x 1" + strings.Repeat(" + "+term, n-1) + "\nSELECT :x;\n"
}

// TestParseLinear: a long flat sum parses in time in proportion to its
// length (it took 21 s for 10,000 terms and 435 s for 40,000 when every
// node re-evaluated its subtree), and a pass computes it with a stack as
// shallow as its nesting. Each size is parsed once untimed (the heap grows
// to fit), then three times in turn with the other. The time compared is
// the parsing thread's CPU time, which a busy machine does not stretch as
// it does the wall clock: the ratio of the least for 100,000 and for
// 10,000 terms stays far below the 100 of quadratic time.
func TestParseLinear(t *testing.T) {
	for _, term := range []string{"1", ":client_id"} {
		t.Run(term, func(t *testing.T) {
			runtime.LockOSThread() // the thread's CPU time is the parse's
			defer runtime.UnlockOSThread()
			sizes := []int{100_000, 10_000}
			best := map[int]time.Duration{}
			for round := range 4 {
				for _, n := range sizes {
					src := sum(n, term)
					start, cpu0 := time.Now(), threadCPU(t)
					sc, err := Parse(context.Background(), "s.sql", src, 1, Postgres)
					took, cpu := time.Since(start), threadCPU(t)-cpu0
					if err != nil {
						t.Fatal(err)
					}
					if took > 20*time.Second {
						t.Errorf("%d terms took %v", n, took)
					}
					if round == 0 {
						m, err := NewMix(sc)
						if err != nil {
							t.Fatal(err)
						}
						var got []sent
						if err := m.NewClient(1, false, 1, 1).Pass(context.Background(), record(&got)); err != nil {
							t.Fatal(err)
						}
						if want := "SELECT " + strconv.Itoa(n) + ";"; len(got) != 1 || got[0].query != want {
							t.Fatalf("%d terms: sent %v, want %s", n, got, want)
						}
						continue
					}
					if b, ok := best[n]; !ok || cpu < b {
						best[n] = cpu
					}
				}
			}
			small, large := best[10_000], best[100_000]
			t.Logf("CPU time: 10,000 terms %v, 100,000 terms %v", small, large)
			if ratio := float64(large) / float64(max(small, time.Microsecond)); ratio > 30 {
				t.Errorf("10 times the terms took %.0f times the CPU time (%v, %v): not linear", ratio, small, large)
			}
		})
	}
}

// threadCPU is the CPU time of the calling thread.
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// TestExpressionBounds: an expression past tlsbench's bounds on terms and
// nesting is one line naming the bound, the line and the fix, not a
// syntax error; one at the bounds parses.
func TestExpressionBounds(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("(", n-1) + "1" + strings.Repeat(")", n-1) }
	for _, tc := range []struct{ expr, want string }{
		{strings.TrimSuffix(strings.TrimPrefix(sum(maxTerms, "1"), "\\set x "), "\nSELECT :x;\n"), ""},
		{strings.TrimSuffix(strings.TrimPrefix(sum(maxTerms+1, "1"), "\\set x "), "\nSELECT :x;\n"),
			"b.sql:2: the expression has more than 250000 terms (tlsbench's bound): split it into several \\set commands and combine their variables"},
		{strings.Repeat("-", maxTerms+10) + "1", "b.sql:2: the expression is nested more than 200 deep"},
		{deep(maxDepth), ""},
		{deep(maxDepth + 1), "b.sql:2: the expression is nested more than 200 deep (tlsbench's bound): split it into several \\set commands and combine their variables"},
		{strings.Repeat("abs(", maxDepth+1) + "1" + strings.Repeat(")", maxDepth+1), "b.sql:2: the expression is nested more than 200 deep"},
	} {
		_, err := Parse(context.Background(), "b.sql", "SELECT 1;\n\\set x "+tc.expr+"\nSELECT :x;\n", 1, Postgres)
		name := tc.expr
		if len(name) > 20 {
			name = fmt.Sprintf("%s... (%d bytes)", name[:20], len(name))
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "in command")):
			t.Errorf("%s:\n got %v\nwant %s", name, err, tc.want)
		}
	}
}

// TestParseCancel: a cancelled ctx ends a long parse at once, with ctx's
// error: a signal is acted on while a script is read.
func TestParseCancel(t *testing.T) {
	line := sum(1000, ":client_id")
	src := strings.Repeat(line[:len(line)-len("SELECT :x;\n")], 4000) + "SELECT :x;\n" // 4,000,000 terms
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Parse(ctx, "c.sql", src, 1, Postgres); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := Parse(ctx, "c.sql", src, 1, Postgres)
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 2*time.Second {
		t.Errorf("cancelled after 20ms: %v after %v", err, took)
	}
}

// TestSleepBounds: a pass's \sleeps end at its timeout (a failure of
// their own kind) and at the end of the trial (ErrCut), whatever they
// ask for; fixed sleeps that alone outlast the timeout are refused before
// any pass.
func TestSleepBounds(t *testing.T) {
	long := mustMixNamed(t, "s.sql", "SELECT 1;\n\\sleep 100 ms\n\\sleep 99999 s\nSELECT 2;\n")
	err := long.SetTimeout(10 * time.Second)
	if err == nil || err.Error() != `s.sql:3: \sleep: the script's fixed sleeps take 27h46m39.1s in every pass, longer than the timeout of 10s that bounds a pass` {
		t.Errorf("fixed sleeps past the timeout: %v", err)
	}
	if err := mustMixNamed(t, "s.sql", "\\sleep 2 s\n\\sleep 2000 ms\nSELECT 1;").SetTimeout(4 * time.Second); err != nil {
		t.Errorf("sleeps of exactly the timeout: %v", err)
	}

	m := mustMixNamed(t, "v.sql", "\\set s 99999\nSELECT 1;\n\\sleep :s s\nSELECT 2;\n")
	if err := m.SetTimeout(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		end  time.Duration // WithEnd, from now; 0: none
		want error
		took time.Duration // at least
	}{
		{"timeout", 0, &TimeoutError{}, 300 * time.Millisecond},
		{"end of the trial", 100 * time.Millisecond, ErrCut, 100 * time.Millisecond},
		{"end after the timeout", time.Hour, &TimeoutError{}, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.end > 0 {
				ctx = WithEnd(ctx, time.Now().Add(tc.end))
			}
			var got []sent
			start := time.Now()
			err := m.NewClient(0, true, 1, 1).Pass(ctx, record(&got))
			took := time.Since(start)
			var te *TimeoutError
			switch want := tc.want.(type) {
			case *TimeoutError:
				if !errors.As(err, &te) || te.Timeout != 300*time.Millisecond || te.Cause() != "sleep past timeout" ||
					err.Error() != `v.sql:3: \sleep: the pass would run past its timeout (300ms): shorten the sleep or give a longer --timeout` {
					t.Errorf("got %v, want a TimeoutError", err)
				}
			default:
				if !errors.Is(err, want) || err.Error() != `v.sql:3: \sleep cut short by the end of the trial` {
					t.Errorf("got %v, want %v", err, want)
				}
			}
			if took < tc.took || took > tc.took+5*time.Second || len(got) != 1 {
				t.Errorf("ended after %v having sent %d statements; want %v and 1", took, len(got), tc.took)
			}
		})
	}
}
