package plan

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// marker is the password the fuzz targets hide in their inputs: it must
// never come out of Redact, ParseTarget or ParseRoute.
const marker = "S3cr3tPw"

// withSecret builds an input that holds marker inside a password, in one
// of the forms Redact promises to hide (form%10), around fuzzed text: a and
// b inside the password before and after the marker, c around it. The
// password is written as a user would for that form: as typed in a URL's
// user info (with '#', '/', '?' or '@' unescaped), query-escaped in a URL
// query, quoted in libpq's way.
func withSecret(form uint8, a, b, c string) string {
	pw := a + marker + b
	schemes := []string{"postgres", "postgresql", "mysql", "mongodb", "redis", "rediss", "https", "http", "ssh"}
	scheme := schemes[int(form/8)%len(schemes)]
	key := secretParams[int(form/8)%len(secretParams)]
	if form&64 != 0 {
		key = strings.ToUpper(key)
	}
	switch form % 10 {
	case 0: // user info as typed, the host given
		return scheme + "://app:" + pw + "@127.0.0.1:5432/" + c
	case 1: // user info as typed, any host and rest
		if scheme == "ssh" {
			scheme = "https" // in ssh://, "@openssh.com" after "cipher=" is a cipher name
		}
		return scheme + "://" + "app:" + pw + "@" + c
	case 2: // a credential query parameter after others
		return scheme + "://127.0.0.1/db?" + c + "&" + key + "=" + url.QueryEscape(pw)
	case 3: // a credential query parameter first, any host
		return scheme + "://" + c + "?" + key + "=" + url.QueryEscape(pw)
	case 4: // libpq key=value
		return "host=localhost user=app " + c + " password=" + libpqQuote(pw) + " dbname=app"
	case 5: // libpq, spaces around '=', any key of secretParams
		return c + " " + key + " = " + libpqQuote(pw)
	case 6: // go-sql-driver DSN
		return "app:" + pw + "@tcp(127.0.0.1:3306)/bench" + c
	case 7: // an ssh:// tunnel with a cipher
		return "ssh://bench:" + pw + "@127.0.0.1:22?cipher=" + c
	case 8: // any user name
		return scheme + "://" + c + ":" + pw + "@127.0.0.1:5432/db"
	default: // a go-sql-driver DSN with its parameters after
		return c + ":" + pw + "@/bench?tls=true"
	}
}

// libpqQuote writes v as a libpq conninfo value.
func libpqQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\v\f\r'\"\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// seeds are the cases of the table tests, for every fuzz target.
var seeds = []string{
	"builtin", "lab:postgres", "10s", "ssh:aes128-gcm@openssh.com", "direct,ssh:chacha20-poly1305@openssh.com,stunnel",
	"host=localhost user=app password=S3cr3t dbname=app", "host=localhost password='a S3cr3t\\' b' dbname=app",
	"app:S3cr3t@tcp(127.0.0.1:3306)/bench", "postgres:///app?host=/var/run/postgresql&password=S3cr3t",
	"postgres://[::1/app?password=S3cr3t", "https://admin:12#S3cr3t@127.0.0.1/", "https://admin:12/S3cr3t@127.0.0.1/",
	"https://admin:12?S3cr3t@127.0.0.1/", "postgres:///app", "http://:8080/", "postgres:///app?host=%2Fvar%2Frun%2Fpostgresql",
	"postgresql://%2Fvar%2Frun%2Fpostgresql/app", "https://127.0.0.1:0/", "https://127.0.0.1:65536/", "https://127.0.0.1:https/",
	"mysql://app:S3cr3t@unix(/var/run/mysqld/mysqld.sock)/bench", "postgres://app:p@ss:S3cr3t@127.0.0.1/db",
	"https://[fe80::1%25lo]:8443/", "mongodb://root:S3cr3t@a:3717,b:3717/admin?replicaSet=x", "https://127.0.0.1/x?token=S3cr3t#S3cr3t",
	"ssh://u:S3cr3t@127.0.0.1:22?cipher=aes128-gcm@openssh.com", "ssh://u:S3c/r3t@127.0.0.1:22", "ssh:u:S3cr3t@127.0.0.1",
}

// addSeeds gives every form the seeds as its surrounding text, and a
// password holding each character that cuts a user info short.
func addSeeds(f *testing.F) {
	for form := range uint8(10) {
		for _, s := range seeds {
			f.Add(form, "", "", s)
		}
		for _, cut := range []string{"#", "/", "?", "@", ":", "&", " ", "'", `\`, "%", "%zz", "://", "@openssh.com"} {
			f.Add(form, cut, "", "")
			f.Add(form, "", cut, "x")
			f.Add(form+64, "12"+cut, cut+"x", "db?sslmode=require")
		}
	}
}

func FuzzRedact(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, form uint8, a, b, c string) {
		in := withSecret(form, a, b, c)
		for _, s := range []string{c, a + b + c, in} {
			r := Redact(s)
			if again := Redact(r); again != r {
				t.Fatalf("Redact(%q) = %q, then %q: not idempotent", s, r, again)
			}
			// Redact's passes reach a fixed point: it does not fall back
			// to hiding everything.
			for range 8 {
				s = redactOnce(s)
			}
			if redactOnce(s) != s {
				t.Fatalf("Redact(%q): no fixed point after 8 passes", s)
			}
		}
		if strings.Count(in, marker) != 1 {
			return
		}
		if r := Redact(in); strings.Contains(r, marker) {
			t.Fatalf("Redact(%q) = %q: the password is there", in, r)
		}
	})
}

func FuzzParseTarget(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, form uint8, a, b, c string) {
		checkTarget(t, c, false)
		in := withSecret(form, a, b, c)
		if strings.Count(in, marker) != 1 {
			return
		}
		tg := checkTarget(t, in, true)
		if r := Redact(in); strings.Contains(r, marker) {
			t.Fatalf("Redact(%q) = %q: the password is there", in, r)
		}
		// A target accepted dials the host its text shows.
		if (form%10 == 0 || form%10 == 8) && tg != nil && tg.Host != "127.0.0.1:5432" {
			t.Fatalf("ParseTarget(%q) dials %q, not 127.0.0.1:5432", in, tg.Host)
		}
	})
}

// checkTarget parses s and checks what every answer must be: a one-line
// plan.Error, or a target whose redacted form parses to the same target;
// with secret, no marker in the error, the redacted form or the host.
func checkTarget(t *testing.T, s string, secret bool) *Target {
	tg, err := ParseTarget(s)
	if err != nil {
		if _, ok := err.(*Error); !ok {
			t.Fatalf("ParseTarget(%q): %v is not a plan.Error", s, err)
		}
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("ParseTarget(%q): error of more than one line: %q", s, err)
		}
		if secret && strings.Contains(err.Error(), marker) {
			t.Fatalf("ParseTarget(%q): the error shows the password: %v", s, err)
		}
		return nil
	}
	if secret && strings.Contains(tg.Redacted+tg.Host, marker) {
		t.Fatalf("ParseTarget(%q) = %+v: the password is there", s, tg)
	}
	if tg.Redacted != Redact(s) {
		t.Fatalf("ParseTarget(%q).Redacted = %q, not Redact's %q", s, tg.Redacted, Redact(s))
	}
	again, err := ParseTarget(tg.Redacted)
	if err != nil || again.Host != tg.Host || again.Scheme != tg.Scheme || again.Redacted != tg.Redacted {
		t.Fatalf("ParseTarget(%q) = %+v, whose redacted form parses as %+v, %v", s, tg, again, err)
	}
	return &tg
}

func FuzzParseRoute(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, form uint8, a, b, c string) {
		checkVia(t, c, "", "", false)
		pw := a + marker + b
		if strings.Count(pw+c, marker) != 1 {
			return
		}
		checkVia(t, "ssh://bench:"+pw+"@127.0.0.1:22?"+c, pw, "127.0.0.1", true)
		// Any user: the password is what follows its first ':'.
		checkVia(t, "ssh://"+c+":"+pw+"@"+string(rune('a'+form%26))+".example", pw, "", !strings.ContainsAny(c, ":@"))
	})
}

// checkVia parses s and checks that a password pw never shows in the error,
// the label or the redacted form, and that an accepted URL has pw as its
// password (if exact) and host as its host (when given).
func checkVia(t *testing.T, s, pw, host string, exact bool) {
	v, err := ParseRoute(s)
	if err != nil {
		if _, ok := err.(*Error); !ok {
			t.Fatalf("ParseRoute(%q): %v is not a plan.Error", s, err)
		}
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("ParseRoute(%q): error of more than one line: %q", s, err)
		}
		if pw != "" && strings.Contains(err.Error(), marker) {
			t.Fatalf("ParseRoute(%q): the error shows the password: %v", s, err)
		}
		return
	}
	if pw == "" {
		return
	}
	if strings.Contains(v.Label()+Redact(s), marker) {
		t.Fatalf("ParseRoute(%q): label %q, redacted %q: the password is there", s, v.Label(), Redact(s))
	}
	if info, _ := json.Marshal(v.Info()); strings.Contains(string(info), marker) {
		t.Fatalf("ParseRoute(%q): the variant's route %s shows the password", s, info)
	}
	if v.URL == nil {
		t.Fatalf("ParseRoute(%q) = %+v: no URL", s, v)
	}
	got, _ := v.URL.User.Password()
	if want, err := url.PathUnescape(pw); exact && err == nil && got != want {
		t.Fatalf("ParseRoute(%q): password %q, want %q", s, got, want)
	}
	if host != "" && v.URL.Hostname() != host {
		t.Fatalf("ParseRoute(%q): host %q, want %q", s, v.URL.Hostname(), host)
	}
}
