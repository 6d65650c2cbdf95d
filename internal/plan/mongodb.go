package plan

import (
	"net/url"
	"strings"
)

// mongoTLS reads the TLS options of a mongodb:// URL, spelled as the
// MongoDB URI specification spells them (case-insensitive): tls= (or ssl=),
// tlsCAFile=, tlsInsecure= and tlsAllowInvalidCertificates= (and
// tlsCertificateKeyFile=: see clientCertParams). A TLS option
// without tls= turns TLS on, as the drivers do. tlsAllowInvalidHostnames=
// is left to the driver, which skips only the name check.
func (t *Target) mongoTLS(u *url.URL) error {
	if strings.Contains(u.Host, ",") {
		return errorf("%s lists %d hosts: tlsbench measures one server over a direct connection: give one HOST:PORT (a replica set member)", t.Redacted, strings.Count(u.Host, ",")+1)
	}
	opts := map[string]string{}
	for k, vs := range u.Query() {
		opts[strings.ToLower(k)] = strings.ToLower(vs[len(vs)-1])
	}
	on := ""
	for _, k := range []string{"tls", "ssl"} {
		v, ok := opts[k]
		if !ok {
			continue
		}
		if v != "true" && v != "false" {
			return errorf("%s: use true or false", shown(k, "=", v))
		}
		if on != "" && on != v {
			return errorf("tls= and ssl= disagree: give one of them")
		}
		on = v
	}
	insecure := opts["tlsinsecure"] == "true" || opts["tlsallowinvalidcertificates"] == "true"
	_, hasCA := opts["tlscafile"]
	_, hasCert := opts["tlscertificatekeyfile"]
	if on == "" && (insecure || hasCA || hasCert || opts["tlsallowinvalidhostnames"] == "true") {
		on = "true"
	}
	t.DefaultTLS = []string{"off"}
	if on == "true" {
		t.DefaultTLS, t.OwnTLS = []string{"off", "auto"}, "auto"
		t.Insecure = insecure
		if hasCA {
			// The path keeps its case: read it from the URL itself.
			for k, vs := range u.Query() {
				if strings.EqualFold(k, "tlsCAFile") {
					t.CAFile = vs[len(vs)-1]
				}
			}
		}
	}
	return nil
}

// mongoWorkload fills the workload fields of a MongoDB target: one
// collection (ycsb.usertable) of Rows documents; no query modes.
func (s *Spec) mongoWorkload() error {
	if s.QueryMode != "" {
		return errorf("⟨query_mode⟩ applies to SQL databases only: MongoDB's queries are commands")
	}
	s.Tables = 1
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	if s.Rows < 1 || s.Rows > 1e9 {
		return errorf("⟨rows⟩ %d: use 1 to 1e9 documents", s.Rows)
	}
	return nil
}
