package plan

import (
	"cmp"
	"crypto/tls"
	"slices"
	"strings"
	"time"
)

// Variants expands the matrix: client stack × RTT × the RTT's way (dialer
// or link) × TLS mode × cipher × resumption × key × client certificate.
// The plain variant appears once per RTT, whatever the keys; each client's
// plain variant of the first RTT is its baseline when present, otherwise
// its first variant is.
func (s Spec) Variants() []Variant {
	rtts := s.RTT
	if len(rtts) == 0 {
		rtts = []time.Duration{0}
	}
	servers := []string{""}
	if labs := s.target.Labs(); len(labs) > 1 {
		servers = labs
	}
	var vs []Variant
	for _, client := range s.clients() {
		for _, rtt := range rtts {
			for _, via := range s.rttVias() {
				for _, server := range servers {
					for _, v := range s.variants() {
						v.RTT, v.RTTVia, v.Server, v.Client = rtt, via, server, client
						vs = append(vs, v)
					}
				}
			}
		}
	}
	named := s.OtherClients()
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		v.ID = variantID(v, named)
		if seen[v.ID] {
			continue
		}
		seen[v.ID] = true
		out = append(out, v)
	}
	MarkBaseline(out)
	return out
}

// MarkBaseline makes the first plain direct variant of each Client in vs
// its baseline, or the client's first variant where none is plain.
func MarkBaseline(vs []Variant) {
	first, plain := map[string]int{}, map[string]int{}
	for i := range vs {
		vs[i].Baseline = false
		c := vs[i].Client
		if _, ok := first[c]; !ok {
			first[c] = i
		}
		if _, ok := plain[c]; !ok && vs[i].Plain() && vs[i].Tunnel == "" {
			plain[c] = i
		}
	}
	for c, i := range first {
		if p, ok := plain[c]; ok {
			i = p
		}
		vs[i].Baseline = true
	}
}

// variants is the matrix of one RTT, before IDs.
func (s Spec) variants() []Variant {
	var vs []Variant
	for _, via := range s.Routes() {
		var through []Variant
		switch via.Kind {
		case RouteDirect:
			vs = append(vs, s.direct()...)
			continue
		case RouteStunnel:
			for _, k := range s.Keys {
				for _, a := range s.auths() {
					through = append(through, Variant{TLS: "off", Key: k, Auth: a})
				}
			}
		default:
			if kind := routeKinds[via.Kind]; kind.variants != nil {
				through = kind.variants(via, s)
				break
			}
			for _, a := range s.auths() { // a tunnel: plain inside it
				through = append(through, Variant{TLS: "off", Auth: a})
			}
		}
		for _, v := range through {
			v.Tunnel, v.Route = via.Label(), via.Info()
			vs = append(vs, v)
		}
	}
	return vs
}

func (s Spec) groups() []string {
	if len(s.Groups) == 0 {
		return []string{""}
	}
	return s.Groups
}

func (s Spec) auths() []string {
	if len(s.Auth) == 0 {
		return []string{""}
	}
	return s.Auth
}

// direct is the matrix of connections without a tunnel.
func (s Spec) direct() []Variant {
	var vs []Variant
	keys := s.Keys
	if len(keys) == 0 {
		keys = []string{""}
	}
	auths := s.auths()
	for _, mode := range s.TLS {
		if mode == "off" {
			for _, a := range auths {
				vs = append(vs, Variant{TLS: "off", Auth: a})
			}
			continue
		}
		ciphers := []string{""}
		if mode == "1.2" && len(s.Ciphers) > 0 {
			ciphers = s.Ciphers
		}
		for _, key := range keys {
			for _, c := range ciphers {
				if c != "" && key != "" && !suiteFitsKey(c, key) {
					continue
				}
				for _, g := range s.groups() {
					if g == GroupX25519MLKEM768 && mode == "1.2" {
						continue // a TLS 1.3 group
					}
					if g == GroupDefault {
						g = ""
					}
					for _, r := range s.Resume {
						for _, cc := range s.clientCertList() {
							for _, n := range s.negotiations() {
								for _, a := range auths {
									vs = append(vs, Variant{TLS: mode, Cipher: c, Group: g, Resume: r, Key: key, ClientCert: cc, Negotiation: n, Auth: a})
								}
							}
						}
					}
				}
			}
		}
	}
	return vs
}

// variantID names a variant; named puts its client first ("go plain",
// "psycopg tls1.3"), for a run with a client other than Go's.
func variantID(v Variant, named bool) string {
	parts := []string{"tls" + v.TLS}
	if v.Plain() {
		parts[0] = "plain"
	}
	if v.TLS == "auto" {
		parts[0] = "tls-auto"
	}
	switch {
	case v.Tunnel != "" && v.Plain():
		parts[0] = v.Tunnel
	case v.Tunnel != "": // TLS to an intermediary: "pgbouncer tls1.3"
		parts = append([]string{v.Tunnel}, parts...)
	}
	if v.Server != "" {
		parts = append([]string{v.Server}, parts...)
	}
	if named {
		parts = append([]string{cmp.Or(v.Client, GoClient)}, parts...)
	}
	if v.Key != "" {
		parts = append(parts, v.Key)
	}
	if v.Cipher != "" {
		parts = append(parts, strings.TrimPrefix(v.Cipher, "TLS_"))
	}
	if v.Group != "" {
		parts = append(parts, v.Group)
	}
	if v.Resume {
		parts = append(parts, "resume")
	}
	if id := clientCertID(v); id != "" {
		parts = append(parts, id)
	}
	if v.Negotiation != "" {
		parts = append(parts, v.Negotiation)
	}
	if v.Auth != "" {
		parts = append(parts, v.Auth)
	}
	if v.RTT != 0 {
		parts = append(parts, "rtt"+RTTLabel(v.RTT))
	}
	if v.RTTVia != "" {
		parts = append(parts, v.RTTVia) // "tls1.3 rtt44ms link"
	}
	return strings.Join(parts, " ")
}

// RTTLabel writes an RTT as variant IDs show it: 44ms, 1.5ms, 500us.
func RTTLabel(rtt time.Duration) string {
	return strings.ReplaceAll(rtt.String(), "µ", "u")
}

// CipherSuite looks up a TLS 1.2 cipher suite by its IANA name (the TLS_
// prefix may be left out), including those Go marks insecure, since
// measuring them is a legitimate question.
func CipherSuite(name string) (*tls.CipherSuite, bool) {
	name = strings.ToUpper(name)
	if !strings.HasPrefix(name, "TLS_") {
		name = "TLS_" + name
	}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			if cs.Name == name && slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
				return cs, true
			}
		}
	}
	return nil, false
}

// suiteFitsKey reports whether a TLS 1.2 suite can be used with a server key.
func suiteFitsKey(suite, key string) bool {
	cs, ok := CipherSuite(suite)
	if !ok {
		return false
	}
	rsaKey := strings.HasPrefix(key, "rsa")
	switch {
	case strings.Contains(cs.Name, "_ECDSA_"):
		return !rsaKey
	case strings.HasPrefix(cs.Name, "TLS_ECDHE_RSA_"), strings.HasPrefix(cs.Name, "TLS_RSA_"):
		return rsaKey
	}
	return true
}

// The key-exchange groups a variant can offer, as --group names them.
const (
	GroupX25519         = "x25519"
	GroupX25519MLKEM768 = "x25519mlkem768" // the post-quantum hybrid, TLS 1.3 only
	GroupP256           = "p256"
	GroupP384           = "p384"
	GroupP521           = "p521"
)

// GroupDefault in --group is the TLS library's own offer (Go's: the
// hybrid and X25519 key shares, then the curves), to compare with one
// group: against a server that lacks the hybrid and X25519, it costs a
// HelloRetryRequest.
const GroupDefault = "default"

// Groups lists the groups --group takes, besides GroupDefault.
var Groups = []string{GroupX25519, GroupX25519MLKEM768, GroupP256, GroupP384, GroupP521}

// GroupName is a group's --group name, from it or from Go's curve name
// (X25519MLKEM768, CurveP256, P-256).
func GroupName(s string) (string, bool) {
	name := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
	name = strings.TrimPrefix(name, "curve")
	if name == "secp256r1" || name == "prime256v1" {
		name = GroupP256
	}
	if name == "secp384r1" {
		name = GroupP384
	}
	if name == "secp521r1" {
		name = GroupP521
	}
	return name, slices.Contains(Groups, name)
}

// nearestECDHE is the ECDHE suite Go has for a finite-field DHE suite, by
// its IANA name (TLS_DHE_RSA_WITH_AES_256_CBC_SHA) or OpenSSL's
// (DHE-RSA-AES256-SHA, the seeds' suite), which Go's TLS lacks.
func nearestECDHE(name string) (string, bool) {
	up := strings.ToUpper(name)
	if near, ok := map[string]string{
		"DHE-RSA-AES128-SHA":        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
		"DHE-RSA-AES256-SHA":        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
		"DHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"DHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"DHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	}[up]; ok {
		return near, true
	}
	if rest, ok := strings.CutPrefix(up, "TLS_DHE_"); ok {
		if _, ok := CipherSuite("TLS_ECDHE_" + rest); ok {
			return "TLS_ECDHE_" + rest, true
		}
	}
	return "", false
}
