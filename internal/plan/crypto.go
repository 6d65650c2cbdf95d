package plan

import (
	"runtime"
	"slices"
	"strings"
	"time"
)

// The primitives of `tlsbench crypto`, beside the server keys (KeyTypes,
// signed and verified), in the order tables show them: the key agreements
// of a TLS handshake, the post-quantum KEM and the hybrid TLS 1.3 offers
// first, and the record ciphers.
var (
	KeyAgreements = []string{"x25519", "ecdh-p256"}
	// KEMs are ML-KEM-768 alone (key generation, encapsulation,
	// decapsulation) and X25519MLKEM768, the hybrid of it and X25519 that
	// TLS 1.3 uses (GroupX25519MLKEM768).
	KEMs          = []string{"mlkem768", GroupX25519MLKEM768}
	RecordCiphers = []string{"aes-128-gcm", "aes-256-gcm", "chacha20-poly1305", "aes-256-cbc-hmac-sha1"}
	// RecordSizes are the record sizes of `openssl speed`; 16384 is TLS's
	// largest record.
	RecordSizes = []int{16, 64, 256, 1024, 8192, 16384}
)

// Primitives lists every primitive name, in table order.
func Primitives() []string {
	return slices.Concat(KeyTypes, KeyAgreements, KEMs, RecordCiphers)
}

// Bounds of a crypto run: by default each figure (one operation, one size,
// on one core or on all) takes DefaultCryptoDuration, so that all of them
// on Go and OpenSSL together stay near a minute on two cores.
const (
	DefaultCryptoDuration = 100 * time.Millisecond
	MaxCryptoDuration     = 10 * time.Minute
)

// Crypto is what a crypto run measures and for how long. Build it with
// NewCrypto, which applies defaults and validates.
type Crypto struct {
	// Duration is the time each figure is measured for; 0 not given is
	// DefaultCryptoDuration (given, it is an error). Count, if set,
	// bounds a figure's operations too (whichever comes first).
	Duration time.Duration `json:"duration_ns"`
	Count    int64         `json:"count,omitempty"`
	// Only names the primitives to measure (see Primitives); nil is all.
	Only []string `json:"primitives"`
	// Sizes are the cipher record sizes in bytes; nil is RecordSizes.
	Sizes []int `json:"sizes"`
	// Cores is how many goroutines (or processes) the all-cores figures
	// use; 0 is runtime.NumCPU().
	Cores int `json:"cores"`
	// givenFields are the fields the user gave (Give), never stored.
	givenFields
}

// NewCrypto fills defaults into raw and validates it.
func NewCrypto(raw Crypto) (Crypto, error) {
	c := raw
	for _, name := range c.Only {
		if !slices.Contains(Primitives(), name) {
			return c, errorf("unknown primitive %q: use %s", name, strings.Join(Primitives(), ", "))
		}
	}
	if c.Duration == 0 && !c.Given("duration") {
		c.Duration = DefaultCryptoDuration
	}
	if c.Duration <= 0 {
		return c, errorf("⟨duration⟩: %v is no measurement: give a positive duration", c.Duration)
	}
	if c.Duration > MaxCryptoDuration {
		return c, errorf("⟨duration⟩: %v is out of range: use 1ns to %v", c.Duration, MaxCryptoDuration)
	}
	if c.Count < 0 {
		return c, errorf("⟨count⟩: %d is negative: use a positive count of operations", c.Count)
	}
	if len(c.Only) == 0 {
		c.Only = Primitives()
	}
	if len(c.Sizes) == 0 {
		c.Sizes = RecordSizes
	}
	for _, s := range c.Sizes {
		if s < 1 || s > 1<<20 {
			return c, errorf("⟨sizes⟩: %d is out of range: use 1 to 1048576 bytes", s)
		}
	}
	if c.Cores == 0 {
		c.Cores = runtime.NumCPU()
	}
	return c, nil
}
