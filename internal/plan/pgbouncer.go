package plan

import (
	"slices"
	"strconv"
)

// PgBouncer as a path (--via pgbouncer...), in PgBouncer's own terms:
//
//	pgbouncer        clients reach PgBouncer with the variant's TLS; PgBouncer
//	                 keeps a pool of plain server connections
//	pgbouncer:local  the "local pooler": plaintext to a PgBouncer beside the
//	                 client, TLS (verify-full) pooled from it to the server
//	?pool_mode=session|transaction&server_tls_sslmode=disable|require|verify-full&default_pool_size=N
func init() {
	routeKinds[RoutePgbouncer] = routeKind{
		usage:    "pgbouncer[:local]",
		parse:    parsePgbouncer,
		check:    checkPgbouncer,
		variants: pgbouncerVariants,
	}
}

// Pgbouncer is a parsed --via pgbouncer entry.
type Pgbouncer struct {
	Local     bool
	PoolMode  string
	ServerTLS string
	PoolSize  int
}

// PgbouncerOf reads a pgbouncer route's settings, defaults filled in:
// session pooling (prepared statements survive it), a pool of 4, server
// connections plain, or verify-full for the local pooler.
func PgbouncerOf(r Route) Pgbouncer {
	p := Pgbouncer{Local: r.Arg == "local", PoolMode: "session", ServerTLS: "disable", PoolSize: 4}
	if p.Local {
		p.ServerTLS = "verify-full"
	}
	if v := r.Params.Get("pool_mode"); v != "" {
		p.PoolMode = v
	}
	if v := r.Params.Get("server_tls_sslmode"); v != "" {
		p.ServerTLS = v
	}
	if v := r.Params.Get("default_pool_size"); v != "" {
		p.PoolSize, _ = strconv.Atoi(v)
	}
	return p
}

func parsePgbouncer(r *Route) error {
	if r.Arg != "" && r.Arg != "local" {
		return errorf("⟨via⟩ pgbouncer:%s: use pgbouncer or pgbouncer:local", shownWord(r.Arg))
	}
	for name := range r.Params {
		if !slices.Contains([]string{"pool_mode", "server_tls_sslmode", "default_pool_size"}, name) {
			return errorf("⟨via⟩ pgbouncer: unknown setting %s: use pool_mode, server_tls_sslmode or default_pool_size", shownWord(name))
		}
	}
	p := PgbouncerOf(*r)
	if !slices.Contains([]string{"session", "transaction"}, p.PoolMode) {
		return errorf("⟨via⟩ pgbouncer: pool_mode=%s: use session or transaction (statement pooling breaks transactions)", shownWord(p.PoolMode))
	}
	if !slices.Contains([]string{"disable", "require", "verify-ca", "verify-full"}, p.ServerTLS) {
		return errorf("⟨via⟩ pgbouncer: server_tls_sslmode=%s: use disable, require, verify-ca or verify-full", shownWord(p.ServerTLS))
	}
	if p.PoolSize < 1 || p.PoolSize > 1000 {
		return errorf("⟨via⟩ pgbouncer: default_pool_size=%s: use 1 to 1000", shownWord(r.Params.Get("default_pool_size")))
	}
	if p.Local && p.ServerTLS == "disable" {
		return errorf("⟨via⟩ pgbouncer:local pools TLS connections to the server: use server_tls_sslmode require, verify-ca or verify-full")
	}
	return nil
}

func checkPgbouncer(r Route, s *Spec, t Target) error {
	if t.Scheme != "postgres" || t.Lab == "" {
		return errorf("⟨via⟩ pgbouncer puts PgBouncer before a PostgreSQL server tlsbench starts: use ⟨lab⟩ postgres")
	}
	if PgbouncerOf(r).PoolMode == "transaction" && s.QueryMode != "simple" {
		return errorf("⟨via⟩ pgbouncer with pool_mode=transaction: PgBouncer before 1.21 keeps no prepared statement from one transaction to the next: add ⟨query_mode⟩ simple, or use pool_mode=session")
	}
	if slices.ContainsFunc(s.Negotiation, func(n string) bool { return n == NegotiationDirect }) {
		return errorf("⟨via⟩ pgbouncer: PgBouncer takes TLS only after an SSLRequest: drop ⟨negotiation⟩ direct")
	}
	return nil
}

// pgbouncerVariants: through PgBouncer, the direct matrix (the variant's
// TLS is the client's to PgBouncer); through the local pooler, plain ones
// only (TLS is PgBouncer's to the server).
func pgbouncerVariants(r Route, s Spec) []Variant {
	if PgbouncerOf(r).Local {
		var vs []Variant
		for _, a := range s.auths() {
			vs = append(vs, Variant{TLS: "off", Auth: a})
		}
		return vs
	}
	return s.direct()
}

// shownWord is s if it may be echoed in an error (plainWord), else "(hidden)".
func shownWord(s string) string {
	if plainWord(s) {
		return s
	}
	return "(not shown)"
}
