package cli

// Docs as tests: every tlsbench command in README.md and docs/*.md runs,
// shortened, against the servers the docs send the reader to, so that the
// docs cannot drift from the tool.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// docCmd is one command of a fenced sh/console block of a doc.
type docCmd struct {
	file string // README.md, docs/flags.md
	line int
	text string   // as written, continuation lines joined
	args []string // after the program name, shell-split
	skip string   // <!-- doc-test: skip REASON -->
	exit int      // <!-- doc-test: exit N -->: the exit code the doc shows
}

func (c docCmd) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

// docFile is a file a doc defines for its commands: a ```sql block whose
// first line is "-- NAME.sql: ...".
type docFile struct{ name, text string }

var (
	directiveRE = regexp.MustCompile(`^<!--\s*doc-test:\s*(skip|exit)\s*(.*?)\s*-->$`)
	sqlFileRE   = regexp.MustCompile(`^--\s*([\w.-]+\.sql):`)
)

// parseDoc extracts the commands and files of one markdown file: every
// line of a sh block, the "$ " lines of a console block. A directive
// comment applies to the fenced block right below it (blank
// lines between allowed). A command in an unlabelled block is an error:
// label the block sh (a command) or text (output).
func parseDoc(name, text string) (cmds []docCmd, files []docFile, err error) {
	lines := strings.Split(text, "\n")
	var skip string
	exit := 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := directiveRE.FindStringSubmatch(l); m != nil {
			switch m[1] {
			case "skip":
				if m[2] == "" {
					return nil, nil, fmt.Errorf("%s:%d: doc-test: skip needs a reason", name, i+1)
				}
				skip = m[2]
			case "exit":
				n, err := strconv.Atoi(m[2])
				if err != nil {
					return nil, nil, fmt.Errorf("%s:%d: doc-test: exit takes a number", name, i+1)
				}
				exit = n
			}
			continue
		}
		if !strings.HasPrefix(l, "```") {
			if l != "" {
				skip, exit = "", 0
			}
			continue
		}
		lang := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		switch lang {
		case "sh", "console", "bash", "shell":
			for j := 0; j < len(body); j++ {
				at := start + 2 + j
				cmd := strings.TrimSpace(body[j])
				if lang == "console" {
					// A console block is a session: commands after "$ ",
					// the rest is their output.
					var ok bool
					if cmd, ok = strings.CutPrefix(cmd, "$ "); !ok {
						continue
					}
				}
				for strings.HasSuffix(cmd, `\`) && j+1 < len(body) {
					j++
					cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(body[j])
				}
				prog, ok := program(cmd)
				if !ok {
					continue
				}
				args, err := shellWords(strings.TrimPrefix(cmd, prog))
				if err != nil && skip == "" {
					return nil, nil, fmt.Errorf("%s:%d: %v", name, at, err)
				}
				cmds = append(cmds, docCmd{file: name, line: at, text: cmd, args: args, skip: skip, exit: exit})
			}
		case "sql":
			if len(body) > 0 {
				if m := sqlFileRE.FindStringSubmatch(body[0]); m != nil {
					files = append(files, docFile{m[1], strings.Join(body, "\n") + "\n"})
				}
			}
		case "":
			for j, b := range body {
				if _, ok := program(strings.TrimPrefix(strings.TrimSpace(b), "$ ")); ok {
					return nil, nil, fmt.Errorf("%s:%d: a command in an unlabelled block: label the block ```sh (commands), ```console (commands after $, and their output) or ```text (output)", name, start+2+j)
				}
			}
		}
		skip, exit = "", 0
	}
	return cmds, files, nil
}

// program is how a command line calls tlsbench, if it does.
func program(line string) (string, bool) {
	for _, p := range []string{"go run ./cmd/tlsbench", "tlsbench"} {
		if line == p || strings.HasPrefix(line, p+" ") {
			return p, true
		}
	}
	return "", false
}

// docEnv is what the docs' commands may name as $VAR.
var docEnv = map[string]string{
	"TOKEN": "doc-test-token",
}

// shellWords splits a command line as sh would for the quoting the docs
// use: '...', "..." with $VAR, \-escapes, a # comment, and a pipe that
// ends tlsbench's part of the line.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int) (int, error) {
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		v, ok := docEnv[s[i+1:j]]
		if !ok {
			return 0, fmt.Errorf("$%s: the doc test knows no value for it (mark the block <!-- doc-test: skip REASON -->)", s[i+1:j])
		}
		w.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case c == '#' && !inWord:
			return words, nil
		case c == '|' && !inWord:
			return words, nil // tlsbench's output piped on: its part ends here
		case c == ';' || c == '&' || c == '>' || c == '<' || c == '`':
			return nil, fmt.Errorf("%q: the doc test runs single commands", c)
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed '")
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; {
				switch {
				case s[i] == '\\' && i+1 < len(s):
					w.WriteByte(s[i+1])
					i += 2
				case s[i] == '$':
					j, err := expand(i)
					if err != nil {
						return nil, err
					}
					i = j
				default:
					w.WriteByte(s[i])
					i++
				}
			}
			if i >= len(s) {
				return nil, errors.New(`unclosed "`)
			}
			i++
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			inWord = true
			i += 2
		case c == '$':
			j, err := expand(i)
			if err != nil {
				return nil, err
			}
			inWord = true
			i = j
		default:
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// docsRoot is the repository's top directory, seen from this package.
const docsRoot = "../.."

func readDocs(t *testing.T) (cmds []docCmd, files map[string][]docFile) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names = append([]string{filepath.Join(docsRoot, "README.md")}, names...)
	files = map[string][]docFile{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(docsRoot, n)
		c, f, err := parseDoc(rel, string(b))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c...)
		files[rel] = f
	}
	return cmds, files
}

// TestDocsParse checks the extraction on a doc of every shape the docs use.
// Fast: it runs nothing.
func TestDocsParse(t *testing.T) {
	doc := "intro\n" +
		"```sh\n" +
		"go run ./cmd/tlsbench     # the default run\n" +
		"make test\n" +
		"tlsbench connect 'postgres://app@db/app?sslmode=require' --tls off,1.3 \\\n" +
		"    -H \"Authorization: Bearer $TOKEN\"   # a comment\n" +
		"tlsbench kube pool https://x/ --shards 2 | kubectl apply -f -\n" +
		"```\n" +
		"<!-- doc-test: exit 2 -->\n\n" +
		"```console\n" +
		"$ tlsbench connect --trails 3\n" +
		"tlsbench: unknown flag: --trails\n" +
		"```\n" +
		"<!-- doc-test: skip needs your own certificate files -->\n" +
		"```sh\n" +
		"tlsbench connect rediss://h --cert c.crt\n" +
		"```\n" +
		"```sql\n-- bench.sql: a select\nSELECT 1;\n```\n" +
		"```text\ntlsbench connect is output here\n```\n" +
		"```console\n$ tlsbench crypto x25519\ntlsbench 0.1.0-dev — output\n```\n"
	cmds, files, err := parseDoc("x.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []docCmd{
		{line: 3, args: nil},
		{line: 5, args: []string{"connect", "postgres://app@db/app?sslmode=require", "--tls", "off,1.3", "-H", "Authorization: Bearer doc-test-token"}},
		{line: 7, args: []string{"kube", "pool", "https://x/", "--shards", "2"}},
		{line: 12, args: []string{"connect", "--trails", "3"}, exit: 2},
		{line: 17, args: []string{"connect", "rediss://h", "--cert", "c.crt"}, skip: "needs your own certificate files"},
		{line: 27, args: []string{"crypto", "x25519"}},
	}
	if len(cmds) != len(want) {
		t.Fatalf("got %d commands, want %d: %v", len(cmds), len(want), cmds)
	}
	for i, w := range want {
		g := cmds[i]
		if g.line != w.line || !slices.Equal(g.args, w.args) || g.skip != w.skip || g.exit != w.exit {
			t.Errorf("command %d: got line %d %q skip %q exit %d, want line %d %q skip %q exit %d", i, g.line, g.args, g.skip, g.exit, w.line, w.args, w.skip, w.exit)
		}
	}
	if len(files) != 1 || files[0].name != "bench.sql" || !strings.Contains(files[0].text, "SELECT 1;") {
		t.Errorf("files: %v", files)
	}
	for _, bad := range []string{
		"```\ntlsbench connect builtin\n```\n",  // unlabelled
		"```sh\ntlsbench connect $NOPE\n```\n",  // unknown variable
		"<!-- doc-test: skip -->\n```sh\n```\n", // no reason
	} {
		if _, _, err := parseDoc("x.md", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// The real docs parse, and every skip says why in the doc itself.
	all, _ := readDocs(t)
	if len(all) < 20 {
		t.Errorf("only %d commands found in README.md and docs/*.md", len(all))
	}
}

// engineOf is the lab engine serving a URL scheme ("builtin" for HTTP).
func engineOf(scheme string) string {
	switch scheme {
	case "postgres", "postgresql":
		return "postgres"
	case "mysql":
		return "mariadb"
	case "redis", "rediss":
		return "redis"
	case "mongodb":
		return "mongodb"
	case "http", "https":
		return "builtin"
	}
	return ""
}

// docTarget is the URL target of a command, if it has one: its position
// among args and its engine.
func docTarget(args []string) (int, string) {
	for i, a := range args {
		if a == "--" {
			break
		}
		u, err := url.Parse(a)
		if err != nil || !strings.Contains(a, "://") {
			continue
		}
		if e := engineOf(u.Scheme); e != "" {
			return i, e
		}
	}
	return -1, ""
}

// labURL is the URL `tlsbench lab` (or `tlsbench serve`) prints for what
// the doc's URL asks: its user, host, port and database replace the doc's,
// its passfile and CA the doc's files; the doc's other parameters stay.
func labURL(srv lab.Server, doc string) (string, error) {
	du, err := url.Parse(doc)
	if err != nil {
		return "", err
	}
	q := du.Query()
	tls := du.Scheme == "https" || du.Scheme == "rediss" || q.Get("tls") == "true"
	raw, err := srv.URL("", tls)
	if err != nil {
		return "", err
	}
	lu, err := url.Parse(printableURL(raw, srv.PasswordFile()))
	if err != nil {
		return "", err
	}
	if srv.Engine() == "builtin" {
		lu.RawQuery = du.RawQuery
		lu.Path = du.Path
		return lu.String(), nil
	}
	if srv.PasswordFile() == "" {
		q2 := lu.Query()
		q2.Del("passfile")
		lu.RawQuery = q2.Encode()
	}
	if lu.Path == "" || lu.Path == "/" {
		lu.Path = du.Path // MongoDB: the doc's database, where its collections are
	}
	lq := lu.Query()
	for k, vs := range q {
		switch k {
		case "passfile":
			continue
		case "sslrootcert", "tlsCAFile", "ssl-ca":
			lq.Set(k, srv.CAFile())
			continue
		}
		if _, ok := lq[k]; !ok {
			lq[k] = vs
		}
	}
	lu.RawQuery = lq.Encode()
	return lu.String(), nil
}

// shortenings bound a doc command to a test's time: a flag's value is
// replaced where the command gives it, and the flag added where the
// command takes it but does not give it (add).
var shortenings = []struct {
	name, short string
	value       func(string) string
	add         bool
}{
	{"duration", "d", fixed("200ms"), true},
	{"trials", "", fixed("1"), true},
	{"warmup", "", fixed("0"), true},
	// The data a lab fills or prepare writes: 1 table of 1000 rows
	// everywhere, so that every command reads what the one before wrote.
	{"tables", "", fixed("1"), true},
	{"rows", "", fixed("1000"), true},
	{"count", "n", capEach("5"), false},
	{"rtt", "", capEach("10ms"), false},
	{"concurrency", "c", capEach("4"), false},
	{"clients", "", capEach("50"), false},
	{"timeout", "", capEach("10s"), false},
}

func fixed(v string) func(string) string { return func(string) string { return v } }

// capEach caps every item of a comma list at limit (a number or a
// duration), dropping repeats: -c 1,8,32 is 1,4; an emulated 170 ms RTT
// costs a connection a second, 10 ms does not.
func capEach(limit string) func(string) string {
	size := func(v string) (float64, bool) {
		if n, err := strconv.Atoi(v); err == nil {
			return float64(n), true
		}
		d, err := time.ParseDuration(v)
		return float64(d), err == nil
	}
	max, _ := size(limit)
	return func(v string) string {
		var out []string
		for _, f := range strings.Split(v, ",") {
			if x, ok := size(f); ok && x > max {
				f = limit
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
		return strings.Join(out, ",")
	}
}

// shorten rewrites args per shortenings, for the flags the command has.
func shorten(args []string, flags *pflag.FlagSet) []string {
	var out []string
	given := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		out = append(out, a)
		for _, s := range shortenings {
			var name, val string
			hasVal := false
			switch {
			case a == "--"+s.name || s.short != "" && a == "-"+s.short:
				name = a
			case strings.HasPrefix(a, "--"+s.name+"="):
				name, val, hasVal = "--"+s.name, strings.TrimPrefix(a, "--"+s.name+"="), true
			default:
				continue
			}
			given[s.name] = true
			if hasVal {
				out[len(out)-1] = name + "=" + s.value(val)
			} else if i+1 < len(args) {
				i++
				out = append(out, s.value(args[i]))
			}
		}
	}
	for _, s := range shortenings {
		if s.name == "duration" && (given["count"] || slices.Contains(out, "--preset")) {
			continue // -n bounds the trial; a -d would cut it short
		}
		// A hidden flag is one the command takes only to refuse it (storm's
		// -d) or an old spelling: add only what it lists.
		if f := flags.Lookup(s.name); s.add && !given[s.name] && f != nil && !f.Hidden {
			out = append(out, "--"+s.name, s.value(""))
		}
	}
	if flags.Lookup("preset") != nil && slices.Contains(out, "--preset") && !given["count"] {
		out = append(out, "-n", "5") // not a preset's 1000 iterations
	}
	return out
}

// needsRoot says whether a command needs root, as README's "Install"
// lists: --via wireguard and wire --capture.
func needsRoot(args []string) bool {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--capture" || strings.HasPrefix(a, "--capture=") ||
			(a == "--via" && i+1 < len(args) && strings.Contains(args[i+1], "wireguard")) ||
			strings.HasPrefix(a, "--via=") && strings.Contains(a, "wireguard") {
			return true
		}
	}
	return false
}

// flagsOf is the flag set of the subcommand args name.
func flagsOf(args []string) (*pflag.FlagSet, string) {
	root := newRootCmd(args, &bytes.Buffer{}, &bytes.Buffer{})
	c, _, err := root.Find(args)
	if err != nil {
		return root.Flags(), ""
	}
	return c.Flags(), c.Name()
}

// TestDocCommands runs every command of README.md and docs/*.md, shortened,
// against the servers the docs send readers to: a URL in a doc is replaced
// by the one `tlsbench lab ENGINE` (or `tlsbench serve`) prints, started once
// per engine; --lab and builtin commands start their own, as written. A
// command fails the test on an exit code other than the doc's (0 unless
// the block is marked <!-- doc-test: exit N -->), which is how an unknown
// flag shows. Skipped commands say why in the doc (<!-- doc-test: skip ... -->).
//
// The commands that use the shared servers or files run one at a time in
// the docs' order (a doc's commands may read what its earlier ones wrote:
// prepare, then pool; shards, then merge, then report); those that start
// servers of their own and write no file a doc names run beside them, a
// few at a time: most of their time is a lab's start and fixed-length
// trials, not CPU, and none of them is timed by this test.
func TestDocCommands(t *testing.T) {
	labtest.Slow(t)
	besideOthers(t)
	cmds, files := readDocs(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The servers the docs' URLs name, started side by side up front.
	var engines []string
	for _, c := range cmds {
		if _, e := docTarget(c.args); e != "" && c.skip == "" && !slices.Contains(engines, e) {
			engines = append(engines, e)
		}
	}
	servers, serverErrs := startDocServers(engines)
	t.Cleanup(func() {
		for _, s := range servers {
			s.Stop()
		}
	})
	// One working directory per doc, for the whole test: a doc's commands
	// may read what its earlier ones wrote (shards, then merge, then report).
	top := t.TempDir()
	dirs := map[string]string{}
	for _, c := range cmds {
		if _, ok := dirs[c.file]; ok {
			continue
		}
		dir := filepath.Join(top, strings.ReplaceAll(c.file, "/", "-"))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		dirs[c.file] = dir
		for _, f := range files[c.file] {
			if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A command the docs repeat (the studies rerun the README's) runs
	// once: the test's time goes to commands that differ.
	ran := map[string]string{}
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	defer wg.Wait() // every t.Run returns before the test does
	var inOrder []func()
	for _, c := range cmds {
		// docs/flags.md:78 is docs-flags.md:78: -run splits patterns at '/'.
		name := fmt.Sprintf("%s:%d", strings.ReplaceAll(c.file, "/", "-"), c.line)
		dir := dirs[c.file]
		args := slices.Clone(c.args)
		engine := ""
		if i, e := docTarget(args); i >= 0 && c.skip == "" {
			engine = e
			if srv := servers[e]; srv != nil {
				u, err := labURL(srv, args[i])
				if err != nil {
					t.Fatal(err)
				}
				args[i] = u
				for j := range args {
					if args[j] == "--ca" && j+1 < len(args) {
						args[j+1] = srv.CAFile()
					}
				}
			}
		}
		flags, sub := flagsOf(args)
		if sub != "lab" && sub != "serve" {
			args = shorten(args, flags)
		}
		key := docKey(args)
		if slices.Contains(args, "-o") {
			key = dir + "\x00" + key // its file may be read by the doc's next command
		}
		dup, isDup := ran[key]
		if c.skip == "" && !(needsRoot(c.args) && os.Geteuid() != 0) && !(isDup && c.exit == 0) {
			ran[key] = fmt.Sprintf("%s:%d", c.file, c.line)
		}
		run := func(t *testing.T) {
			if c.skip != "" {
				t.Skipf("%s: %s", c, c.skip)
			}
			if needsRoot(c.args) && os.Geteuid() != 0 {
				t.Skipf("%s: needs root (WireGuard's network namespaces, a packet capture), as the docs say", c)
			}
			if engine != "" {
				labtest.Check(t, serverErrs[engine])
			}
			if isDup && c.exit == 0 {
				t.Skipf("shortened, the same command as %s", dup)
			}
			runDocCmd(t, exe, dir, c, sub, args)
		}
		if engine != "" || !ownServers(sub, args) {
			inOrder = append(inOrder, func() { t.Run(name, run) })
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(name, run)
		})
	}
	// After the loop, not in it: there, waiting for a turn of sem would
	// hold up the commands in order behind the runs that start servers.
	for _, run := range inOrder {
		run()
	}
}

// docKey is what makes two doc commands the same run once shortened:
// the subcommand's arguments and the flags given, by their long names,
// with their values as parsed (-d 2s in the middle or --duration 2s at
// the end; -c 1,4 or --concurrency=1,4). A flag given at its default
// stays in the key: a given flag can change what a command does. Args
// the flags do not parse keep their text, sorted, as the key.
func docKey(args []string) string {
	flags, _ := flagsOf(args)
	if err := flags.Parse(args); err != nil {
		return strings.Join(slices.Sorted(slices.Values(args)), "\x00")
	}
	key := slices.Clone(flags.Args())
	flags.Visit(func(f *pflag.Flag) { key = append(key, "--"+f.Name+"="+f.Value.String()) })
	return strings.Join(key, "\x00")
}

// startDocServers starts a lab server of each engine (the built-in one as
// `tlsbench serve` does: one RSA-2048 HTTPS listener), side by side; an
// engine that did not start has its error instead.
func startDocServers(engines []string) (map[string]lab.Server, map[string]error) {
	servers, errs := map[string]lab.Server{}, map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() {
			var s lab.Server
			var err error
			if e == "builtin" {
				var b *lab.Builtin
				if b, err = lab.StartBuiltin(context.Background(), lab.BuiltinOptions{Keys: []string{"rsa2048"}}); err == nil {
					s = b
				}
			} else {
				s, err = lab.Start(context.Background(), e, lab.Options{})
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[e] = err
				return
			}
			servers[e] = s
		})
	}
	wg.Wait()
	return servers, errs
}

// ownServers says whether a doc command (with no URL target) runs on
// servers of its own and leaves nothing a later command reads: a run on
// --lab, builtin or the default target, a replicate run on its lab
// cluster, lab (its servers, until Ctrl-C), or crypto, that writes no -o
// file, captures nothing and needs no root. Such commands can run beside
// the others.
func ownServers(sub string, args []string) bool {
	switch sub {
	case "connect", "pool", "stream", "storm", "replicate", "lab", "crypto", "tlsbench":
	default:
		return false
	}
	for _, a := range args {
		if a == "-o" || a == "--output" || strings.HasPrefix(a, "-o=") || strings.HasPrefix(a, "--output=") ||
			a == "--wire" || strings.HasPrefix(a, "--wire=") {
			return false
		}
	}
	return !needsRoot(args)
}

// runDocCmd runs one command as the tlsbench binary (this test binary, see
// TestMain) and checks its exit code. lab and serve run until they print
// their URLs, then get Ctrl-C. A run whose shortened trial finished no
// operation (a loaded machine) runs once more with longer trials.
func runDocCmd(t *testing.T, exe, dir string, c docCmd, sub string, args []string) {
	t.Helper()
	runDocCmdOnce(t, exe, dir, c, sub, args, false)
}

// retryDuration is the trial length of a doc command's second run, when
// its first finished no operation in a shortened trial.
const retryDuration = "2s"

// withDuration is args with every -d/--duration value set to d.
func withDuration(args []string, d string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case a == "--":
			return out
		case (a == "-d" || a == "--duration") && i+1 < len(out):
			out[i+1] = d
		case strings.HasPrefix(a, "--duration="):
			out[i] = "--duration=" + d
		}
	}
	return out
}

func runDocCmdOnce(t *testing.T, exe, dir string, c docCmd, sub string, args []string, retried bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TLSBENCH_AS_MAIN=1")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	want := c.exit
	if sub == "lab" || sub == "serve" {
		// Ready when it prints what to use: then Ctrl-C, as the doc says.
		ready := "Ctrl-C stops the servers."
		if sub == "serve" {
			ready = "ca "
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for !strings.Contains(out.String(), ready) && ctx.Err() == nil {
			<-tick.C
		}
		cmd.Process.Signal(syscall.SIGINT)
		if want == 0 {
			want = exitInterrupted
		}
	}
	err := <-done
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("ran %q in %v: exit %d", args, time.Since(start).Round(time.Millisecond), code)
	if code != want && strings.Contains(out.String(), lab.ErrNotInstalled.Error()) && os.Getenv("CI") == "" {
		t.Skipf("%s: a server it starts is not installed (scripts/install.sh installs it): %s", c, tail(out.String(), 300))
	}
	if code != want && strings.Contains(out.String(), "no operation finished within the trial") && !retried {
		// The shortened trial (200 ms) was too short for one operation on
		// a loaded machine: that is the shortening's fault, not the doc's.
		// Once more, with trials a loaded machine fills.
		t.Logf("no operation finished in a shortened trial: once more with -d %s", retryDuration)
		runDocCmdOnce(t, exe, dir, c, sub, withDuration(args, retryDuration), true)
		return
	}
	if code != want {
		t.Errorf("%s\nran: tlsbench %s\nexit %d, want %d; output:\n%s", c, strings.Join(args, " "), code, want, tail(out.String(), 3000))
	}
}

// syncBuffer is a bytes.Buffer a running command writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile("(?m)^#{1,6} +(.+)$")
)

// anchor is GitHub's id for a heading: lower case, punctuation dropped,
// spaces to hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && !strings.ContainsRune("—–·“”’", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file exists, and so does the heading a #fragment names.
func TestDocLinks(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	names = append(names, filepath.Join(docsRoot, "README.md"))
	anchors := func(file string) map[string]bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil
		}
		// Headings inside fenced blocks are comments, not headings.
		var text []string
		fenced := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fenced = !fenced
			}
			if !fenced {
				text = append(text, l)
			}
		}
		m := map[string]bool{}
		for _, h := range headingRE.FindAllStringSubmatch(strings.Join(text, "\n"), -1) {
			m[anchor(strings.ReplaceAll(h[1], "`", ""))] = true
		}
		return m
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(docsRoot, n)
		for _, m := range linkRE.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(link, "#")
			target := n
			if file != "" {
				target = filepath.Join(filepath.Dir(n), file)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %s: no file %s", rel, link, file)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchors(target)[frag] {
				t.Errorf("%s: link %s: no heading #%s in %s", rel, link, frag, filepath.Base(target))
			}
		}
	}
}

// TestDocShorten checks how a doc command is bounded: values replaced where
// given, added where the subcommand takes the flag, nothing after "--".
func TestDocShorten(t *testing.T) {
	for _, tc := range []struct {
		args []string
		has  [][2]string // flag, value that must follow it
		not  []string    // arguments that must be gone
	}{
		{[]string{"connect", "builtin", "-d", "3s", "--trials", "5"}, [][2]string{{"-d", "200ms"}, {"--trials", "1"}}, []string{"3s", "5"}},
		{[]string{"storm", "builtin", "--clients", "100,10000"}, [][2]string{{"--clients", "50"}}, []string{"100,10000"}},
		{[]string{"pool", "--lab", "mariadb", "-c", "1,2,4,8,16,32", "--rows=1000000"}, [][2]string{{"-c", "1,2,4"}}, []string{"--rows=1000000"}},
		{[]string{"prepare", "postgres://h/db", "--rows", "100000"}, [][2]string{{"--rows", "1000"}}, []string{"--records"}},
		{[]string{"prepare", "mongodb://h/", "--rows", "1000000"}, [][2]string{{"--rows", "1000"}}, nil},
		{[]string{"storm", "--lab", "redis", "--clients", "2000"}, [][2]string{{"--clients", "50"}}, []string{"--duration", "--warmup"}},
		{[]string{"connect", "--lab", "mariadb", "--rtt", "0,44ms,170ms", "-n", "100"}, [][2]string{{"-n", "5"}, {"--rtt", "0,10ms"}}, []string{"--duration"}},
		{[]string{"wire", "--capture", "lo", "--", "tlsbench", "connect", "-d", "3s"}, [][2]string{{"-d", "3s"}}, nil},
	} {
		flags, _ := flagsOf(tc.args)
		got := shorten(tc.args, flags)
		for _, h := range tc.has {
			i := slices.Index(got, h[0])
			if i < 0 || i+1 >= len(got) || got[i+1] != h[1] {
				t.Errorf("%q: got %q, want %s %s", tc.args, got, h[0], h[1])
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("%q: got %q, still holds %s", tc.args, got, n)
			}
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"connect builtin -d 200ms --trials 1", "connect builtin -d 2s --trials 1"},
		{"pool builtin --duration=200ms", "pool builtin --duration=2s"},
		{"wire --capture lo -- tlsbench connect -d 3s", "wire --capture lo -- tlsbench connect -d 3s"},
	} {
		if got := strings.Join(withDuration(strings.Fields(tc.args), "2s"), " "); got != tc.want {
			t.Errorf("withDuration(%s) = %s, want %s", tc.args, got, tc.want)
		}
	}
	// The same run, spelled differently, is one command; a flag given,
	// even at its default, or another value makes another.
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"connect --lab postgres --key rsa1024 --tls off,1.3 --trials 1 -d 200ms", "connect --lab postgres --tls off,1.3 --key rsa1024 --trials 1 --duration 200ms", true},
		{"crypto x25519 ecdh-p256 --duration 200ms", "crypto x25519 ecdh-p256 -d=200ms", true},
		{"crypto x25519 ecdh-p256 -d 200ms", "crypto ecdh-p256 x25519 -d 200ms", false},
		{"connect --lab postgres --group p256 -c 1", "connect --lab postgres --group p256", false},
		{"connect --lab postgres --tls 1.2,1.3", "connect --lab postgres --tls off,1.2,1.3", false},
	} {
		if got := docKey(strings.Fields(tc.a)) == docKey(strings.Fields(tc.b)); got != tc.same {
			t.Errorf("docKey(%s) == docKey(%s): %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	for args, want := range map[string]bool{
		"connect --lab postgres --via direct,wireguard":    true,
		"wire --capture lo --port 5432 -- pgbench":         true,
		"connect --lab postgres --via direct,ssh":          false,
		"wire db.pcap -- tlsbench connect --via wireguard": false,
	} {
		if got := needsRoot(strings.Fields(args)); got != want {
			t.Errorf("needsRoot(%s) = %v, want %v", args, got, want)
		}
	}
}
