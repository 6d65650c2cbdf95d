package script

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// splitter cuts a script into SQL statements and meta-command lines, as
// pgbench's use of psql's lexer does: a statement ends at a ';' outside
// quotes, comments and parentheses, at a backslash (a meta-command
// follows), or at the end of the file.
type splitter struct {
	src     string
	d       Dialect
	pos     int
	line    int
	errLine int
}

// item is a statement or a meta-command line (without its backslash).
type item struct {
	stmt *Statement
	meta string
	line int
}

func (sp *splitter) fail(line int, format string, args ...any) (*item, error) {
	sp.errLine = line
	return nil, fmt.Errorf(format, args...)
}

// next returns the next item, or nil at the end.
func (sp *splitter) next() (*item, error) {
	for {
		if !sp.skipSpace() {
			return nil, nil
		}
		if sp.src[sp.pos] == '\\' {
			return sp.meta(), nil
		}
		it, err := sp.statement()
		if err != nil || it != nil {
			return it, err
		}
	}
}

// skipSpace skips blanks and line comments before an item; false at the
// end of the script.
func (sp *splitter) skipSpace() bool {
	for sp.pos < len(sp.src) {
		c := sp.src[sp.pos]
		switch {
		case c == '\n':
			sp.line++
			sp.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			sp.pos++
		case sp.lineComment():
			sp.toEOL()
		default:
			return true
		}
	}
	return false
}

// lineComment says whether a line comment starts at pos: -- (MySQL: with
// a blank after it), or MySQL's #.
func (sp *splitter) lineComment() bool {
	s := sp.src[sp.pos:]
	if sp.d == MySQL {
		return s[0] == '#' || strings.HasPrefix(s, "--") && (len(s) == 2 || s[2] <= ' ')
	}
	return strings.HasPrefix(s, "--")
}

func (sp *splitter) toEOL() {
	if i := strings.IndexByte(sp.src[sp.pos:], '\n'); i >= 0 {
		sp.pos += i
	} else {
		sp.pos = len(sp.src)
	}
}

// meta reads a meta-command from its backslash to the end of its line; a
// backslash at the end of a line continues it.
func (sp *splitter) meta() *item {
	it := &item{line: sp.line}
	sp.pos++ // the backslash
	var b strings.Builder
	for sp.pos < len(sp.src) {
		c := sp.src[sp.pos]
		if c == '\\' && sp.pos+1 < len(sp.src) && sp.src[sp.pos+1] == '\n' {
			b.WriteByte(' ')
			sp.pos += 2
			sp.line++
			continue
		}
		if c == '\n' {
			break
		}
		b.WriteByte(c)
		sp.pos++
	}
	it.meta = b.String()
	return it
}

// statement reads one SQL statement; nil for a lone ';'.
func (sp *splitter) statement() (*item, error) {
	start, line := sp.pos, sp.line
	st := &Statement{Line: line}
	cut := start // where the text after the last variable starts
	depth := 0
	end := -1
	for end < 0 && sp.pos < len(sp.src) {
		c := sp.src[sp.pos]
		switch {
		case c == '\n':
			sp.line++
			sp.pos++
		case c == '\'':
			esc := sp.d == MySQL || sp.pos > start && (sp.src[sp.pos-1] == 'E' || sp.src[sp.pos-1] == 'e') &&
				(sp.pos-1 == start || !isAlnum(sp.src[sp.pos-2]))
			if err := sp.quoted('\'', esc); err != nil {
				return nil, err
			}
		case c == '"':
			if err := sp.quoted('"', sp.d == MySQL); err != nil {
				return nil, err
			}
		case c == '`' && sp.d == MySQL:
			if err := sp.quoted('`', false); err != nil {
				return nil, err
			}
		case c == '$' && sp.d == Postgres && (sp.pos == start || !isAlnum(sp.src[sp.pos-1])):
			if err := sp.dollar(); err != nil {
				return nil, err
			}
		case sp.lineComment():
			sp.toEOL()
		case strings.HasPrefix(sp.src[sp.pos:], "/*"):
			if err := sp.blockComment(); err != nil {
				return nil, err
			}
		case c == '(':
			depth++
			sp.pos++
		case c == ')':
			depth = max(0, depth-1)
			sp.pos++
		case c == ';' && depth == 0:
			sp.pos++
			end = sp.pos
		case c == '\\':
			if strings.HasPrefix(sp.src[sp.pos:], "\\;") {
				return sp.fail(sp.line, "\\; is not supported by tlsbench: end each statement with ';' (tlsbench sends one statement at a time)")
			}
			end = sp.pos // a meta-command ends the statement
		case c == ':':
			n := sp.pos + 1
			switch {
			case n < len(sp.src) && sp.src[n] == ':':
				for sp.pos < len(sp.src) && sp.src[sp.pos] == ':' {
					sp.pos++ // a cast, ::type
				}
			case n < len(sp.src) && (sp.src[n] == '\'' || sp.src[n] == '"'):
				return sp.fail(sp.line, ":%c...%c is psql's quoting, which pgbench does not have: write :name (a \\set value is a number)", sp.src[n], sp.src[n])
			case n < len(sp.src) && isAlpha(sp.src[n]):
				for n < len(sp.src) && isAlnum(sp.src[n]) {
					n++
				}
				st.parts = append(st.parts, sp.src[cut:sp.pos])
				st.Vars = append(st.Vars, sp.src[sp.pos+1:n])
				sp.pos, cut = n, n
			default:
				sp.pos++
			}
		default:
			sp.pos++
		}
	}
	if end < 0 {
		end = sp.pos
	}
	st.Text = strings.TrimRight(sp.src[start:end], " \t\r\n\f\v")
	if st.Text == ";" {
		return nil, nil
	}
	st.parts = append(st.parts, st.Text[min(cut-start, len(st.Text)):])
	var b strings.Builder
	for i, p := range st.parts {
		b.WriteString(p)
		if i < len(st.Vars) {
			if sp.d == MySQL {
				b.WriteByte('?')
			} else {
				b.WriteString("$" + strconv.Itoa(i+1))
			}
		}
	}
	st.Prepared = b.String()
	return &item{stmt: st, line: line}, nil
}

// quoted skips a string or quoted identifier opened by q at pos: a
// doubled q stands for itself, and with esc a backslash escapes the next
// character.
func (sp *splitter) quoted(q byte, esc bool) error {
	line := sp.line
	for sp.pos++; sp.pos < len(sp.src); sp.pos++ {
		switch c := sp.src[sp.pos]; {
		case c == '\n':
			sp.line++
		case esc && c == '\\':
			sp.pos++
			if sp.pos < len(sp.src) && sp.src[sp.pos] == '\n' {
				sp.line++
			}
		case c == q:
			if sp.pos+1 < len(sp.src) && sp.src[sp.pos+1] == q {
				sp.pos++
				continue
			}
			sp.pos++
			return nil
		}
	}
	sp.errLine = line
	return fmt.Errorf("unterminated quoted %s: close it with %c", map[byte]string{'\'': "string", '"': "identifier or string", '`': "identifier"}[q], q)
}

// dollar skips PostgreSQL's $tag$ ... $tag$ quoting at pos, if it is
// that (a $ may also be a parameter, $1, or part of a name).
func (sp *splitter) dollar() error {
	j := sp.pos + 1
	if j < len(sp.src) && isAlpha(sp.src[j]) {
		for j < len(sp.src) && isAlnum(sp.src[j]) {
			j++
		}
	}
	if j >= len(sp.src) || sp.src[j] != '$' {
		sp.pos++
		return nil
	}
	tag := sp.src[sp.pos : j+1]
	line := sp.line
	body := sp.src[j+1:]
	k := strings.Index(body, tag)
	if k < 0 {
		sp.errLine = line
		return fmt.Errorf("unterminated dollar-quoted string: close it with %s", tag)
	}
	sp.line += strings.Count(body[:k], "\n")
	sp.pos = j + 1 + k + len(tag)
	return nil
}

// blockComment skips a /* comment */ at pos; PostgreSQL's nest.
func (sp *splitter) blockComment() error {
	line := sp.line
	depth := 0
	for sp.pos < len(sp.src) {
		switch {
		case strings.HasPrefix(sp.src[sp.pos:], "/*"):
			if depth == 0 || sp.d == Postgres {
				depth++
			}
			sp.pos += 2
		case strings.HasPrefix(sp.src[sp.pos:], "*/"):
			depth--
			sp.pos += 2
			if depth == 0 {
				return nil
			}
		default:
			if sp.src[sp.pos] == '\n' {
				sp.line++
			}
			sp.pos++
		}
	}
	sp.errLine = line
	return errors.New("unterminated /* comment: close it with */")
}
