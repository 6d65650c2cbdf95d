package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{"GET key:__rand_int__", []string{"GET", "key:__rand_int__"}, ""},
		{"  SET  k   v  ", []string{"SET", "k", "v"}, ""},
		{`SET k "a b\n\x41\"\\"`, []string{"SET", "k", "a b\nA\"\\"}, ""},
		{`SET k 'it\'s "x"'`, []string{"SET", "k", `it's "x"`}, ""},
		{`SET k ""`, []string{"SET", "k", ""}, ""},
		{`SET k "abc`, nil, "unbalanced quotes"},
		{`SET k 'abc`, nil, "unbalanced quotes"},
		{`SET k "a"b`, nil, "closing quote must be followed by a space"},
		{"", nil, ""},
	} {
		got, err := SplitCommand(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("SplitCommand(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if err == nil {
			// JoinCommand writes what SplitCommand reads back.
			if back, err := SplitCommand(JoinCommand(got)); err != nil || !slices.Equal(back, got) {
				t.Errorf("SplitCommand(JoinCommand(%q)) = %q, %v", got, back, err)
			}
		}
	}
}

func TestRedactCommand(t *testing.T) {
	for in, want := range map[string]string{
		"AUTH s3cret":                         "AUTH xxxxx",
		"AUTH app s3cret":                     "AUTH xxxxx xxxxx",
		"HELLO 3 AUTH app s3cret SETNAME tb":  "HELLO 3 AUTH xxxxx xxxxx SETNAME tb",
		"MIGRATE h 6379 k 0 5 AUTH s3cret":    "MIGRATE h 6379 k 0 5 AUTH xxxxx",
		"MIGRATE h 6379 k 0 5 AUTH2 u s3cret": "MIGRATE h 6379 k 0 5 AUTH2 xxxxx xxxxx",
		"CONFIG SET requirepass s3cret":       "CONFIG SET requirepass xxxxx",
		"ACL SETUSER app on >s3cret ~* +@all": "ACL SETUSER app on >xxxxx ~* +@all",
		"GET key:1":                           "GET key:1",
		`auth "s3cret with space"`:            "auth xxxxx",
		`SET "unbalanced s3cret`:              "xxxxx",
	} {
		if got := RedactCommandLine(in); got != want {
			t.Errorf("RedactCommandLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTemplate(t *testing.T) {
	tm := NewTemplate([]byte("a__rand_int__:__rand_int__"))
	for range 200 {
		got := string(tm.Fill(nil, 37))
		if len(got) != len("a__rand_int__:__rand_int__") || got[0] != 'a' || got[13] != ':' {
			t.Fatalf("Fill = %q", got)
		}
		for _, num := range []string{got[1:13], got[14:]} {
			n, err := strconv.Atoi(num)
			if err != nil || n < 0 || n >= 37 {
				t.Fatalf("Fill = %q: %q is not a 12-digit number below 37", got, num)
			}
		}
	}
	if !NewTemplate([]byte("GET k")).Empty() {
		t.Error("a text without placeholder has one")
	}
}

// TestUserWorkload: each option for its engine only, what it replaces,
// the placeholders and the keyspace, and what is recorded.
func TestUserWorkload(t *testing.T) {
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	os.WriteFile(body, []byte(`{"password":"s3cret"}`), 0o600)
	paths := filepath.Join(dir, "paths.txt")
	os.WriteFile(paths, []byte("# pages\n/a\n\n/b?q=1\n"), 0o600)
	badPaths := filepath.Join(dir, "bad.txt")
	os.WriteFile(badPaths, []byte("/a\nhttp://x/b\n"), 0o600)
	redis := "redis://127.0.0.1:6379"
	mongo := "mongodb://127.0.0.1:27017"
	for _, tt := range []struct {
		spec Spec
		want string // "" when accepted
	}{
		{Spec{Target: redis, Commands: []string{"GET key:__rand_int__"}, Keyspace: 100}, ""},
		{Spec{Target: redis, Commands: []string{"GET key:__rand_int__"}}, "holds __rand_int__: give ⟨keyspace⟩ N"},
		{Spec{Target: redis, Commands: []string{"GET k"}, Keyspace: 10}, "⟨keyspace⟩ is the range of __rand_int__, which ⟨commands⟩ does not hold"},
		{Spec{Target: redis, Commands: []string{"GET __key__"}}, "__key__ is memtier_benchmark's placeholder"},
		{Spec{Target: redis, Commands: []string{"GET k", "  "}}, "⟨commands⟩ 2 of 2 is empty"},
		{Spec{Target: redis, Commands: []string{`SET k "v`}}, "⟨commands⟩: unbalanced quotes"},
		{Spec{Target: redis, Commands: []string{"SUBSCRIBE ch"}}, "SUBSCRIBE changes the connection"},
		{Spec{Target: redis, Commands: []string{"GET k"}, Workload: "stream"}, "⟨commands⟩ replaces ⟨workload⟩"},
		{Spec{Target: redis, Commands: []string{"GET k"}, Keyspace: MaxKeyspace + 1}, "⟨keyspace⟩ 1000000000001 is out of range"},
		{Spec{Target: redis, Workload: WorkloadCommand}, "⟨workload⟩ command runs ⟨commands⟩"},
		{Spec{Target: redis, Keyspace: 5}, "⟨keyspace⟩ is the range of __rand_int__ in ⟨commands⟩ or ⟨filter⟩"},
		{Spec{Target: mongo, Commands: []string{"GET k"}}, "⟨commands⟩ applies to redis targets"},
		{Spec{Target: mongo, Filter: `{"_id": "user__rand_int__"}`, Collection: "ycsb.usertable", Keyspace: 10}, ""},
		{Spec{Target: mongo + "/ycsb", Filter: `{"n": {"$numberLong": "5"}}`, Collection: "usertable"}, ""},
		{Spec{Target: mongo, Filter: `{"_id": 1}`}, "⟨filter⟩ needs ⟨collection⟩"},
		{Spec{Target: mongo, Filter: `{"_id": 1}`, Collection: "usertable"}, "the URL names no database: give DB.COLLECTION"},
		{Spec{Target: mongo, Filter: "{\"_id\":\n 1,}", Collection: "a.b"}, "⟨filter⟩ is not JSON at line 2, column 4"},
		{Spec{Target: mongo, Filter: `[1]`, Collection: "a.b"}, "⟨filter⟩ must be a JSON object"},
		{Spec{Target: mongo, Filter: `{"d": {"$date": "yesterday"}}`, Collection: "a.b"}, "⟨filter⟩ is not MongoDB extended JSON"},
		{Spec{Target: mongo, Filter: `{"a": 1}`, Collection: "a.b", Workload: "find-one"}, "⟨filter⟩ replaces ⟨workload⟩"},
		{Spec{Target: mongo, Filter: `{"a": 1}`, Collection: "a.b", Experiments: []Experiment{Stream}}, "the stream experiment reads one large result: leave ⟨filter⟩ out"},
		{Spec{Target: redis, Filter: `{}`}, "⟨filter⟩ applies to mongodb targets"},
		{Spec{Target: "https://127.0.0.1/", Method: "POST", Headers: []string{"Authorization: Bearer s3cret"}, Data: "@" + body}, ""},
		{Spec{Target: "https://127.0.0.1", Paths: paths}, ""},
		{Spec{Target: "https://127.0.0.1/x", Paths: paths}, "⟨paths⟩ gives the request paths: give the URL without a path"},
		{Spec{Target: "https://127.0.0.1/", Paths: badPaths}, "bad.txt:2: a path must start with one '/'"},
		{Spec{Target: "https://127.0.0.1/", Paths: filepath.Join(dir, "none")}, "⟨paths⟩ file: stat"},
		{Spec{Target: "https://127.0.0.1/", Data: "@" + filepath.Join(dir, "none")}, "⟨data⟩ file: stat"},
		{Spec{Target: "https://127.0.0.1/", Data: "@-"}, "tlsbench reads no body from standard input"},
		{Spec{Target: "https://127.0.0.1/", Headers: []string{"Bearer s3cret"}}, "⟨headers⟩ 1 has no ':'"},
		{Spec{Target: "https://127.0.0.1/", Headers: []string{"Connection: keep-alive"}}, "⟨headers⟩ Connection: tlsbench sets it"},
		{Spec{Target: "https://127.0.0.1/", Method: "GET POST"}, "is not an HTTP method"},
		{Spec{Target: "https://127.0.0.1/", Method: "CONNECT"}, "CONNECT turns the connection into a tunnel"},
		{Spec{Target: redis, Method: "POST"}, "⟨method⟩ applies to http:// and https:// targets"},
		{Spec{Method: "DELETE"}, ""}, // the built-in server
	} {
		_, err := New(tt.spec)
		var msg string
		if pe, ok := err.(*Error); ok {
			msg = pe.msg
		} else if err != nil {
			msg = err.Error()
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("New(%+v): %v", tt.spec, err)
		case tt.want != "" && (err == nil || !strings.Contains(msg, tt.want)):
			t.Errorf("New(%+v) = %q, want %q", tt.spec, msg, tt.want)
		}
		if err != nil && strings.Contains(msg, "s3cret") {
			t.Errorf("New(%+v): the error shows the secret: %s", tt.spec, msg)
		}
	}
}

// TestUserWorkloadRecord: what the result records, without the secrets,
// and what the drivers get, with them.
func TestUserWorkloadRecord(t *testing.T) {
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	os.WriteFile(body, []byte(`{"password":"s3cret"}`), 0o600)
	for _, tt := range []struct {
		name string
		spec Spec
		text string
		work func(UserWorkload) bool
	}{
		{"redis", Spec{Target: "redis://127.0.0.1", Commands: []string{"AUTH app s3cret", `SET "k __rand_int__" v`}, Keyspace: 10},
			"AUTH xxxxx xxxxx\nSET \"k __rand_int__\" v\nkeyspace 10",
			func(w UserWorkload) bool {
				return slices.Equal(w.Commands[0], []string{"AUTH", "app", "s3cret"}) && w.Commands[1][1] == "k __rand_int__" && w.Keyspace == 10
			}},
		{"http", Spec{Target: "https://127.0.0.1/api?token=s3cret", Headers: []string{"X-Api-Key: s3cret", "Accept: text/plain"}, Data: "@" + body},
			"POST /api?token=xxxxx HTTP/1.1\nX-Api-Key: xxxxx\nAccept: text/plain\n\n<body: 21 bytes (@" + body + "), sha256 ",
			func(w UserWorkload) bool {
				return w.Method == "POST" && w.Headers[0] == Header{"X-Api-Key", "s3cret"} && string(w.Body) == `{"password":"s3cret"}` && w.HasBody
			}},
		{"http inline", Spec{Target: "https://127.0.0.1/", Method: "PUT", Headers: []string{"Cookie: id=s3cret"}, Data: "pw=s3cret"},
			"PUT / HTTP/1.1\nCookie: xxxxx\n\n<body: 9 bytes (inline), sha256 ",
			func(w UserWorkload) bool { return string(w.Body) == "pw=s3cret" }},
		{"mongodb", Spec{Target: "mongodb://127.0.0.1/app", Filter: `{"_id": "user__rand_int__"}`, Collection: "users", Keyspace: 1000},
			"db.users.find({\"_id\": \"user__rand_int__\"}) on app, first batch of at most 101\nkeyspace 1000",
			func(w UserWorkload) bool { return w.Database == "app" && w.Collection == "users" }},
	} {
		s, err := New(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		stored, _ := json.Marshal(s)
		if strings.Contains(string(stored), "s3cret") {
			t.Errorf("%s: the stored spec holds the secret: %s", tt.name, stored)
		}
		if s.Recorded == nil || !strings.HasPrefix(s.Recorded.Text, tt.text) || len(s.Recorded.SHA256) != 64 {
			t.Errorf("%s: recorded %+v, want text %q and a sha256", tt.name, s.Recorded, tt.text)
		}
		if !tt.work(s.UserWorkload()) {
			t.Errorf("%s: the drivers get %+v", tt.name, s.UserWorkload())
		}
	}
	// A Spec refused for another reason, before or after the workload's
	// checks, holds no secret either.
	for _, bad := range []Spec{{Trials: -1}, {TLS: []string{"bogus"}}} {
		bad.Target, bad.Headers, bad.Data, bad.Commands = "https://127.0.0.1/", []string{"Authorization: s3cret"}, "s3cret", []string{"AUTH s3cret"}
		s, err := New(bad)
		if err == nil {
			t.Fatalf("New(%+v) accepted", bad)
		}
		if stored, _ := json.Marshal(s); strings.Contains(string(stored), "s3cret") {
			t.Errorf("a refused spec holds the secret: %s", stored)
		}
	}
}
