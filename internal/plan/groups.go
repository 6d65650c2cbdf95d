package plan

import (
	"fmt"
	"strings"
)

// GroupSpelling spells a key-exchange group named by crypto/tls
// (CurveP256, as results before 2026-11-27 recorded it) as TLS's ecosystem
// does: P-256; X25519 and X25519MLKEM768 keep their names.
func GroupSpelling(g string) string {
	if rest, ok := strings.CutPrefix(g, "CurveP"); ok {
		return "P-" + rest
	}
	return g
}

// GroupLabel spells a group by its TLS code point (the supported_groups
// registry) as GroupSpelling does: what a client offered, what a server
// chose; "" for none.
func GroupLabel(id uint16) string {
	switch id {
	case 0:
		return ""
	case 23:
		return "P-256"
	case 24:
		return "P-384"
	case 25:
		return "P-521"
	case 29:
		return "X25519"
	case 30:
		return "X448"
	case 0x11ec:
		return "X25519MLKEM768"
	case 0x11eb:
		return "SecP256r1MLKEM768"
	case 0x6399:
		return "X25519Kyber768Draft00"
	case 256, 257, 258, 259, 260:
		return fmt.Sprintf("ffdhe%d", []int{2048, 3072, 4096, 6144, 8192}[id-256])
	}
	return fmt.Sprintf("0x%04X", id)
}

// groupIDs are the code points of the groups --group names.
var groupIDs = map[string]uint16{GroupX25519: 29, GroupX25519MLKEM768: 0x11ec, GroupP256: 23, GroupP384: 24, GroupP521: 25}

// GroupLabelOf spells a group named any way GroupName reads (p256,
// secp256r1, prime256v1, CurveP256, X25519) as GroupLabel does (P-256),
// for what another TLS library calls it; one it does not know as given.
func GroupLabelOf(s string) string {
	if name, ok := GroupName(s); ok {
		return GroupLabel(groupIDs[name])
	}
	return s
}
