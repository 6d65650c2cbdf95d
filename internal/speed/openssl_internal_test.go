package speed

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestParseSpeed reads output of `openssl speed -mr` as OpenSSL 3.0.19 printed
// it on this project's test machine (trimmed to a few lines per format).
func TestParseSpeed(t *testing.T) {
	tests := []struct {
		name  string
		out   string
		sizes []int
		want  []speedRow
		err   string
	}{
		{"rsa", `+DTP:2048:private:rsa:1
+R1:3946:2048:0.99
+DTP:2048:public:rsa:1
+R2:56925:2048:0.88
+F2:2:2048:3985.858586:64687.500000
`, nil, []speedRow{{result.KindSign, "rsa2048", 0, 3985.858586}, {result.KindVerify, "rsa2048", 0, 64687.5}}, ""},
		{"ecdsa -multi: the sum, not the children", `Forked child 1
Got: +F4:3:256:58731.000000:20486.000000 from 0
Got: +F4:3:256:60048.000000:20727.000000 from 1
+F4:3:256:118779.000000:41213.000000
`, nil, []speedRow{{result.KindSign, "ecdsa-p256", 0, 118779}, {result.KindVerify, "ecdsa-p256", 0, 41213}}, ""},
		{"ecdh and eddsa", `+R7:27688:256:1.00
+F5:3:256:27688.000000:0.000036
+F5:22:253:36349.000000:0.000028
+F6:0:253:Ed25519:37845.000000:14127.000000
`, nil, []speedRow{
			{result.KindKeyAgreement, "ecdh-p256", 0, 27688}, {result.KindKeyAgreement, "x25519", 0, 36349},
			{result.KindSign, "ed25519", 0, 37845}, {result.KindVerify, "ed25519", 0, 14127},
		}, ""},
		{"cipher with its sizes", `+DT:AES-128-GCM:1:16384
+R:271763:AES-128-GCM:0.970000
+H:16:64:256:1024:8192:16384
+F:25:AES-128-GCM:41913098.99:177986688.00:636867584.00:1833896421.05:3516428412.12:4590273187.63
`, plan.RecordSizes, []speedRow{
			{result.KindCipher, "aes-128-gcm", 16, 41913098.99}, {result.KindCipher, "aes-128-gcm", 64, 177986688},
			{result.KindCipher, "aes-128-gcm", 256, 636867584}, {result.KindCipher, "aes-128-gcm", 1024, 1833896421.05},
			{result.KindCipher, "aes-128-gcm", 8192, 3516428412.12}, {result.KindCipher, "aes-128-gcm", 16384, 4590273187.63},
		}, ""},
		{"cipher -multi -bytes: no +H from the parent", `Got: +H:16384 from 0
Got: +F:25:ChaCha20-Poly1305:3693838336.00 from 0
Got: +H:16384 from 1
Got: +F:25:ChaCha20-Poly1305:3722838016.00 from 1
+F:25:ChaCha20-Poly1305:7416676352.00
`, []int{16384}, []speedRow{{result.KindCipher, "chacha20-poly1305", 16384, 7416676352}}, ""},
		{"sizes and figures disagree", "+F:25:AES-128-GCM:1.0:2.0\n", []int{16}, nil, "unexpected line"},
		{"not a number", "+F2:2:2048:many:64687.5\n", nil, nil, "unexpected line"},
		{"nothing", "Forked child 0\n", nil, nil, "no figures"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSpeed(tt.out, tt.sizes)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case !slices.Equal(got, tt.want):
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)\n": "OpenSSL 3.0.19",
		"OpenSSL 3.0.2 15 Mar 2022 (Library: OpenSSL 3.0.13 30 Jan 2024)\n":  "OpenSSL 3.0.13",
		"LibreSSL 3.3.6\n": "LibreSSL 3.3.6",
	} {
		if got, err := parseVersion(in); err != nil || got != want {
			t.Errorf("parseVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseVersion("\n"); err == nil {
		t.Error("parseVersion of nothing: no error")
	}
}

// TestRateCount checks that a count bounds the operations of all workers
// together, besides the one unmeasured operation each worker tries first.
func TestRateCount(t *testing.T) {
	var calls atomic.Int64
	newOp := func() (func() error, error) {
		return func() error { calls.Add(1); return nil }, nil
	}
	r, err := rate(t.Context(), 3, 1<<62, 37, newOp)
	if err != nil || r <= 0 {
		t.Fatalf("rate %g, %v", r, err)
	}
	if n := calls.Load(); n != 37+3 {
		t.Errorf("%d operations, want 37 measured and 3 tries", n)
	}
}
