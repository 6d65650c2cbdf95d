package plan

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewCrypto(t *testing.T) {
	tests := []struct {
		name string
		c    Crypto
		want string // "" when accepted
	}{
		{"unknown primitive", Crypto{Duration: time.Second, Only: []string{"rsa512"}}, `unknown primitive "rsa512": use rsa1024, rsa2048`},
		{"primitive before duration", Crypto{Only: []string{"rsa512"}}, `unknown primitive "rsa512"`},
		{"zero duration", Crypto{givenFields: givenFields{"duration"}}, "duration: 0s is no measurement: give a positive duration"},
		{"no duration", Crypto{}, ""}, // DefaultCryptoDuration
		{"negative duration", Crypto{Duration: -time.Second}, "duration: -1s is no measurement"},
		{"long duration", Crypto{Duration: time.Hour}, "duration: 1h0m0s is out of range: use 1ns to 10m0s"},
		{"negative count", Crypto{Duration: time.Second, Count: -1}, "count: -1 is negative"},
		{"zero size", Crypto{Duration: time.Second, Sizes: []int{0}}, "sizes: 0 is out of range"},
		{"fine", Crypto{Duration: time.Second, Only: []string{"x25519"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewCrypto(tt.c)
			var pe *Error
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			case err != nil && !errors.As(err, &pe):
				t.Errorf("error %v is not a plan.Error", err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

func TestNewCryptoDefaults(t *testing.T) {
	c, err := NewCrypto(Crypto{Duration: DefaultCryptoDuration})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Only, Primitives()) || !slices.Equal(c.Sizes, RecordSizes) || c.Cores != runtime.NumCPU() || c.Count != 0 {
		t.Errorf("defaults %+v", c)
	}
	again, err := NewCrypto(c)
	if err != nil || !slices.Equal(again.Only, c.Only) || !slices.Equal(again.Sizes, c.Sizes) || again.Cores != c.Cores {
		t.Errorf("NewCrypto of its own result: %+v, %v; want it unchanged", again, err)
	}
}
