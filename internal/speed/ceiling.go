package speed

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// CeilingDuration is how long the signature rate of each key is measured
// before a connect run (OpenSSL takes whole seconds: see OpenSSL.SignRate).
const CeilingDuration = 300 * time.Millisecond

// Signer is the library a server signs its handshakes with: its name and
// how many signatures per second it makes with a key type on one core.
type Signer struct {
	Library string
	Rate    func(ctx context.Context, key string, d time.Duration) (float64, error)
}

// GoSigner is Go's crypto, which the built-in server signs with.
func GoSigner() Signer { return Signer{Library: GoLibrary(), Rate: GoSignRate} }

// Signer is OpenSSL's libcrypto, which the lab servers sign with.
func (s *OpenSSL) Signer() Signer { return Signer{Library: s.Library, Rate: s.SignRate} }

// GoSignRate measures Go's signatures per second with a fresh key of a key
// type, on one goroutine for d.
func GoSignRate(ctx context.Context, key string, d time.Duration) (float64, error) {
	k, err := tlsx.GenerateKey(key)
	if err != nil {
		return 0, err
	}
	sign, _ := signer(k)
	return rate(ctx, 1, d, 0, sign)
}

// Ceilings measures, once per server key of the TLS variants, the ceiling
// that key puts on new connections: every full handshake costs the server
// one signature, so it makes at most cores × signatures/s per core. cores
// is the server machine's (0: this machine's, where tlsbench started the
// server).
func Ceilings(ctx context.Context, s Signer, variants []plan.Variant, d time.Duration, cores int) ([]result.Ceiling, error) {
	if cores == 0 {
		cores = runtime.NumCPU()
	}
	var keys []string
	for _, v := range variants {
		if !v.Plain() && v.Key != "" && !slices.Contains(keys, v.Key) {
			keys = append(keys, v.Key)
		}
	}
	var out []result.Ceiling
	for _, k := range keys {
		r, err := s.Rate(ctx, k, d)
		if err != nil {
			return out, fmt.Errorf("measuring %s signatures of %s: %w", s.Library, k, err)
		}
		out = append(out, result.Ceiling{Key: k, Library: s.Library, SignPerSec: r, Cores: cores})
	}
	return out, nil
}
