package plan

import (
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// secretParams are credential parameter names (of URL queries, libpq
// key=value strings, environment assignments); secretParam takes more.
var secretParams = []string{"password", "pass", "pwd", "sslpassword", "secret", "token", "auth", "key", "sig", "signature"}

// secretParam reports whether a parameter (or an environment variable)
// named key holds a credential: one of secretParams, a name holding
// password, passwd, secret, token or an API key's name (access_token,
// apikey, client_secret, X-Amz-Security-Token), or ending in pass, pwd or
// auth (PGPASSWORD, MYSQL_PWD, REDISCLI_AUTH, SSHPASS). A key file's
// name (sslkey=) is no credential.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(secretParams, k) {
		return true
	}
	for _, w := range []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "credential", "bearer"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	for _, w := range []string{"pass", "pwd", "_auth"} {
		if strings.HasSuffix(k, w) {
			return true
		}
	}
	return false
}

// hidden replaces every secret Redact removes.
const hidden = "xxxxx"

// Redact returns any string fit to print and store: a URL, a libpq
// key=value string, a go-sql-driver DSN, a command-line argument. It hides
//   - everything between the first ':' and the last '@' of the user info
//     (of a URL: after "scheme://"; of anything else, or of anything with
//     a go-sql-driver DSN's "@net(" or "@/": of the whole string), so that a
//     password holding '#', '/', '?' or '@' is hidden whole;
//   - the values of credential parameters (secretParam), as URL query
//     parameters (up to '&' or '#') or as libpq key=value pairs (quoted or
//     up to white space);
//   - a URL's fragment.
//
// Strings without such parts (flags, durations, paths, "builtin",
// "lab:postgres", --via lists such as "direct,ssh:aes128-gcm@openssh.com")
// come back unchanged, and Redact(Redact(s)) == Redact(s).
//
// One case stays ambiguous: in an ssh:// URL, "?cipher=C@openssh.com" is
// taken as a cipher name, not as the end of a password.
//
// A command line goes through RedactArgs, which applies Redact to each
// argument and knows the options that carry credentials.
func Redact(s string) string {
	for range 8 {
		r := redactOnce(s)
		if r == s {
			return s
		}
		s = r
	}
	return hidden // no fixed point: hide everything rather than guess
}

// redactOnce hides the secret regions of s, found on s as given.
func redactOnce(s string) string {
	if viaWords(s) {
		return s
	}
	m := maskCiphers(s)
	var regions [][2]int
	i := strings.Index(m, "://")
	isURL := i > 0 && validScheme(m[:i])
	if !isURL || goSQLDSN.MatchString(m) {
		// A DSN's password may start with "//": "app://pw@tcp(...)/db".
		if at := strings.LastIndex(m, "@"); at >= 0 {
			if c := strings.Index(m[:at], ":"); c >= 0 {
				regions = append(regions, [2]int{c + 1, at})
			}
		}
	}
	if isURL {
		base := i + 3
		rest := m[base:]
		frag := 0
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				regions = append(regions, [2]int{base + c + 1, base + at})
			}
			frag = at + 1
		}
		if h := strings.Index(rest[frag:], "#"); h >= 0 {
			regions = append(regions, [2]int{base + frag + h + 1, len(m)})
		}
	}
	regions = append(regions, secretValues(m)...)
	return hide(s, regions)
}

// secretValues finds the values of credential parameters: after a key
// secretParam takes and '=' that start the string or follow white space, '?',
// '&', ';' or ','. After '?', '&' or ';' (a URL query) the value ends at
// '&' or '#'; otherwise (libpq key=value) it is quoted or ends at white
// space, with backslash escapes, as libpq reads it. Keys inside a value
// count too: "pass= password=x" hides both values.
func secretValues(s string) [][2]int {
	var regions [][2]int
	// Values end where they end whatever their start: remember the last
	// ones, so that keys inside them do not make the scan quadratic.
	queryFrom, queryEnd := -1, -1 // no '&' or '#' in s[queryFrom:queryEnd]
	plainFrom, plainEnd := -1, -1 // an unquoted libpq value
	for j := 0; j < len(s); j++ {
		var before byte = ' '
		if j > 0 {
			before = s[j-1]
		}
		if !isSpace(before) && !strings.ContainsRune("?&;,", rune(before)) {
			continue
		}
		k := j
		for k < len(s) && isKeyChar(s[k]) {
			k++
		}
		key := s[j:k]
		p := skipSpace(s, k)
		if key == "" || p >= len(s) || s[p] != '=' {
			continue
		}
		query := strings.ContainsRune("?&;", rune(before))
		if query {
			if dec, err := url.QueryUnescape(key); err == nil {
				key = dec
			}
		}
		if !secretParam(key) {
			continue
		}
		start, end := p+1, len(s)
		switch {
		case query && queryFrom <= start && start <= queryEnd:
			end = queryEnd
		case query:
			if e := strings.IndexAny(s[start:], "&#"); e >= 0 {
				end = start + e
			}
			queryFrom, queryEnd = start, end
		default:
			start = skipSpace(s, start)
			quoted := start < len(s) && (s[start] == '\'' || s[start] == '"')
			if !quoted && plainFrom <= start && start <= plainEnd {
				end = plainEnd
				break
			}
			end = libpqValueEnd(s, start)
			if !quoted {
				plainFrom, plainEnd = start, end
			}
		}
		regions = append(regions, [2]int{start, end})
		if end == len(s) {
			break // what follows is hidden already
		}
		j = p // look for keys inside the value too
	}
	return regions
}

// libpqValueEnd is where a libpq value starting at i ends: after its
// closing quote, or at white space. A quote or white space after a
// backslash is taken as escaped, as libpq does, and so is one after an
// escaped backslash, which libpq does not: the value found is never
// shorter than libpq's, and its end depends on where it is only.
func libpqValueEnd(s string, i int) int {
	var quote byte
	if i < len(s) && (s[i] == '\'' || s[i] == '"') {
		quote = s[i]
		i++
	}
	for ; i < len(s); i++ {
		if i > 0 && s[i-1] == '\\' {
			continue
		}
		switch {
		case quote != 0 && s[i] == quote:
			return i + 1
		case quote == 0 && isSpace(s[i]):
			return i
		}
	}
	return len(s)
}

func isSpace(c byte) bool { return strings.IndexByte(" \t\n\v\f\r", c) >= 0 }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.%+", c) >= 0
}

// hide replaces the regions of s (merged where they overlap or touch; empty
// ones skipped) by "xxxxx".
func hide(s string, regions [][2]int) string {
	slices.SortFunc(regions, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	last := 0
	for i := 0; i < len(regions); {
		start, end := regions[i][0], regions[i][1]
		for i++; i < len(regions) && regions[i][0] <= end; i++ {
			end = max(end, regions[i][1])
		}
		if start >= end || start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(hidden)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// validScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// viaWords reports whether s is a list of --via entries without a URL
// (direct, ssh, stunnel, ssh:CIPHER, openssh:CIPHER): some ciphers hold an
// '@'.
func viaWords(s string) bool {
	for w := range strings.SplitSeq(s, ",") {
		c, ok := strings.CutPrefix(w, "ssh:")
		oc, ook := strings.CutPrefix(w, RouteOpenSSH+":")
		if w != RouteDirect && w != RouteSSH && w != RouteStunnel && (!ok || !slices.Contains(SSHCiphers, c)) && (!ook || !slices.Contains(OpenSSHCiphers, oc)) {
			return false
		}
	}
	return true
}

// maskCiphers hides from the search for '@' the SSH cipher names with an
// '@' in an ssh:// URL's "cipher=" parameters: it returns s with those '@'
// replaced by NUL, same length.
func maskCiphers(s string) string {
	if !strings.HasPrefix(strings.ToLower(s), "ssh://") || !strings.Contains(s, "@openssh.com") {
		return s
	}
	b := []byte(s)
	for _, c := range SSHCiphers {
		at := strings.IndexByte(c, '@')
		if at < 0 {
			continue
		}
		param := "cipher=" + c
		for i := 0; ; {
			k := strings.Index(s[i:], param)
			if k < 0 {
				break
			}
			k += i
			end := k + len(param)
			if k > 0 && (s[k-1] == '?' || s[k-1] == '&') && (end == len(s) || s[end] == '&' || s[end] == '#') {
				b[k+len("cipher=")+at] = 0
			}
			i = k + 1
		}
	}
	return string(b)
}

// RedactArgs returns a command line fit to print and store, one string for
// each of args: args[0] is the program (tlsbench, or a command run under
// a capture). Every argument goes through Redact (after "--flag=", if
// any), and RedactArgs hides too what only a command line shows to be a
// credential:
//   - the values of credential options (credOptions): tlsbench's -H,
//     --data and --command; curl's, wget's, ab's and httpie's headers
//     (RedactHeader), passwords after "user:" (-u, --user, -U, -E, -a),
//     bodies and cookies; mysql's -pPW and --password=PW; redis-cli's -a
//     and --pass; mongosh's and sshpass's -p; openssl's pass:PW; and any
//     program's --*password, --*token, --*secret, --*pass (=VALUE or a
//     separate VALUE);
//   - the arguments of AUTH and the like given to redis-cli (RedactCommand);
//   - credential assignments, as env and shells take them (PGPASSWORD=,
//     MYSQL_PWD=, REDISCLI_AUTH=, *_TOKEN=: see secretParam);
//   - a credential header as an argument of its own ("Authorization:
//     Bearer ...", httpie's "X-Api-Key:...");
//   - all of that inside an argument that is a command line itself (sh -c
//     '...', ssh HOST '...'), split as a shell would; only the words
//     changed are rewritten, quoted for the shell.
//
// A program's name anywhere (after env, sudo, timeout, a shell's ';' or
// tlsbench's "--"; or as a value) adds that program's options to those
// looked for. RedactArgs leans to hiding too much: an unknown option's
// value is taken as a plain argument.
// RedactArgs(RedactArgs(a)) equals RedactArgs(a).
func RedactArgs(args []string) []string {
	// Passes until nothing changes: a pass may take apart what the one
	// before rewrote (re-quoted a word, hid a value with the white space
	// after it) and hide a little more, never less.
	out := slices.Clone(args)
	for range 8 {
		next := redactArgs(out, 0)
		if slices.Equal(next, out) {
			return out
		}
		out = next
	}
	for i := range out {
		out[i] = hidden // no fixed point: hide everything rather than guess
	}
	return out
}

// maxNesting bounds how deep command lines inside arguments are followed;
// a deeper one is hidden whole if it looks like it holds a credential.
const maxNesting = 4

func redactArgs(args []string, depth int) []string {
	out := slices.Clone(args)
	// The options of every program named so far: a name may be a value
	// ("--proto https"), so names add options and never take any away.
	opts := maps.Clone(credOptions[""])
	redis := false
	for i := 0; i < len(out); i++ {
		a := out[i]
		if p, ok := credOptions[programName(a)]; ok {
			addOptions(opts, p)
			redis = redis || redisPrograms[programName(a)]
		}
		if o, v, ok := attachedValue(a, opts); ok {
			// --opt=VALUE, -oVALUE
			out[i] = a[:len(a)-len(v)] + o.hide(v)
			continue
		}
		if o, ok := opts[a]; ok || credentialOption(a) {
			// An option and its value, in the next word.
			switch {
			case i+1 >= len(out):
			case ok && o.attached:
			case ok && o.kind == credHeaderIfColon && !strings.Contains(out[i+1], ":"):
			case !ok && strings.HasPrefix(out[i+1], "-"):
				// A guess (credentialOption): not when the next word
				// looks like an option.
			default:
				if !ok {
					o = credOption{kind: credWhole}
				}
				out[i+1] = o.hide(out[i+1])
				i++
			}
			continue
		}
		if o, ok := clusterLast(a, opts); ok && i+1 < len(out) {
			// -sSu user:pw: the last of clustered short options takes
			// the next word.
			out[i+1] = o.hide(out[i+1])
			i++
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			out[i] = k + "=" + redactWord(v, depth, false)
			continue
		}
		if redis && slices.Contains(redisSecretCommands, strings.ToUpper(a)) {
			// redis-cli ... AUTH PW: the command is the rest.
			copy(out[i:], RedactCommand(out[i:]))
			break
		}
		if n := spacedValue(out[i:]); n > 0 {
			// libpq's "password = VALUE" split into words: the
			// value is the nth word after the key. A program it
			// names still brings its options ("PGPASSWORD= curl -u").
			if p, ok := credOptions[programName(out[i+n])]; ok {
				addOptions(opts, p)
				redis = redis || redisPrograms[programName(out[i+n])]
			}
			out[i+n] = hidden
			i += n
			continue
		}
		// The argument after -c is a shell's (or psql's) script.
		script := i > 0 && args[i-1] == "-c"
		out[i] = redactWord(a, depth, script)
	}
	return out
}

// spacedValue finds a credential key whose value libpq would read from a
// later word, white space around '=' being allowed: "password = PW" (2),
// "password =PW" (1), "password= PW" (1).
// It returns how many words after the key hold the value, or 0.
func spacedValue(words []string) int {
	if len(words) < 2 {
		return 0
	}
	key, next := words[0], words[1]
	switch {
	case strings.HasSuffix(key, "=") && secretParam(strings.TrimSuffix(key, "=")) && !strings.Contains(strings.TrimSuffix(key, "="), "="):
		return 1
	case !secretParam(key) || strings.Contains(key, "="):
		return 0
	case next == "=" && len(words) > 2:
		return 2
	case len(next) > 1 && next[0] == '=':
		return 1
	}
	return 0
}

// addOptions adds a program's credential options to opts; one taking a
// separate value wins over one that takes none.
func addOptions(opts, add map[string]credOption) {
	for k, o := range add {
		if old, ok := opts[k]; !ok || !o.attached || old.attached {
			opts[k] = o
		}
	}
}

// redactWord hides the credentials of an argument that is no option's
// value: Redact's, a credential assignment's (NAME=VALUE, the whole
// value), openssl's pass:PW, a credential header, and those of a command
// line inside it (a script, or any argument with white space).
func redactWord(a string, depth int, script bool) string {
	if m := assignment.FindStringSubmatch(a); m != nil && secretParam(m[1]) && !script {
		return m[1] + "=" + hidden
	}
	if strings.HasPrefix(a, "pass:") {
		return "pass:" + hidden
	}
	if m := headerArg.FindStringSubmatch(a); m != nil && secretHeader(m[1]) &&
		(strings.Contains(m[1], "-") || m[2] != "" || slices.Contains([]string{"authorization", "cookie"}, strings.ToLower(m[1]))) {
		return RedactHeader(a)
	}
	if !strings.ContainsAny(a, " \t\n") {
		return Redact(a)
	}
	words, spans, ok := shellWords(a)
	if !ok || depth >= maxNesting {
		if looksSecret(a) {
			return hidden
		}
		return Redact(a)
	}
	red := redactArgs(words, depth+1)
	// Rewrite the words changed; the rest stays as written.
	var b strings.Builder
	last := 0
	for k := range words {
		if red[k] != words[k] {
			b.WriteString(a[last:spans[k][0]])
			b.WriteString(shellQuote(red[k]))
			last = spans[k][1]
		}
	}
	b.WriteString(a[last:])
	return b.String()
}

var (
	// assignment is NAME=VALUE as a shell or env takes it.
	assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)
	// headerArg is a header as an argument: "Name: value", "Name:value".
	headerArg = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*):([ \t]?)`)
)

// looksSecret reports whether a text RedactArgs cannot take apart (a
// quote left open, too deep) may hold a credential.
func looksSecret(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"auth", "pass", "pwd", "token", "secret", "cookie", "bearer", "key", "-p", "-a", "-u"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// programName is the name of the program a word runs, if it is one: its
// base name, after a shell's "$(" or "`".
func programName(a string) string {
	a = strings.TrimLeft(a, "$(`")
	if a == "" || strings.ContainsAny(a, " \t=:") || strings.HasPrefix(a, "-") {
		return ""
	}
	return path.Base(a)
}

// credentialOption reports whether a long option (--NAME) holds a
// credential by its name alone: --password, --mysql-password,
// --http-password, --pass, --proxy-pass, --token, --auth-token, --secret,
// --client-secret, --api-key, --oauth2-bearer. Those that take no value
// (--no-password, --skip-password, --askpass,
// --connect-expired-password) are not.
func credentialOption(a string) bool {
	name, ok := strings.CutPrefix(strings.ToLower(a), "--")
	if !ok || strings.HasPrefix(name, "no-") || strings.HasPrefix(name, "skip-") || strings.HasPrefix(name, "connect-expired") {
		return false
	}
	for _, w := range []string{"password", "passwd", "passphrase", "token", "secret", "apikey", "api-key", "bearer"} {
		if strings.HasSuffix(name, w) {
			return true
		}
	}
	return name == "pass" || name == "pwd" || strings.HasSuffix(name, "-pass")
}

// attachedValue finds an option given with its value in one word:
// "--opt=VALUE" of opts or credentialOption, or "-oVALUE" ("-o=VALUE")
// of a short option of opts.
func attachedValue(a string, opts map[string]credOption) (credOption, string, bool) {
	if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
		if o, ok := opts[k]; ok {
			return o, v, true
		}
		if credentialOption(k) {
			return credOption{kind: credWhole}, v, true
		}
		return credOption{}, "", false
	}
	if len(a) > 2 && a[0] == '-' && a[1] != '-' {
		if o, ok := opts[a[:2]]; ok {
			return o, strings.TrimPrefix(a[2:], "="), true
		}
	}
	return credOption{}, "", false
}

// clusterLast finds clustered short options ("-sSu") whose last one is an
// option of opts that takes the next word.
func clusterLast(a string, opts map[string]credOption) (credOption, bool) {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' {
		return credOption{}, false
	}
	for i := 1; i < len(a); i++ {
		if c := a[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return credOption{}, false
		}
	}
	o, ok := opts["-"+a[len(a)-1:]]
	return o, ok && !o.attached && o.kind != credHeaderIfColon
}

// credKind says which part of an option's value is a credential.
type credKind uint8

const (
	credWhole         credKind = iota // all of it
	credHeader                        // a header's value, if a credential header (RedactHeader)
	credHeaderIfColon                 // the same, when the value is a header at all
	credUserPass                      // what follows "user:"
	credBody                          // a request body, unless @FILE (RedactData)
	credCookie                        // a cookie string ("a=b"), not a cookie file's name
	credRedis                         // a Redis command line (RedactCommandLine)
)

// credOption is an option whose value holds a credential.
type credOption struct {
	kind credKind
	// attached: the value is only ever in the option's word (mysql's
	// -pPW, --password=PW): a separate word is not its value.
	attached bool
}

func (o credOption) hide(v string) string {
	switch o.kind {
	case credHeader, credHeaderIfColon:
		if o.kind == credHeaderIfColon && !strings.Contains(v, ":") {
			return Redact(v)
		}
		return RedactHeader(v)
	case credUserPass:
		if user, _, ok := strings.Cut(v, ":"); ok {
			return user + ":" + hidden
		}
		return Redact(v)
	case credBody:
		return RedactData(v)
	case credCookie:
		if strings.Contains(v, "=") {
			return hidden
		}
		return v
	case credRedis:
		return RedactCommandLine(v)
	}
	if v == "" {
		return v // -p alone: mysql asks for the password
	}
	return hidden
}

// credOptions are the options whose values hold credentials, by program
// name; "" is any program's (beside credentialOption's long options).
var credOptions = map[string]map[string]credOption{
	"": {"-H": {kind: credHeaderIfColon}, "--header": {kind: credHeaderIfColon}, "--proxy-header": {kind: credHeaderIfColon}},
	"tlsbench": {
		"-H": {kind: credHeader}, "--header": {kind: credHeader},
		"--data": {kind: credBody}, "--command": {kind: credRedis},
	},
	"curl": {
		"-H": {kind: credHeader}, "--header": {kind: credHeader}, "--proxy-header": {kind: credHeader},
		"-u": {kind: credUserPass}, "--user": {kind: credUserPass}, "-U": {kind: credUserPass}, "--proxy-user": {kind: credUserPass},
		"-E": {kind: credUserPass}, "--cert": {kind: credUserPass}, "--proxy-cert": {kind: credUserPass},
		"-d": {kind: credBody}, "--data": {kind: credBody}, "--data-raw": {kind: credBody}, "--data-binary": {kind: credBody},
		"--data-ascii": {kind: credBody}, "--data-urlencode": {kind: credBody}, "--json": {kind: credBody},
		"-F": {kind: credBody}, "--form": {kind: credBody}, "--form-string": {kind: credBody},
		"-b": {kind: credCookie}, "--cookie": {kind: credCookie},
		"--oauth2-bearer": {}, "--tlspassword": {}, "--proxy-tlspassword": {},
	},
	"wget": {
		"--header": {kind: credHeader}, "--post-data": {kind: credBody}, "--body-data": {kind: credBody},
	},
	"ab": {
		"-H": {kind: credHeader}, "-A": {kind: credUserPass}, "-P": {kind: credUserPass}, "-C": {kind: credCookie},
	},
	"http": {"-a": {kind: credUserPass}, "--auth": {kind: credUserPass}},
	"mysql": {
		// mysql -p and --password take their value attached only:
		// "-p DB" asks for the password and uses DB.
		"-p": {attached: true}, "--password": {attached: true},
		"--password1": {attached: true}, "--password2": {attached: true}, "--password3": {attached: true},
	},
	"redis-cli": {"-a": {}, "--pass": {}},
	"mongosh":   {"-p": {}, "--password": {}},
	"sshpass":   {"-p": {}},
	"openssl":   {"-psk": {}},
}

// redisPrograms take a Redis command after their options; redisSecretCommands
// are those RedactCommand hides arguments of.
var (
	redisPrograms       = map[string]bool{}
	redisSecretCommands = []string{"AUTH", "HELLO", "MIGRATE", "CONFIG", "ACL"}
)

func init() {
	for _, p := range []string{"mariadb", "mysqladmin", "mysqldump", "mysqlslap", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlbinlog",
		"mariadb-admin", "mariadb-dump", "mariadb-slap", "mariadb-import", "mariadb-show", "mariadb-check", "mariadb-binlog", "mysqlsh"} {
		credOptions[p] = credOptions["mysql"]
	}
	for _, p := range []string{"redis-cli", "redis-benchmark", "valkey-cli", "valkey-benchmark", "keydb-cli"} {
		credOptions[p] = credOptions["redis-cli"]
		redisPrograms[p] = true
	}
	for _, p := range []string{"https", "xh", "xhs"} {
		credOptions[p] = credOptions["http"]
	}
	credOptions["mongo"] = credOptions["mongosh"]
}

// shellWords splits s into words as a POSIX shell does ('...', "..." with
// \ escapes, \ outside quotes), with where each word is in s; ok is false
// if a quote is left open. Operators (; | & ( ) < > and newlines) end
// words and are not part of any.
func shellWords(s string) (words []string, spans [][2]int, ok bool) {
	const ops = ";|&()<>"
	for i := 0; i < len(s); {
		if isSpace(s[i]) || strings.IndexByte(ops, s[i]) >= 0 {
			i++
			continue
		}
		start := i
		var b strings.Builder
	word:
		for i < len(s) {
			switch c := s[i]; {
			case isSpace(c) || strings.IndexByte(ops, c) >= 0:
				break word
			case c == '\\':
				if i+1 < len(s) {
					b.WriteByte(s[i+1])
				}
				i += 2
			case c == '\'':
				j := strings.IndexByte(s[i+1:], '\'')
				if j < 0 {
					return nil, nil, false
				}
				b.WriteString(s[i+1 : i+1+j])
				i += j + 2
			case c == '"':
				for i++; i < len(s) && s[i] != '"'; i++ {
					if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
						i++
					}
					b.WriteByte(s[i])
				}
				if i >= len(s) {
					return nil, nil, false
				}
				i++
			default:
				b.WriteByte(c)
				i++
			}
		}
		words = append(words, b.String())
		spans = append(spans, [2]int{start, min(i, len(s))})
	}
	return words, spans, true
}

// shellQuote writes a word for a POSIX shell: as it is if it needs no
// quotes, else in single quotes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@+%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
