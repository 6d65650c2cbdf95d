package plan

import "strings"

// GroupSpelling spells a key-exchange group as TLS's ecosystem does
// (P-256, X25519, X25519MLKEM768: OpenSSL's and the IANA registry's names
// but for the NIST curves, which everyone calls P-256), also when given
// crypto/tls's identifier (CurveP256).
func GroupSpelling(g string) string {
	if rest, ok := strings.CutPrefix(g, "CurveP"); ok {
		return "P-" + rest
	}
	return g
}
