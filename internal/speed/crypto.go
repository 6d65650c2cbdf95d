// Package speed measures crypto primitive rates (Go and openssl speed) and signing ceilings.
package speed

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// GoLibrary names Go's crypto in results: the Go version.
func GoLibrary() string { return runtime.Version() }

// GoCryptoNotes say how the Go figures were taken.
var GoCryptoNotes = []string{
	"Go: figures per CPU-second of tlsbench's process (user+system), times the cores in use, so that other load on the machine does not lower them; RSA signs PKCS#1 v1.5 over a SHA-256 digest, as openssl speed does (TLS 1.3 signs PSS: the same private-key operation); key agreement is one shared-secret derivation; kex-client and kex-server are each side's part of one TLS 1.3 key exchange (client: its key share made, the secret derived from the server's share; server: the client's share read, its own made, the secret derived), the hybrid's client decapsulating one ciphertext with each new key (ML-KEM's implicit rejection costs the same); ciphers encrypt and authenticate one record per operation with a 13-byte header, aes-256-cbc-hmac-sha1 as TLS 1.2 does it (HMAC-SHA1, padding, a random explicit IV, CBC)",
}

// Progress is told when the figures of a library start ("go", "openssl
// speed") and returns what is told, after each figure, how many of them
// are done.
type Progress func(stage string) func(done, total int)

// Run measures Go's primitives, then, if ossl is not nil and Go's figures
// are all taken, OpenSSL's: the figures taken (also on error), the notes
// that say how, and the first error. o comes from plan.NewCrypto; progress
// may be nil.
func Run(ctx context.Context, o plan.Crypto, ossl *OpenSSL, progress Progress) ([]result.Primitive, []string, error) {
	stage := func(name string) func(done, total int) {
		if progress == nil {
			return nil
		}
		return progress(name)
	}
	ps, err := MeasureGo(ctx, o, stage("go"))
	notes := slices.Clone(GoCryptoNotes)
	if err != nil || ossl == nil {
		return ps, notes, err
	}
	more, moreNotes, err := ossl.Measure(ctx, o, stage("openssl speed"))
	return append(ps, more...), append(notes, moreNotes...), err
}

// figure is one measurement: an operation of one primitive at one size;
// worker makes the operation one goroutine repeats, with state of its own.
type figure struct {
	kind, name string
	size       int
	share      int // the key share of a kex figure's side, bytes
	worker     func() (func() error, error)
}

// MeasureGo measures Go's own primitives, each figure on one core (one
// goroutine) and on all cores (o.Cores goroutines). o comes from
// plan.NewCrypto; done, if not nil, is called after each figure with the
// progress so far.
func MeasureGo(ctx context.Context, o plan.Crypto, done func(done, total int)) ([]result.Primitive, error) {
	var figs []figure
	for _, name := range o.Only {
		fs, err := goFigures(name, o.Sizes)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fs...)
	}
	var out []result.Primitive
	for i, f := range figs {
		var err error
		p := result.Primitive{Library: GoLibrary(), Kind: f.kind, Name: f.name, Size: f.size, KeyShare: f.share}
		if p.PerCore, err = rate(ctx, 1, o.Duration, o.Count, f.worker); err != nil {
			return out, fmt.Errorf("go %s %s: %w", f.name, f.kind, err)
		}
		p.AllCores = p.PerCore
		if o.Cores > 1 {
			if p.AllCores, err = rate(ctx, o.Cores, o.Duration, o.Count, f.worker); err != nil {
				return out, fmt.Errorf("go %s %s on %d cores: %w", f.name, f.kind, o.Cores, err)
			}
		}
		if f.kind == result.KindCipher {
			p.PerCore *= float64(f.size)
			p.AllCores *= float64(f.size)
		}
		out = append(out, p)
		if done != nil {
			done(i+1, len(figs))
		}
	}
	return out, nil
}

// goFigures are the measurements of one primitive; a key is made once and
// shared by all goroutines, as a server shares its key.
func goFigures(name string, sizes []int) ([]figure, error) {
	switch {
	case slices.Contains(plan.KeyTypes, name):
		key, err := tlsx.GenerateKey(name)
		if err != nil {
			return nil, err
		}
		sign, verify := signer(key)
		return []figure{
			{kind: result.KindSign, name: name, worker: sign},
			{kind: result.KindVerify, name: name, worker: verify},
		}, nil
	case slices.Contains(plan.KeyAgreements, name):
		curve := ecdh.X25519()
		if name == "ecdh-p256" {
			curve = ecdh.P256()
		}
		derive := figure{kind: result.KindKeyAgreement, name: name, worker: func() (func() error, error) {
			priv, err := curve.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			peer, err := curve.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			return func() error { _, err := priv.ECDH(peer.PublicKey()); return err }, nil
		}}
		k, _ := kexOf(name)
		sides, err := kexFigures(name, k)
		return append([]figure{derive}, sides...), err
	case name == "mlkem768":
		return mlkemFigures(), nil
	case slices.Contains(plan.KEMs, name):
		k, ok := kexOf(name)
		if !ok {
			return nil, fmt.Errorf("no key exchange %q", name)
		}
		return kexFigures(name, k)
	case slices.Contains(plan.RecordCiphers, name):
		var figs []figure
		for _, size := range sizes {
			figs = append(figs, figure{kind: result.KindCipher, name: name, size: size, worker: func() (func() error, error) {
				return sealer(name, size)
			}})
		}
		return figs, nil
	}
	return nil, fmt.Errorf("unknown primitive %q", name)
}

// signer makes the sign and verify operations of a key, over the digest
// (Ed25519: the message) a TLS signature of that key covers.
func signer(key crypto.Signer) (sign, verify func() (func() error, error)) {
	var opts crypto.SignerOpts = crypto.SHA256
	digest := sha256.Sum256([]byte("tlsbench"))
	msg := digest[:]
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve.Params().BitSize == 384 {
			d := sha512.Sum384([]byte("tlsbench"))
			msg, opts = d[:], crypto.SHA384
		}
	case ed25519.PrivateKey:
		opts = crypto.Hash(0)
	}
	sign = func() (func() error, error) {
		return func() error { _, err := key.Sign(rand.Reader, msg, opts); return err }, nil
	}
	verify = func() (func() error, error) {
		sig, err := key.Sign(rand.Reader, msg, opts)
		if err != nil {
			return nil, err
		}
		bad := errors.New("signature does not verify")
		switch pub := key.Public().(type) {
		case *rsa.PublicKey:
			return func() error { return rsa.VerifyPKCS1v15(pub, crypto.SHA256, msg, sig) }, nil
		case *ecdsa.PublicKey:
			return func() error {
				if !ecdsa.VerifyASN1(pub, msg, sig) {
					return bad
				}
				return nil
			}, nil
		case ed25519.PublicKey:
			return func() error {
				if !ed25519.Verify(pub, msg, sig) {
					return bad
				}
				return nil
			}, nil
		}
		return nil, fmt.Errorf("no verify for %T", key.Public())
	}
	return sign, verify
}

// tlsHeader is the size of the additional data a TLS 1.2 record
// authenticates (sequence number, type, version, length); TLS 1.3's is 5,
// openssl speed -aead uses 13.
const tlsHeader = 13

// sealer makes the operation that protects one record of size bytes as TLS
// does with the cipher name: seal it with a fresh nonce and its header as
// additional data, or for CBC suites MAC, pad and encrypt it.
func sealer(name string, size int) (func() error, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	payload := make([]byte, size)
	header := make([]byte, tlsHeader)
	var aead cipher.AEAD
	var err error
	switch name {
	case "aes-128-gcm", "aes-256-gcm":
		n := 16
		if name == "aes-256-gcm" {
			n = 32
		}
		block, berr := aes.NewCipher(key[:n])
		if berr != nil {
			return nil, berr
		}
		aead, err = cipher.NewGCM(block)
	case "chacha20-poly1305":
		aead, err = chacha20poly1305.New(key)
	case "aes-256-cbc-hmac-sha1":
		return cbcHMAC(key, payload, header)
	default:
		return nil, fmt.Errorf("unknown cipher %q", name)
	}
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	out := make([]byte, 0, size+aead.Overhead())
	var seq uint64
	return func() error {
		// TLS 1.3 makes each record's nonce from its sequence number.
		seq++
		binary.BigEndian.PutUint64(nonce[len(nonce)-8:], seq)
		binary.BigEndian.PutUint64(header, seq)
		out = aead.Seal(out[:0], nonce, payload, header)
		return nil
	}, nil
}

// cbcHMAC protects a record as TLS 1.2's CBC suites do (MAC-then-encrypt):
// HMAC-SHA1 over sequence number, header and payload, padding to the block,
// a random explicit IV, AES-256-CBC over payload, MAC and padding.
func cbcHMAC(key, payload, header []byte) (func() error, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	macKey := make([]byte, sha1.Size)
	if _, err := rand.Read(macKey); err != nil {
		return nil, err
	}
	mac := hmac.New(sha1.New, macKey)
	iv := make([]byte, aes.BlockSize)
	cbc, ok := cipher.NewCBCEncrypter(block, iv).(interface {
		cipher.BlockMode
		SetIV([]byte)
	})
	if !ok {
		return nil, errors.New("crypto/cipher's CBC encrypter cannot reset its IV")
	}
	n := len(payload) + sha1.Size
	padded := n + aes.BlockSize - n%aes.BlockSize
	rec := make([]byte, padded)
	var seq uint64
	return func() error {
		seq++
		binary.BigEndian.PutUint64(header, seq)
		mac.Reset()
		mac.Write(header)
		mac.Write(payload)
		copy(rec, payload)
		mac.Sum(rec[:len(payload)])
		pad := byte(padded - n - 1)
		for i := n; i < padded; i++ {
			rec[i] = pad
		}
		if _, err := rand.Read(iv); err != nil {
			return err
		}
		cbc.SetIV(iv)
		cbc.CryptBlocks(rec, rec)
		return nil
	}, nil
}

// rate runs the operations of workers goroutines (each made by newOp, tried
// once unmeasured) together until d has passed or count operations are done
// (0: no count), and returns operations per CPU-second of the process, times
// workers: what that many cores make when they are the process's alone, as
// openssl speed counts (by user CPU time, -multi summing its processes).
// Wall-clock time would measure what other load on a shared machine leaves.
func rate(ctx context.Context, workers int, d time.Duration, count int64, newOp func() (func() error, error)) (float64, error) {
	ops := make([]func() error, workers)
	for i := range ops {
		op, err := newOp()
		if err != nil {
			return 0, err
		}
		if err := op(); err != nil {
			return 0, err
		}
		ops[i] = op
	}
	var issued, done atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	cpu0 := host.ProcessCPU()
	start := time.Now()
	deadline := start.Add(d)
	for i, op := range ops {
		wg.Go(func() {
			// Operations run in batches, so that reading the clock costs
			// nothing next to a 16-byte record; a batch grows until it
			// takes 100 µs.
			batch := int64(1)
			for ctx.Err() == nil {
				n := batch
				if count > 0 {
					if n = reserve(&issued, count, batch); n == 0 {
						return
					}
				}
				t0 := time.Now()
				for range n {
					if err := op(); err != nil {
						errs[i] = err
						return
					}
				}
				done.Add(n)
				now := time.Now()
				if !now.Before(deadline) {
					return
				}
				if now.Sub(t0) < 100*time.Microsecond {
					batch *= 2
				}
			}
		})
	}
	wg.Wait()
	cpu, elapsed := host.ProcessCPU()-cpu0, time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if cpu <= 0 {
		// Below the clock's resolution: the wall clock bounds it.
		cpu = elapsed * time.Duration(workers)
	}
	return float64(done.Load()) / cpu.Seconds() * float64(workers), nil
}

// reserve takes up to want operations of a shared count limit.
func reserve(issued *atomic.Int64, limit, want int64) int64 {
	for {
		cur := issued.Load()
		if cur >= limit {
			return 0
		}
		n := min(want, limit-cur)
		if issued.CompareAndSwap(cur, cur+n) {
			return n
		}
	}
}
