package speed

import (
	"bytes"
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tlsbench/tlsbench/internal/result"
)

// The key exchange of a TLS 1.3 handshake, side by side: what each side
// computes with a group, and the ML-KEM-768 operations the post-quantum
// hybrid adds.

// kex is a TLS 1.3 key-exchange group as each side of a handshake
// computes it.
type kex interface {
	// client makes the client's key share (its ClientHello key_share) and
	// the function that derives the secret from the server's share.
	client() (share []byte, finish func(serverShare []byte) ([]byte, error), err error)
	// server answers a client's share with its own and the secret.
	server(clientShare []byte) (share, secret []byte, err error)
}

// ecdhKex is an elliptic-curve group (x25519, P-256): each side sends a
// public key and derives the secret with the other's.
type ecdhKex struct{ curve ecdh.Curve }

func (k ecdhKex) client() ([]byte, func([]byte) ([]byte, error), error) {
	priv, err := k.curve.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	return priv.PublicKey().Bytes(), func(peer []byte) ([]byte, error) {
		pub, err := k.curve.NewPublicKey(peer)
		if err != nil {
			return nil, err
		}
		return priv.ECDH(pub)
	}, nil
}

func (k ecdhKex) server(peer []byte) ([]byte, []byte, error) {
	pub, err := k.curve.NewPublicKey(peer)
	if err != nil {
		return nil, nil, err
	}
	priv, err := k.curve.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	secret, err := priv.ECDH(pub)
	return priv.PublicKey().Bytes(), secret, err
}

// hybridKex is X25519MLKEM768 as TLS 1.3 uses it
// (draft-ietf-tls-ecdhe-mlkem): the client's share is an ML-KEM-768
// encapsulation key followed by an X25519 public key, the server's an
// ML-KEM-768 ciphertext followed by its X25519 public key, and the secret
// is the ML-KEM shared key followed by the X25519 one.
type hybridKex struct{}

var x25519 = ecdhKex{ecdh.X25519()}

func (hybridKex) client() ([]byte, func([]byte) ([]byte, error), error) {
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		return nil, nil, err
	}
	xshare, xfinish, err := x25519.client()
	if err != nil {
		return nil, nil, err
	}
	share := append(dk.EncapsulationKey().Bytes(), xshare...)
	return share, func(peer []byte) ([]byte, error) {
		if len(peer) != mlkem.CiphertextSize768+len(xshare) {
			return nil, fmt.Errorf("X25519MLKEM768 server share of %d bytes", len(peer))
		}
		k, err := dk.Decapsulate(peer[:mlkem.CiphertextSize768])
		if err != nil {
			return nil, err
		}
		x, err := xfinish(peer[mlkem.CiphertextSize768:])
		return append(k, x...), err
	}, nil
}

func (hybridKex) server(peer []byte) ([]byte, []byte, error) {
	if len(peer) != mlkem.EncapsulationKeySize768+32 {
		return nil, nil, fmt.Errorf("X25519MLKEM768 client share of %d bytes", len(peer))
	}
	ek, err := mlkem.NewEncapsulationKey768(peer[:mlkem.EncapsulationKeySize768])
	if err != nil {
		return nil, nil, err
	}
	xshare, x, err := x25519.server(peer[mlkem.EncapsulationKeySize768:])
	if err != nil {
		return nil, nil, err
	}
	k, ct := ek.Encapsulate()
	return append(ct, xshare...), append(k, x...), nil
}

// kexOf is the group a key-exchange primitive names.
func kexOf(name string) (kex, bool) {
	switch name {
	case "x25519":
		return x25519, true
	case "ecdh-p256":
		return ecdhKex{ecdh.P256()}, true
	case "x25519mlkem768":
		return hybridKex{}, true
	}
	return nil, false
}

// kexFigures measure each side's part of one handshake with a group: the
// client makes its share and derives the secret from a server's share;
// the server takes a client's share, makes its own and the secret. The
// shares come from one exchange made first, whose secrets must agree. The
// client decapsulates that one ciphertext with each new key: ML-KEM
// rejects a ciphertext made for another key implicitly, in constant
// time, so it costs what the server's real answer would.
func kexFigures(name string, k kex) ([]figure, error) {
	cshare, finish, err := k.client()
	if err != nil {
		return nil, err
	}
	sshare, ssecret, err := k.server(cshare)
	if err != nil {
		return nil, err
	}
	csecret, err := finish(sshare)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(csecret, ssecret) {
		return nil, fmt.Errorf("%s: the client and the server derived different secrets", name)
	}
	client := func() (func() error, error) {
		return func() error {
			_, finish, err := k.client()
			if err != nil {
				return err
			}
			_, err = finish(sshare)
			return err
		}, nil
	}
	server := func() (func() error, error) {
		return func() error { _, _, err := k.server(cshare); return err }, nil
	}
	return []figure{
		{kind: result.KindKexClient, name: name, share: len(cshare), worker: client},
		{kind: result.KindKexServer, name: name, share: len(sshare), worker: server},
	}, nil
}

// mlkemFigures measure ML-KEM-768's own operations: key generation,
// encapsulation to a key, decapsulation of a ciphertext.
func mlkemFigures() []figure {
	keygen := func() (func() error, error) {
		return func() error { _, err := mlkem.GenerateKey768(); return err }, nil
	}
	encap := func() (func() error, error) {
		dk, err := mlkem.GenerateKey768()
		if err != nil {
			return nil, err
		}
		ek := dk.EncapsulationKey()
		return func() error { ek.Encapsulate(); return nil }, nil
	}
	decap := func() (func() error, error) {
		dk, err := mlkem.GenerateKey768()
		if err != nil {
			return nil, err
		}
		want, ct := dk.EncapsulationKey().Encapsulate()
		return func() error {
			k, err := dk.Decapsulate(ct)
			if err == nil && !bytes.Equal(k, want) {
				err = errors.New("ML-KEM-768 decapsulated another key than was encapsulated")
			}
			return err
		}, nil
	}
	return []figure{
		{kind: result.KindKeyGen, name: "mlkem768", worker: keygen},
		{kind: result.KindEncapsulate, name: "mlkem768", worker: encap},
		{kind: result.KindDecapsulate, name: "mlkem768", worker: decap},
	}
}
