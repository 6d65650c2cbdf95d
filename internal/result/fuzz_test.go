package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead reads any bytes as a result file: Read must return an error or
// a result that passes validate, and that result must survive Write and
// Read again.
func FuzzRead(f *testing.F) {
	valid, err := json.Marshal(full())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, m := range []struct{ old, new string }{
		{`"p95_ms":1.2`, `"p95_ms":-1`},
		{`"p95_ms":1.2`, `"p95_ms":1e309`},
		{`"concurrency":2`, `"concurrency":9223372036854775807`},
		{`"concurrency":2`, `"concurrency":0`},
		{`"variants":`, `"x":`},
		{`"min":1,"max":2`, `"min":3,"max":2`},
		{`"sign_per_sec":1000`, `"sign_per_sec":-1`},
		{`"errors":{"reset":1`, `"errors":{"reset":-1`},
	} {
		if !bytes.Contains(valid, []byte(m.old)) {
			f.Fatalf("the valid result has no %s", m.old)
		}
		f.Add(bytes.Replace(valid, []byte(m.old), []byte(m.new), 1))
	}
	f.Add([]byte(`{"schema":"tlsbench.result","version":1,"trials":[]}`))
	f.Add([]byte(`{"schema":"tlsbench.result","version":1}`))
	// Stored results of real runs (the small ones: the fuzzer copies
	// every input it mutates).
	stored, _ := filepath.Glob(filepath.Join("..", "report", "testdata", "*.json"))
	for _, p := range stored {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 64<<10 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Read(path)
		if err != nil {
			return
		}
		if r.Schema != Schema || r.Version != Version {
			t.Fatalf("Read accepted schema %q version %d", r.Schema, r.Version)
		}
		if err := r.validate(); err != nil {
			t.Fatalf("Read accepted an invalid result: %v", err)
		}
		again := filepath.Join(dir, "again.json")
		if err := Write(again, r); err != nil {
			t.Fatalf("Write of a result Read accepted: %v", err)
		}
		if _, err := Read(again); err != nil {
			t.Fatalf("Read of a result written from one Read accepted: %v", err)
		}
	})
}
