package wire

import "testing"

// TestAbbreviated: what a TLS 1.2 abbreviated handshake would leave out
// of each full one, and add, in captures of real clients. The sizes are
// each message's own as the records show them (a 5-byte record header, a
// 4-byte handshake header, the body), read off the captures with a parser
// of their own, not the decoder's:
//   - curl-12: curl (OpenSSL 3.0) with --no-sessionid against the built-in
//     server (Go), RSA-2048: the server's Certificate (record of 691),
//     ServerKeyExchange (300: an X25519 share and a 256-byte signature)
//     and ServerHelloDone (4), the client's ClientKeyExchange (37): 1,052.
//     The client asked for no ticket and the server gave no session ID:
//     what a resumed ClientHello adds is not in the capture.
//   - my-tls12-conn: the mariadb client (libmariadb, OpenSSL 3.0) against
//     the lab's MariaDB 10.11 over a 44 ms delay link, RSA-2048: the
//     server's Certificate (1,130), ServerKeyExchange (300),
//     CertificateRequest (58) and ServerHelloDone (4), the client's empty
//     Certificate (7) and ClientKeyExchange (37): 1,566. The server issued
//     a NewSessionTicket (182: a 4-byte lifetime, a 2-byte length and a
//     ticket of 176), which a resumed ClientHello carries.
//   - TLS 1.3 (my-tls): nothing, the handshake is encrypted.
func TestAbbreviated(t *testing.T) {
	for _, c := range []struct {
		file          string
		drops, ticket int
		conns         int
	}{
		{"testdata/curl-12.pcap", 5 + 691 + 5 + 300 + 5 + 4 + 5 + 37, -1, 2},
		{"testdata/my-tls12-conn.pcap", 5 + 1130 + 5 + 300 + 5 + 58 + 5 + 4 + 5 + 7 + 5 + 37, 182 - 6, 1},
		{"testdata/my-tls.pcap", 0, 0, 1},
	} {
		t.Run(c.file, func(t *testing.T) {
			_, conns := readAll(t, c.file, Options{})
			if len(conns) != c.conns {
				t.Fatalf("%d connections, want %d", len(conns), c.conns)
			}
			for i, conn := range conns {
				if conn.AbbreviatedDrops != c.drops || conn.AbbreviatedTicket != c.ticket {
					t.Errorf("connection %d: an abbreviated handshake leaves out %d bytes and adds %d, want %d and %d",
						i, conn.AbbreviatedDrops, conn.AbbreviatedTicket, c.drops, c.ticket)
				}
			}
		})
	}
}
