package netx

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestSSHConfigFromURL checks how an ssh:// URL becomes a login: the
// default port, the password, the key named by ?identity=, and the URLs
// that cannot be used (a *SSHURLError each).
func TestSSHConfigFromURL(t *testing.T) {
	home := t.TempDir() // no ~/.ssh: no default identities, no known_hosts
	t.Setenv("HOME", home)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b *pem.Block) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := write("id", block)
	if block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pw")); err != nil {
		t.Fatal(err)
	}
	locked := write("locked", block)
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	cfg, err := SSHConfigFromURL(parse("ssh://bob:secret@example.net?known_hosts="+known), "aes128-ctr", false)
	if err != nil || cfg.Addr != "example.net:22" || cfg.User != "bob" || len(cfg.Auth) != 1 || cfg.HostKey == nil || cfg.Cipher != "aes128-ctr" {
		t.Errorf("password URL: %+v, %v", cfg, err)
	}
	cfg, err = SSHConfigFromURL(parse("ssh://bob@127.0.0.1:2222?identity="+key), "", true)
	if err != nil || cfg.Addr != "127.0.0.1:2222" || len(cfg.Auth) != 1 || cfg.HostKey == nil {
		t.Errorf("identity URL: %+v, %v", cfg, err)
	}

	for _, tt := range []struct {
		url, want string
	}{
		{"ssh://bob@h", ErrNoSSHAuth.Error()},
		{"ssh://bob@h?identity=" + filepath.Join(dir, "none"), "identity file:"},
		{"ssh://bob@h?identity=" + locked, "is protected by a passphrase"},
		{"ssh://bob@h?identity=" + known, known + ":"},
		{"ssh://bob@h?identity=" + key, "known hosts:"},
	} {
		_, err := SSHConfigFromURL(parse(tt.url), "", false)
		var ue *SSHURLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an SSHURLError with %q", tt.url, err, tt.want)
		}
	}
}
