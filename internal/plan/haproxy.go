package plan

import "slices"

// HAProxy as a path (--via haproxy): TLS terminated at HAProxy, in TCP mode,
// before a plaintext server tlsbench starts. It works where TLS is the
// connection's first byte: HTTPS, Redis, and PostgreSQL's direct TLS.
func init() {
	routeKinds[RouteHAProxy] = routeKind{usage: "haproxy", check: checkHAProxy, variants: haproxyVariants}
}

func checkHAProxy(_ Route, s *Spec, t Target) error {
	if t.Lab == "" && !t.Builtin {
		return errorf("⟨via⟩ haproxy puts HAProxy before a plaintext server tlsbench starts: use ⟨lab⟩ ENGINE or the built-in server")
	}
	switch t.Scheme {
	case "mysql":
		return errorf("⟨via⟩ haproxy cannot carry MySQL/MariaDB TLS: TLS starts inside their protocol (the client asks for it in its handshake response, after the server's greeting), which a generic TLS terminator does not speak: compare ⟨via⟩ stunnel or ssh instead")
	case "postgres":
		if !slices.Contains(s.Negotiation, NegotiationDirect) && slices.ContainsFunc(s.TLS, func(m string) bool { return m != "off" }) {
			return errorf("⟨via⟩ haproxy with PostgreSQL needs ⟨negotiation⟩ direct (PostgreSQL 17+ clients): with an SSLRequest first, TLS starts inside PostgreSQL's protocol, which a generic TLS terminator does not speak")
		}
	case "mongodb":
		return errorf("⟨via⟩ haproxy is measured here before HTTPS, Redis and PostgreSQL (direct TLS): the lab MongoDB (FerretDB) is not among them")
	}
	return nil
}

// haproxyVariants: the direct matrix (client TLS to HAProxy; plain is the
// proxy alone), PostgreSQL's TLS variants only with direct TLS.
func haproxyVariants(_ Route, s Spec) []Variant {
	var out []Variant
	for _, v := range s.direct() {
		if s.target.Scheme == "postgres" && !v.Plain() && v.Negotiation != NegotiationDirect {
			continue
		}
		out = append(out, v)
	}
	return out
}
