package plan

import (
	"net/url"
	"slices"
	"strings"
)

var secretParams = []string{"password", "pass", "pwd", "sslpassword", "secret", "token", "auth"}

// hidden replaces every secret Redact removes.
const hidden = "xxxxx"

// Redact returns any string fit to print and store: a URL, a libpq
// key=value string, a go-sql-driver DSN, a command-line argument. It hides
//   - everything between the first ':' and the last '@' of the user info
//     (of a URL: after "scheme://"; of anything else, or of anything with
//     a go-sql-driver DSN's "@net(" or "@/": of the whole string), so that a
//     password holding '#', '/', '?' or '@' is hidden whole;
//   - the values of credential parameters (secretParams), as URL query
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

// secretValues finds the values of credential parameters: after a key of
// secretParams and '=' that start the string or follow white space, '?',
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
		if !slices.Contains(secretParams, strings.ToLower(key)) {
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
