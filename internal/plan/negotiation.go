package plan

import (
	"slices"
	"strconv"
	"strings"
)

// How a PostgreSQL client starts TLS, as libpq's sslnegotiation spells it.
const (
	// NegotiationPostgres asks with an SSLRequest first: one round trip
	// before the TLS handshake (every PostgreSQL version).
	NegotiationPostgres = "postgres"
	// NegotiationDirect starts TLS with the first byte, ALPN "postgresql"
	// (PostgreSQL 17 and later): the SSLRequest's round trip is gone.
	NegotiationDirect = "direct"
)

// checkNegotiation validates --negotiation against the target before
// anything starts; a postgres:// URL's sslnegotiation= is the default.
func (s *Spec) checkNegotiation(t Target) error {
	if len(s.Negotiation) == 0 && t.Negotiation == NegotiationDirect {
		s.Negotiation = []string{NegotiationDirect}
	}
	if len(s.Negotiation) == 0 {
		return nil
	}
	for _, n := range s.Negotiation {
		if n != NegotiationPostgres && n != NegotiationDirect {
			return errorf("%s: use postgres (an SSLRequest first) or direct (TLS from the first byte, PostgreSQL 17+), as libpq's sslnegotiation", shown("⟨negotiation⟩", " ", n))
		}
	}
	if err := twice("⟨negotiation⟩", s.Negotiation, func(n string) string { return n }); err != nil {
		return err
	}
	if t.Scheme != "postgres" {
		return errorf("⟨negotiation⟩ is how a PostgreSQL client starts TLS: it applies to postgres targets only")
	}
	if !slices.Contains(s.Negotiation, NegotiationDirect) {
		return nil
	}
	if !slices.ContainsFunc(s.TLS, func(m string) bool { return m != "off" }) {
		return errorf("⟨negotiation⟩ direct starts TLS: add 1.2, 1.3 or auto to ⟨tls⟩")
	}
	for _, lab := range t.Labs() {
		if v := labVersion(lab); v < 17 {
			shownV := "the distribution's (15 on Debian 12)"
			if v > 0 {
				shownV = strconv.Itoa(v)
			}
			return errorf("⟨negotiation⟩ direct needs PostgreSQL 17 or later: lab %s is PostgreSQL %s, which takes TLS only after an SSLRequest: use ⟨lab⟩ postgres:18", lab, shownV)
		}
	}
	return nil
}

// labVersion is the major version a lab engine names ("postgres:18" is
// 18), 0 for the default.
func labVersion(lab string) int {
	_, v, ok := strings.Cut(lab, ":")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

// negotiations is the negotiation dimension of TLS variants: {""} (the
// driver's SSLRequest) without --negotiation.
func (s Spec) negotiations() []string {
	if len(s.Negotiation) == 0 {
		return []string{""}
	}
	out := make([]string, len(s.Negotiation))
	for i, n := range s.Negotiation {
		if n == NegotiationDirect {
			out[i] = n
		}
	}
	return out
}
