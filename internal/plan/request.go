package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tlsbench/tlsbench/internal/files"
)

// The user's own workload, spelled as each ecosystem spells it: Redis
// commands as redis-benchmark and redis-cli take them, a MongoDB filter in
// extended JSON, an HTTP request as curl's -X, -H, --data. Each replaces
// the engine's named workload (Spec.Workload is then one of these names).
const (
	WorkloadCommand = "command" // Redis: Spec.Commands
	WorkloadFilter  = "filter"  // MongoDB: Spec.Filter on Spec.Collection
	WorkloadRequest = "request" // HTTP: Spec.Method, Headers, Data, Paths
)

// RandInt is redis-benchmark's placeholder: every occurrence is replaced,
// each by its own random number in [0, Keyspace), written as 12 digits with
// leading zeros (redis-benchmark -r): the text keeps its length.
const RandInt = "__rand_int__"

// MaxKeyspace is the largest Keyspace: 12 digits.
const MaxKeyspace = 1_000_000_000_000

// foreignPlaceholders are other tools' placeholders, which tlsbench does
// not expand: refused, so that they are not sent as they are.
var foreignPlaceholders = map[string]string{
	"__key__": "memtier_benchmark's", "__data__": "memtier_benchmark's",
	"__rand_1st__": "valkey-benchmark's", "__rand_2nd__": "valkey-benchmark's", "__rand_3rd__": "valkey-benchmark's",
	"__rand_4th__": "valkey-benchmark's", "__rand_5th__": "valkey-benchmark's", "__rand_6th__": "valkey-benchmark's",
	"__rand_7th__": "valkey-benchmark's", "__rand_8th__": "valkey-benchmark's", "__rand_9th__": "valkey-benchmark's",
}

// MongoFirstBatch is how many documents a filter operation reads: one find
// whose first batch (the server's default size) is its only one, so that
// the server closes the cursor and the operation is one round trip.
const MongoFirstBatch = 101

// UserWorkload is the user's workload as it runs, secrets included: never
// print or store it (Spec holds its redacted form and WorkloadRecord).
type UserWorkload struct {
	// Commands are Redis commands split into arguments (redis-cli's
	// quoting); one operation sends them all as one pipeline.
	Commands [][]string
	// Keyspace is the range of RandInt; 0 if nothing holds one.
	Keyspace int64
	// Filter is a MongoDB filter in extended JSON, run as one find on
	// Database.Collection; FilterBSON is it encoded (EncodeFilter).
	Filter               string
	FilterBSON           []byte
	Database, Collection string
	// Method, Headers and Body make the HTTP request;
	// HasBody says a body was given (it may be empty). Paths, if any, are
	// the request paths, one picked at random per request.
	Method  string
	Headers []Header
	Body    []byte
	HasBody bool
	Paths   []string
}

// Header is an HTTP header of the user's request (-H "Name: value"),
// split and trimmed; an empty Value leaves a header tlsbench would write
// out, as curl's "-H 'Accept:'" does.
type Header struct{ Name, Value string }

// WorkloadRecord is what the result records of the user's workload: its
// text with secrets hidden (AUTH arguments, credential headers; a body as
// its size and checksum only) and the SHA-256 of that text, so that two
// results tell whether they ran the same workload.
type WorkloadRecord struct {
	Text   string `json:"text"`
	SHA256 string `json:"sha256"`
	// BodyBytes and BodySHA256 describe an HTTP body, which is not stored:
	// bodies often hold credentials.
	BodyBytes  int    `json:"body_bytes,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	// Paths is how many request paths the ⟨paths⟩ file holds, PathsSHA256
	// the checksum of the file.
	Paths       int    `json:"paths,omitempty"`
	PathsSHA256 string `json:"paths_sha256,omitempty"`
}

// UserWorkload returns the user's workload as it runs, secrets included;
// zero if the run uses a named workload.
func (s Spec) UserWorkload() UserWorkload { return s.secretWork }

// userWorkload checks the options of the user's workload against the
// target, reads the files they name, and keeps their secrets out of the
// Spec. It runs before workload, whose named workloads they replace.
func (s *Spec) userWorkload(t Target) error {
	raw := *s
	defer s.hideWorkload() // on success and on error alike
	engine := t.Engine()
	redis := len(s.Commands) > 0
	mongo := s.Filter != "" || s.Collection != ""
	http := s.Method != "" || len(s.Headers) > 0 || s.Data != "" || s.Paths != ""
	switch {
	case redis && engine != "redis":
		return errorf("⟨commands⟩ applies to redis targets: %s is not one", t.Redacted)
	case mongo && engine != "mongodb":
		field := "⟨filter⟩"
		if s.Filter == "" {
			field = "⟨collection⟩"
		}
		return errorf("%s applies to mongodb targets: %s is not one", field, t.Redacted)
	case http && engine != "http" && engine != "builtin":
		return errorf("%s applies to http:// and https:// targets: %s is not one", s.httpField(), t.Redacted)
	case !redis && !mongo && !http:
		if s.Keyspace != 0 {
			return errorf("⟨keyspace⟩ is the range of %s in ⟨commands⟩ or ⟨filter⟩: give one of them", RandInt)
		}
		switch s.Workload {
		case WorkloadCommand:
			return errorf("⟨workload⟩ %s runs ⟨commands⟩: give ⟨commands⟩ instead", s.Workload)
		case WorkloadFilter:
			return errorf("⟨workload⟩ %s runs ⟨filter⟩: give ⟨filter⟩ instead", s.Workload)
		case WorkloadRequest:
			return errorf("⟨workload⟩ %s runs -X, -H, --data or --paths: give them instead", s.Workload)
		}
		return nil
	}
	field, name := "⟨commands⟩", WorkloadCommand
	switch {
	case mongo:
		field, name = "⟨filter⟩", WorkloadFilter
	case http:
		field, name = s.httpField(), WorkloadRequest
	}
	switch {
	case s.Preset != "" && s.Preset != PresetDefault:
		return errorf("⟨preset⟩ %s runs its own workload: leave %s out", s.Preset, field)
	case slices.Contains(s.Experiments, Stream):
		return errorf("the stream experiment reads one large result: leave %s out", field)
	case s.Workload != "" && s.Workload != name:
		return errorf("%s replaces ⟨workload⟩: give one of them", field)
	}
	if s.Keyspace < 0 || s.Keyspace > MaxKeyspace {
		return errorf("⟨keyspace⟩ %d is out of range: use 1 to %d (12 digits, as redis-benchmark's -r)", s.Keyspace, MaxKeyspace)
	}
	s.Workload = name
	w := UserWorkload{Keyspace: s.Keyspace}
	var rec WorkloadRecord
	var err error
	switch {
	case redis:
		rec, err = w.redis(raw.Commands)
	case mongo:
		rec, err = w.mongo(raw.Filter, raw.Collection, t.database())
	default:
		rec, err = w.http(raw, t)
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(rec.Text))
	rec.SHA256 = hex.EncodeToString(sum[:])
	s.secretWork, s.Recorded = w, &rec
	return nil
}

// httpField names the first HTTP option given, for messages.
func (s *Spec) httpField() string {
	switch {
	case s.Method != "":
		return "⟨method⟩"
	case len(s.Headers) > 0:
		return "⟨headers⟩"
	case s.Data != "":
		return "⟨data⟩"
	}
	return "⟨paths⟩"
}

// hideWorkload replaces the secrets of the workload options by "xxxxx"
// (see RedactCommandLine, RedactHeader, RedactData). Idempotent.
func (s *Spec) hideWorkload() {
	// Copies: the caller's slices keep what it gave.
	s.Commands, s.Headers = slices.Clone(s.Commands), slices.Clone(s.Headers)
	for i, c := range s.Commands {
		s.Commands[i] = RedactCommandLine(c)
	}
	for i, h := range s.Headers {
		s.Headers[i] = RedactHeader(h)
	}
	s.Data = RedactData(s.Data)
}

// RedactCommandLine hides the credentials of a Redis command line (see
// RedactCommand); one that does not parse is hidden whole.
func RedactCommandLine(c string) string {
	args, err := SplitCommand(c)
	if err != nil {
		return hidden
	}
	return JoinCommand(RedactCommand(args))
}

// RedactHeader hides the value of a credential header ("Authorization:
// xxxxx", see secretHeader); a header without ':' is hidden whole.
func RedactHeader(h string) string {
	name, _, ok := strings.Cut(h, ":")
	switch {
	case !ok:
		return hidden
	case secretHeader(name):
		return strings.TrimSpace(name) + ": " + hidden
	}
	return h
}

// RedactData hides an inline --data body; "@FILE" keeps the file's name.
func RedactData(d string) string {
	if d == "" || strings.HasPrefix(d, "@") {
		return d
	}
	return hidden
}

// checkPlaceholders refuses other tools' placeholders in text, naming the
// first, and says whether it holds RandInt; what names the option.
func checkPlaceholders(what, text string) (bool, error) {
	first, at := "", len(text)
	for p := range foreignPlaceholders {
		if i := strings.Index(text, p); i >= 0 && i < at {
			first, at = p, i
		}
	}
	if first != "" {
		return false, errorf("%s: %s is %s placeholder: tlsbench expands redis-benchmark's %s (a random number below ⟨keyspace⟩)", what, first, foreignPlaceholders[first], RandInt)
	}
	return strings.Contains(text, RandInt), nil
}

// needKeyspace checks ⟨keyspace⟩ against whether the workload holds
// RandInt.
func (w UserWorkload) needKeyspace(what string, has bool) error {
	switch {
	case has && w.Keyspace == 0:
		return errorf("%s holds %s: give ⟨keyspace⟩ N, the range of its random numbers (redis-benchmark's -r)", what, RandInt)
	case !has && w.Keyspace != 0:
		return errorf("⟨keyspace⟩ is the range of %s, which %s does not hold: leave it out or add %s", RandInt, what, RandInt)
	}
	return nil
}

// refusedCommands make a Redis connection stop answering one reply per
// command, or end it: nothing to time request by request.
var refusedCommands = []string{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR", "SYNC", "PSYNC", "REPLCONF", "QUIT", "RESET"}

func (w *UserWorkload) redis(commands []string) (WorkloadRecord, error) {
	var lines []string
	has := false
	for i, c := range commands {
		what := "⟨commands⟩"
		if len(commands) > 1 {
			what = fmt.Sprintf("⟨commands⟩ %d of %d", i+1, len(commands))
		}
		args, err := SplitCommand(c)
		if err != nil {
			return WorkloadRecord{}, errorf("%s: %v: quote as redis-cli does (\"...\" with \\ escapes, or '...')", what, err)
		}
		if len(args) == 0 {
			return WorkloadRecord{}, errorf("%s is empty: give a Redis command such as 'GET key:%s'", what, RandInt)
		}
		name := strings.ToUpper(args[0])
		if slices.Contains(refusedCommands, name) {
			return WorkloadRecord{}, errorf("%s: %s changes the connection from one reply per command: tlsbench times commands and their replies", what, name)
		}
		h, err := checkPlaceholders(what, c)
		if err != nil {
			return WorkloadRecord{}, err
		}
		has = has || h
		w.Commands = append(w.Commands, args)
		lines = append(lines, JoinCommand(RedactCommand(args)))
	}
	if err := w.needKeyspace("⟨commands⟩", has); err != nil {
		return WorkloadRecord{}, err
	}
	text := strings.Join(lines, "\n")
	if w.Keyspace > 0 {
		text += fmt.Sprintf("\nkeyspace %d", w.Keyspace)
	}
	return WorkloadRecord{Text: text}, nil
}

// SplitCommand splits a command line into arguments as redis-cli does
// (sdssplitargs): white space separates; "..." takes the escapes \n, \r,
// \t, \b, \a, \xHH and \ before any other character; '...' takes \' only;
// a closing quote must be followed by white space or the end.
func SplitCommand(line string) ([]string, error) {
	var args []string
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, nil
		}
		var cur []byte
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				switch {
				case p >= len(line):
					return nil, fmt.Errorf("unbalanced quotes")
				case line[p] == '\\' && p+3 < len(line) && line[p+1] == 'x' && isHex(line[p+2]) && isHex(line[p+3]):
					b, _ := strconv.ParseUint(line[p+2:p+4], 16, 8)
					cur = append(cur, byte(b))
					p += 3
				case line[p] == '\\' && p+1 < len(line):
					p++
					c := line[p]
					if e, ok := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[c]; ok {
						c = e
					}
					cur = append(cur, c)
				case line[p] == '"':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, fmt.Errorf("a closing quote must be followed by a space (at byte %d)", p+1)
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			case inSingle:
				switch {
				case p >= len(line):
					return nil, fmt.Errorf("unbalanced quotes")
				case line[p] == '\\' && p+1 < len(line) && line[p+1] == '\'':
					p++
					cur = append(cur, '\'')
				case line[p] == '\'':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, fmt.Errorf("a closing quote must be followed by a space (at byte %d)", p+1)
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			default:
				switch {
				case p >= len(line) || isSpace(line[p]):
					done = true
				case line[p] == '"':
					inDouble = true
				case line[p] == '\'':
					inSingle = true
				default:
					cur = append(cur, line[p])
				}
			}
			if p < len(line) {
				p++
			}
		}
		args = append(args, string(cur))
	}
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// JoinCommand writes arguments back as SplitCommand reads them: bare where
// they can be, else double-quoted with escapes (redis-cli's repr).
func JoinCommand(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		bare := a != ""
		for j := 0; j < len(a) && bare; j++ {
			c := a[j]
			bare = c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '\\'
		}
		if bare {
			out[i] = a
			continue
		}
		var b strings.Builder
		b.WriteByte('"')
		for j := 0; j < len(a); j++ {
			switch c := a[j]; {
			case c == '\\' || c == '"':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < ' ' || c >= 0x7f:
				fmt.Fprintf(&b, `\x%02x`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
		out[i] = b.String()
	}
	return strings.Join(out, " ")
}

// RedactCommand returns a copy of a Redis command with its credentials
// hidden: every argument of AUTH; the username and password after AUTH in
// HELLO and MIGRATE (AUTH2 too); the value of CONFIG SET requirepass and
// masterauth; the password rules (>, <, #, !) of ACL SETUSER.
func RedactCommand(args []string) []string {
	out := slices.Clone(args)
	if len(out) == 0 {
		return out
	}
	hide := func(from, n int) {
		for i := from; i < from+n && i < len(out); i++ {
			out[i] = hidden
		}
	}
	switch strings.ToUpper(out[0]) {
	case "AUTH":
		hide(1, len(out))
	case "HELLO", "MIGRATE":
		for i := 1; i < len(out); i++ {
			switch strings.ToUpper(out[i]) {
			case "AUTH":
				n := 2 // HELLO: username and password
				if strings.EqualFold(out[0], "MIGRATE") {
					n = 1 // MIGRATE AUTH password
				}
				hide(i+1, n)
			case "AUTH2":
				hide(i+1, 2)
			}
		}
	case "CONFIG":
		if len(out) > 1 && strings.EqualFold(out[1], "SET") {
			for i := 2; i+1 < len(out); i += 2 {
				if k := strings.ToLower(out[i]); k == "requirepass" || k == "masterauth" {
					out[i+1] = hidden
				}
			}
		}
	case "ACL":
		if len(out) > 1 && strings.EqualFold(out[1], "SETUSER") {
			for i := 3; i < len(out); i++ {
				if out[i] != "" && strings.IndexByte("><#!", out[i][0]) >= 0 {
					out[i] = out[i][:1] + hidden
				}
			}
		}
	}
	return out
}

// database is the database a mongodb:// URL names in its path, "" for
// none (or another target).
func (t Target) database() string {
	if t.url == nil {
		return ""
	}
	return strings.Trim(t.url.Path, "/")
}

func (w *UserWorkload) mongo(filter, collection, db string) (WorkloadRecord, error) {
	if filter == "" {
		filter = "{}"
	}
	doc, err := EncodeFilter(filter)
	if err != nil {
		return WorkloadRecord{}, err
	}
	has, err := checkPlaceholders("⟨filter⟩", filter)
	if err != nil {
		return WorkloadRecord{}, err
	}
	if err := w.needKeyspace("⟨filter⟩", has); err != nil {
		return WorkloadRecord{}, err
	}
	w.Filter, w.FilterBSON = filter, doc
	switch {
	case collection == "":
		return WorkloadRecord{}, errorf("⟨filter⟩ needs ⟨collection⟩: DB.COLLECTION, or COLLECTION in the URL's database (mongodb://HOST/DB)")
	case db != "":
		w.Database, w.Collection = db, collection
	default:
		d, c, ok := strings.Cut(collection, ".")
		if !ok || d == "" || c == "" {
			return WorkloadRecord{}, errorf("⟨collection⟩ %q: the URL names no database: give DB.COLLECTION (or mongodb://HOST/DB and COLLECTION)", collection)
		}
		w.Database, w.Collection = d, c
	}
	if strings.ContainsAny(w.Database, "/\\. \"$\x00") || strings.ContainsAny(w.Collection, "$\x00") {
		return WorkloadRecord{}, errorf("⟨collection⟩ %s.%s: not a MongoDB namespace (no '$' in names, no '/\\. \"' in a database name)", w.Database, w.Collection)
	}
	text := fmt.Sprintf("db.%s.find(%s) on %s, first batch of at most %d", w.Collection, filter, w.Database, MongoFirstBatch)
	if w.Keyspace > 0 {
		text += fmt.Sprintf("\nkeyspace %d", w.Keyspace)
	}
	return WorkloadRecord{Text: text}, nil
}

// EncodeFilter checks a MongoDB filter, a JSON object (a syntax error is
// given with its line and column) that the official driver reads as
// extended JSON, relaxed or canonical, and encodes it as BSON.
func EncodeFilter(filter string) ([]byte, error) {
	var v any
	if err := json.Unmarshal([]byte(filter), &v); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			line, col := position(filter, se.Offset)
			return nil, errorf("⟨filter⟩ is not JSON at line %d, column %d: %v (quote keys and strings with \", as extended JSON does)", line, col, se)
		}
		return nil, errorf("⟨filter⟩ is not JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errorf("⟨filter⟩ must be a JSON object, e.g. {\"_id\": \"user%s\"}", RandInt)
	}
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(filter), false, &d); err != nil {
		return nil, errorf("⟨filter⟩ is not MongoDB extended JSON: %v", err)
	}
	doc, err := bson.Marshal(d)
	if err != nil {
		return nil, errorf("⟨filter⟩ cannot be encoded as BSON: %v", err)
	}
	return doc, nil
}

// position turns a byte offset just past an error into a line and column.
func position(s string, off int64) (line, col int) {
	off = min(max(off, 1), int64(len(s)))
	before := s[:off]
	line = 1 + strings.Count(before, "\n")
	col = int(off) - strings.LastIndex(before, "\n") - 1
	return line, col
}

// Headers tlsbench writes itself and that a -H cannot set: they frame the
// request and say whether the connection stays open.
var framingHeaders = []string{"connection", "content-length", "transfer-encoding", "upgrade", "expect", "te", "keep-alive"}

// secretHeader says whether a header's value is a credential: stored as
// "xxxxx".
func secretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "authorization" || n == "proxy-authorization" || n == "cookie" || n == "set-cookie" {
		return true
	}
	for _, w := range []string{"token", "secret", "key", "auth", "password", "passwd", "session", "credential", "signature", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func (w *UserWorkload) http(raw Spec, t Target) (WorkloadRecord, error) {
	w.Method = raw.Method
	switch {
	case w.Method == "" && raw.Data != "":
		w.Method = "POST" // curl's --data
	case w.Method == "":
		w.Method = "GET"
	case !validToken(w.Method):
		return WorkloadRecord{}, errorf("⟨method⟩ %q is not an HTTP method: give a token such as GET, POST, PUT, DELETE", w.Method)
	case strings.EqualFold(w.Method, "CONNECT"):
		return WorkloadRecord{}, errorf("⟨method⟩ CONNECT turns the connection into a tunnel: tlsbench measures requests and responses")
	}
	var rec WorkloadRecord
	var head []string
	for i, h := range raw.Headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return WorkloadRecord{}, errorf("⟨headers⟩ %d has no ':': write it as 'Name: value', as curl's -H", i+1)
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !validToken(name) {
			return WorkloadRecord{}, errorf("⟨headers⟩ %d: %q is not a header name", i+1, name)
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return WorkloadRecord{}, errorf("⟨headers⟩ %d (%s): the value holds a control character", i+1, name)
		}
		if slices.Contains(framingHeaders, strings.ToLower(name)) {
			return WorkloadRecord{}, errorf("⟨headers⟩ %s: tlsbench sets it (Connection: close on a connection's last request, Content-Length from --data): leave it out", name)
		}
		w.Headers = append(w.Headers, Header{name, value})
		shown := value
		if secretHeader(name) {
			shown = hidden
		}
		head = append(head, name+": "+shown)
	}
	if raw.Data != "" {
		w.HasBody = true
		if path, ok := strings.CutPrefix(raw.Data, "@"); ok {
			if path == "" || path == "-" {
				return WorkloadRecord{}, errorf("⟨data⟩ @FILE: name a file (tlsbench reads no body from standard input)")
			}
			body, err := files.Read(path, "⟨data⟩ file", files.MaxScript)
			if err != nil {
				return WorkloadRecord{}, errorf("%v", err)
			}
			w.Body = body
		} else {
			w.Body = []byte(raw.Data)
		}
		sum := sha256.Sum256(w.Body)
		rec.BodyBytes, rec.BodySHA256 = len(w.Body), hex.EncodeToString(sum[:])
	}
	path := raw.Path
	if path == "" {
		path = t.Path
	}
	if path == "" {
		path = "/"
	}
	line := w.Method + " " + Redact(path)
	if raw.Paths != "" {
		if t.Path != "" && t.Path != "/" {
			return WorkloadRecord{}, errorf("⟨paths⟩ gives the request paths: give the URL without a path (%s has one)", t.Redacted)
		}
		data, err := files.Read(raw.Paths, "⟨paths⟩ file", files.MaxScript)
		if err != nil {
			return WorkloadRecord{}, errorf("%v", err)
		}
		if w.Paths, err = readPaths(raw.Paths, data); err != nil {
			return WorkloadRecord{}, err
		}
		sum := sha256.Sum256(data)
		rec.Paths, rec.PathsSHA256 = len(w.Paths), hex.EncodeToString(sum[:])
		line = fmt.Sprintf("%s <one of %d paths in %s, sha256 %s>", w.Method, rec.Paths, raw.Paths, rec.PathsSHA256)
	}
	var b strings.Builder
	b.WriteString(line + " HTTP/1.1\n")
	for _, h := range head {
		b.WriteString(h + "\n")
	}
	if w.HasBody {
		src := "inline"
		if strings.HasPrefix(raw.Data, "@") {
			src = raw.Data
		}
		fmt.Fprintf(&b, "\n<body: %d bytes (%s), sha256 %s>\n", rec.BodyBytes, src, rec.BodySHA256)
	}
	rec.Text = strings.TrimSuffix(b.String(), "\n")
	return rec, nil
}

// readPaths reads a --paths file: one request path a line; blank lines and
// lines starting with '#' are skipped. A path must be in origin form
// (/path?query); errors name the line, not the path, which may hold a
// token.
func readPaths(name string, data []byte) ([]string, error) {
	var paths []string
	for i, line := range bytes.Split(data, []byte("\n")) {
		p := strings.TrimSpace(string(line))
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		where := fmt.Sprintf("⟨paths⟩ %s:%d", name, i+1)
		switch {
		case !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//"):
			return nil, errorf("%s: a path must start with one '/' (e.g. /index.html?q=1), not a URL", where)
		case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return nil, errorf("%s: a path holds white space or a control character: percent-encode it (%%20)", where)
		case strings.Contains(p, "#"):
			return nil, errorf("%s: a path holds '#': a fragment is not sent; percent-encode it (%%23) or leave it out", where)
		}
		if _, err := url.ParseRequestURI(p); err != nil {
			return nil, errorf("%s: not a request path: percent-encode its special characters", where)
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return nil, errorf("⟨paths⟩ %s holds no path: one path a line, e.g. /index.html", name)
	}
	return paths, nil
}

// validToken says whether s is an HTTP token (a method, a header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Template is a text with RandInt placeholders, found once and filled per
// operation: the one copy of redis-benchmark's substitution, for Redis
// arguments and a MongoDB filter's BSON.
type Template struct {
	text []byte
	at   []int // offsets of the placeholders
}

// NewTemplate finds the placeholders of text.
func NewTemplate(text []byte) Template {
	t := Template{text: text}
	for i := 0; ; {
		j := bytes.Index(text[i:], []byte(RandInt))
		if j < 0 {
			return t
		}
		t.at = append(t.at, i+j)
		i += j + len(RandInt)
	}
}

// Empty says whether the template holds no placeholder.
func (t Template) Empty() bool { return len(t.at) == 0 }

// Fill appends the text to dst with each placeholder replaced by its own
// uniform random number in [0, keyspace), as 12 digits.
func (t Template) Fill(dst []byte, keyspace int64) []byte {
	start := len(dst)
	dst = append(dst, t.text...)
	for _, at := range t.at {
		n := uint64(0)
		if keyspace > 0 {
			n = rand.Uint64N(uint64(keyspace))
		}
		p := dst[start+at : start+at+len(RandInt)]
		for k := len(p) - 1; k >= 0; k-- {
			p[k] = '0' + byte(n%10)
			n /= 10
		}
	}
	return dst
}
