package wire

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TLS record content types.
const (
	recChangeCipherSpec = 20
	recAlert            = 21
	recHandshake        = 22
	recApplicationData  = 23
)

// Handshake message types.
const (
	msgClientHello        = 1
	msgServerHello        = 2
	msgNewSessionTicket   = 4
	msgCertificate        = 11
	msgServerKeyExchange  = 12
	msgCertificateRequest = 13
	msgServerHelloDone    = 14
	msgCertificateVerify  = 15
	msgClientKeyExchange  = 16
)

// record is one TLS record of a direction: where it starts in the
// direction's bytes, its type and length (header excluded).
type record struct {
	off, length int
	typ         byte
}

// tlsHalf is what one direction's TLS records showed.
type tlsHalf struct {
	records []record
	// msgs are the handshake messages readable in clear (before a
	// ChangeCipherSpec, or all of TLS 1.3's ServerHello flight before
	// encryption), with the offset of the record that began each.
	msgs []hsMsg
	bad  bool // bytes that are no TLS record
}

type hsMsg struct {
	typ  byte
	body []byte
	off  int
}

// readTLS splits b (one direction's bytes from the start of TLS at off)
// into records and the handshake messages sent in clear.
func readTLS(b []byte, off int) tlsHalf {
	var h tlsHalf
	var hs []byte // handshake bytes in clear, across records
	var hsOff []int
	clear := true
	for p := off; p < len(b); {
		if len(b)-p < 5 {
			break
		}
		typ, ver, n := b[p], int(b[p+1])<<8|int(b[p+2]), int(b[p+3])<<8|int(b[p+4])
		if typ < recChangeCipherSpec || typ > recApplicationData || ver>>8 != 3 {
			h.bad = true
			break
		}
		h.records = append(h.records, record{off: p, length: n, typ: typ})
		body := b[p+5 : min(len(b), p+5+n)]
		switch {
		case typ == recChangeCipherSpec || typ == recApplicationData:
			clear = false
		case typ == recHandshake && !clear && len(body) == n && n >= 4 && (body[0] == msgClientHello || body[0] == msgServerHello) &&
			int(body[1])<<16|int(body[2])<<8|int(body[3]) == n-4:
			// TLS 1.3's ChangeCipherSpec is a dummy (middlebox
			// compatibility): a hello after it, after a
			// HelloRetryRequest, is still in clear. A TLS 1.2 Finished
			// after its ChangeCipherSpec is encrypted and does not
			// parse as one whole hello.
			for range body {
				hsOff = append(hsOff, p)
			}
			hs = append(hs, body...)
		case typ == recHandshake && clear:
			for range body {
				hsOff = append(hsOff, p)
			}
			hs = append(hs, body...)
		}
		p += 5 + n
	}
	for q := 0; q+4 <= len(hs); {
		n := int(hs[q+1])<<16 | int(hs[q+2])<<8 | int(hs[q+3])
		if q+4+n > len(hs) {
			break
		}
		h.msgs = append(h.msgs, hsMsg{typ: hs[q], body: hs[q+4 : q+4+n], off: hsOff[q]})
		q += 4 + n
	}
	return h
}

func (h tlsHalf) msg(typ byte, nth int) (hsMsg, bool) {
	for _, m := range h.msgs {
		if m.typ == typ {
			if nth == 0 {
				return m, true
			}
			nth--
		}
	}
	return hsMsg{}, false
}

// firstRecord is the offset of the first record of type typ at or after
// from, or -1.
func (h tlsHalf) firstRecord(typ byte, from int) int {
	for _, r := range h.records {
		if r.typ == typ && r.off >= from {
			return r.off
		}
	}
	return -1
}

// clientHello is a ClientHello's offer.
type clientHello struct {
	offered       result.Offered
	ticketOffered bool // a session ticket or PSK
	sessionID     []byte
}

func parseClientHello(body []byte, recordBytes int) (clientHello, error) {
	var ch clientHello
	s := cryptobyte.String(body)
	var legacy uint16
	var random, sid, suites, comp cryptobyte.String
	if !s.ReadUint16(&legacy) || !s.ReadBytes((*[]byte)(&random), 32) || !s.ReadUint8LengthPrefixed(&sid) ||
		!s.ReadUint16LengthPrefixed(&suites) || !s.ReadUint8LengthPrefixed(&comp) {
		return ch, fmt.Errorf("malformed ClientHello")
	}
	ch.sessionID = bytes.Clone(sid)
	o := &ch.offered
	o.HelloBytes = recordBytes
	for !suites.Empty() {
		var id uint16
		if !suites.ReadUint16(&id) {
			return ch, fmt.Errorf("malformed ClientHello suites")
		}
		if isGrease(id) {
			continue
		}
		o.Suites = append(o.Suites, suiteName(id))
	}
	versions := []uint16{legacy}
	var exts cryptobyte.String
	if !s.Empty() && !s.ReadUint16LengthPrefixed(&exts) {
		return ch, fmt.Errorf("malformed ClientHello extensions")
	}
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return ch, fmt.Errorf("malformed ClientHello extension")
		}
		switch typ {
		case 0: // server_name
			var list cryptobyte.String
			if data.ReadUint16LengthPrefixed(&list) {
				var kind uint8
				var name cryptobyte.String
				if list.ReadUint8(&kind) && list.ReadUint16LengthPrefixed(&name) && kind == 0 {
					o.SNI = string(name)
				}
			}
		case 10: // supported_groups
			var list cryptobyte.String
			if data.ReadUint16LengthPrefixed(&list) {
				for !list.Empty() {
					var g uint16
					if !list.ReadUint16(&g) {
						break
					}
					if !isGrease(g) {
						o.Groups = append(o.Groups, plan.GroupLabel(g))
					}
				}
			}
		case 16: // ALPN
			var list cryptobyte.String
			if data.ReadUint16LengthPrefixed(&list) {
				for !list.Empty() {
					var p cryptobyte.String
					if !list.ReadUint8LengthPrefixed(&p) {
						break
					}
					o.ALPN = append(o.ALPN, string(p))
				}
			}
		case 35: // session_ticket
			if len(data) > 0 {
				ch.ticketOffered = true
			}
		case 41: // pre_shared_key
			ch.ticketOffered = true
		case 43: // supported_versions
			var list cryptobyte.String
			if data.ReadUint8LengthPrefixed(&list) {
				versions = versions[:0]
				for !list.Empty() {
					var v uint16
					if !list.ReadUint16(&v) {
						break
					}
					if !isGrease(v) {
						versions = append(versions, v)
					}
				}
			}
		case 51: // key_share
			var list cryptobyte.String
			if data.ReadUint16LengthPrefixed(&list) {
				for !list.Empty() {
					var g uint16
					var key cryptobyte.String
					if !list.ReadUint16(&g) || !list.ReadUint16LengthPrefixed(&key) {
						break
					}
					if !isGrease(g) {
						o.KeyShares = append(o.KeyShares, result.KeyShare{Group: plan.GroupLabel(g), Bytes: len(key)})
					}
				}
			}
		}
	}
	for _, v := range versions {
		o.Versions = append(o.Versions, tls.VersionName(v))
	}
	return ch, nil
}

// helloRetryRandom is the ServerHello random that marks a
// HelloRetryRequest (RFC 8446, 4.1.3).
var helloRetryRandom = []byte{
	0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
}

// serverHello is what a ServerHello chose.
type serverHello struct {
	version   uint16
	suite     uint16
	group     uint16
	retry     bool // a HelloRetryRequest
	psk       bool // TLS 1.3: a pre-shared key accepted (resumed)
	sessionID []byte
	alpn      string
}

func parseServerHello(body []byte) (serverHello, error) {
	var sh serverHello
	s := cryptobyte.String(body)
	var random, sid cryptobyte.String
	var comp uint8
	if !s.ReadUint16(&sh.version) || !s.ReadBytes((*[]byte)(&random), 32) || !s.ReadUint8LengthPrefixed(&sid) ||
		!s.ReadUint16(&sh.suite) || !s.ReadUint8(&comp) {
		return sh, fmt.Errorf("malformed ServerHello")
	}
	sh.retry = bytes.Equal(random, helloRetryRandom)
	sh.sessionID = bytes.Clone(sid)
	var exts cryptobyte.String
	if !s.Empty() && !s.ReadUint16LengthPrefixed(&exts) {
		return sh, fmt.Errorf("malformed ServerHello extensions")
	}
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return sh, fmt.Errorf("malformed ServerHello extension")
		}
		switch typ {
		case 43:
			data.ReadUint16(&sh.version)
		case 51:
			data.ReadUint16(&sh.group) // a share, or the group a retry asks for
		case 41:
			sh.psk = true
		case 16:
			var list, p cryptobyte.String
			if data.ReadUint16LengthPrefixed(&list) && list.ReadUint8LengthPrefixed(&p) {
				sh.alpn = string(p)
			}
		}
	}
	return sh, nil
}

// certChain is the size of a TLS 1.2 Certificate message's chain and the
// leaf's key ("RSA-2048"), where it parses.
func certChain(body []byte) (size int, key string, sent bool) {
	s := cryptobyte.String(body)
	var list cryptobyte.String
	if !s.ReadUint24LengthPrefixed(&list) {
		return 0, "", false
	}
	size = len(list)
	var leaf cryptobyte.String
	if list.ReadUint24LengthPrefixed(&leaf) {
		if c, err := x509.ParseCertificate(leaf); err == nil {
			key = keyName(c.PublicKey)
		}
	}
	return size, key, size > 0
}

// keyName spells a public key as result.Negotiated.PeerKey does.
func keyName(k any) string {
	switch k := k.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA-" + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return ""
}

// ecdheGroup is the named curve of a TLS 1.2 ServerKeyExchange (ECDHE).
func ecdheGroup(body []byte) uint16 {
	if len(body) >= 3 && body[0] == 3 {
		return uint16(body[1])<<8 | uint16(body[2])
	}
	return 0
}

func isGrease(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func suiteName(id uint16) string { return tls.CipherSuiteName(id) }

// abbreviated is what a TLS 1.2 abbreviated handshake (RFC 5246, 7.3: a
// resumed session) would leave out of this full one, in bytes as the
// capture holds them: the messages it does without (the server's
// Certificate, ServerKeyExchange, CertificateRequest and ServerHelloDone;
// the client's Certificate, ClientKeyExchange and CertificateVerify), each
// with its header, and the header of every record that began none but
// them. ticket is what its ClientHello would carry instead: the ticket of
// the server's NewSessionTicket, or where the server issued none, the
// session ID it gave that the client's hello did not have (-1 where it
// gave neither: the size of a ticket it would issue is not in the
// capture). A server that issued a ticket is taken to issue one again as
// it resumes, as Go's does; one that does not saves its NewSessionTicket
// too.
func abbreviated(ct, st tlsHalf, ch clientHello, sh serverHello) (dropped, ticket int) {
	dropped = droppedBytes(st, msgCertificate, msgServerKeyExchange, msgCertificateRequest, msgServerHelloDone) +
		droppedBytes(ct, msgCertificate, msgClientKeyExchange, msgCertificateVerify)
	if nst, ok := st.msg(msgNewSessionTicket, 0); ok {
		s := cryptobyte.String(nst.body)
		var t cryptobyte.String
		if s.Skip(4) && s.ReadUint16LengthPrefixed(&t) { // the lifetime hint, then the ticket
			return dropped, len(t)
		}
	}
	if len(sh.sessionID) > 0 {
		return dropped, max(0, len(sh.sessionID)-len(ch.sessionID))
	}
	return dropped, -1
}

// droppedBytes is what h's messages of the types given take: each one's
// 4-byte header and body, and the 5-byte header of each record that began
// none but them.
func droppedBytes(h tlsHalf, types ...byte) int {
	n := 0
	began := map[int]bool{} // by record: only messages of the types given
	for _, m := range h.msgs {
		drop := slices.Contains(types, m.typ)
		if drop {
			n += 4 + len(m.body)
		}
		if only, seen := began[m.off]; !seen || only {
			began[m.off] = drop
		}
	}
	for _, only := range began {
		if only {
			n += 5
		}
	}
	return n
}
