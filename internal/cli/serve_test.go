package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestServeHuman runs serve with generated certificates, reads its human
// lines, fetches from each listener and stops it by cancelling its context.
func TestServeHuman(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	cmd := newServeCmd()
	cmd.SetArgs([]string{"--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--key", "ed25519,ecdsa-p256", "--size", "10"})
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()

	var urls, keys []string
	var caFile string
	sc := bufio.NewScanner(pr)
	for caFile == "" && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "http":
			urls, keys = append(urls, f[1]), append(keys, "")
		case len(f) == 4 && f[0] == "https" && f[2] == "key":
			urls, keys = append(urls, f[1]), append(keys, f[3])
		case len(f) >= 2 && f[0] == "ca":
			caFile = f[1]
		default:
			t.Errorf("unexpected line %q", sc.Text())
		}
	}
	go io.Copy(io.Discard, pr)
	if caFile == "" {
		t.Fatalf("no ca line; serve ended with %v", <-done)
	}
	if strings.Join(keys, ",") != ",ed25519,ecdsa-p256" {
		t.Errorf("listeners for keys %q, want plain, then --key order", keys)
	}
	roots, err := tlsx.LoadCAFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, u := range urls {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) != 10 {
			t.Errorf("GET %s: %s, %d bytes", u, resp.Status, len(body))
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop when its context was cancelled")
	}
	if _, err := os.Stat(filepath.Dir(caFile)); !os.IsNotExist(err) {
		t.Errorf("generated certificate dir %s not removed (%v)", filepath.Dir(caFile), err)
	}
}

func TestServeFlagErrors(t *testing.T) {
	tests := []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"--key", "rsa512"}, `unknown key type "rsa512"`, true},
		{[]string{"--key", "rsa2048,rsa2048"}, "given twice", true},
		{[]string{"--tls-max", "1.1"}, `"1.1" is not 1.2 or 1.3`, true},
		{[]string{"--size", "-1"}, "out of range", true},
		{[]string{"--http", "", "--https", "", "--key", "ed25519"}, "nothing to serve", false},
		{[]string{"--http", "", "--https", "127.0.0.1:0", "--key", "ed25519", "--cert-dir", "/nonexistent"}, "ed25519 certificate: stat /nonexistent/ed25519.crt: no such file", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := newServeCmd()
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ue usageError
			if errors.As(err, &ue) != tt.usage {
				t.Errorf("usage error %v, want %v", errors.As(err, &ue), tt.usage)
			}
		})
	}
}
