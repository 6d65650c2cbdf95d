package lab

import (
	"context"
	"crypto/tls"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/plan"
)

func TestMongoDBPlainOnly(t *testing.T) {
	m := startT(t, "mongodb", Options{Keys: []string{"ecdsa-p256"}, PlainOnly: true}).(*mongoServer)
	if _, err := m.URL("", true); err == nil {
		t.Error("a TLS URL without TLS")
	}
	if _, err := m.UseKey(context.Background(), "ecdsa-p256"); err == nil {
		t.Error("UseKey without TLS")
	}
	if eps := m.Info().Endpoints; len(eps) != 1 || eps[""] == "" {
		t.Errorf("endpoints %v, want the plaintext one only", eps)
	}
	if _, err := mongoCommand(context.Background(), m.Info().Endpoints[""], bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}); err != nil {
		t.Error(err)
	}
}

// mongoLogin is the lifecycle suite's login: the official driver connects
// with rawURL (and tlsConfig), authenticates and pings, then disconnects.
func mongoLogin(ctx context.Context, rawURL string, tlsConfig *tls.Config) (tls.ConnectionState, error) {
	var (
		mu    sync.Mutex
		state tls.ConnectionState
	)
	o := options.Client().ApplyURI(rawURL).SetServerSelectionTimeout(10 * time.Second).SetDirect(true)
	if tlsConfig != nil {
		cfg := tlsConfig.Clone()
		// The driver keeps its connections to itself: take the state
		// when the handshake checks the server.
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			mu.Lock()
			state = cs
			mu.Unlock()
			return nil
		}
		o.SetTLSConfig(cfg)
	}
	c, err := mongo.Connect(o)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Disconnect(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = c.Ping(ctx, nil)
	mu.Lock()
	defer mu.Unlock()
	return state, err
}

// checkMongoDB is what only the MongoDB lab server (FerretDB) promises (the
// lifecycle suite runs it): its version as the binary states it, a
// plaintext and a TLS port, URLs for each SCRAM mechanism that tlsbench
// takes as targets, and a server that authenticates.
func checkMongoDB(t *testing.T, srv Server, _ string) {
	m := srv.(*mongoServer)
	out, err := exec.Command(m.exe, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	info := m.Info()
	if first, _, _ := strings.Cut(string(out), "\n"); first != "version: "+info.Version {
		t.Errorf("version %q, ferretdb --version says %q", info.Version, first)
	}
	if info.Software != "FerretDB" || !strings.Contains(info.Settings["tls"], "crypto/tls") || info.Settings["mongodb_version"] == "" {
		t.Errorf("info %+v", info)
	}
	tlsAddr := info.Endpoints[m.opts.Keys[0]]
	if info.Endpoints[""] == "" || tlsAddr == "" || tlsAddr == info.Endpoints[""] {
		t.Errorf("endpoints %v: want a plaintext and a TLS port", info.Endpoints)
	}
	if !strings.Contains(strings.Join(m.Notes(), " "), "by a restart") {
		t.Errorf("the notes do not say that a key switch restarts FerretDB: %q", m.Notes())
	}

	tests := []struct {
		auth, mechanism string
		tls             bool
		address         string
	}{
		{"", "", false, info.Endpoints[""]},
		{"scram-sha-256", "", false, info.Endpoints[""]},
		{"scram-sha-1", "SCRAM-SHA-1", false, info.Endpoints[""]},
		{"", "", true, tlsAddr},
	}
	for _, tc := range tests {
		raw, err := m.URL(tc.auth, tc.tls)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Scheme != "mongodb" || u.Host != tc.address || u.User.Username() != mongoUser ||
			q.Get("authSource") != "admin" || q.Get("authMechanism") != tc.mechanism ||
			(q.Get("tls") == "true") != tc.tls || (tc.tls && q.Get("tlsCAFile") != m.CAFile()) {
			t.Errorf("URL(%q, %v) = %s", tc.auth, tc.tls, plan.Redact(raw))
		}
		if target, err := plan.ParseTarget(raw); err != nil || (target.OwnTLS == "auto") != tc.tls {
			t.Errorf("ParseTarget(URL(%q, %v)) = %+v, %v", tc.auth, tc.tls, target, err)
		}
	}

	// Commands that need a user are refused without one: the server
	// authenticates.
	if _, err := mongoCommand(context.Background(), info.Endpoints[""], bson.D{{Key: "listDatabases", Value: 1}, {Key: "$db", Value: "admin"}}); err == nil || !strings.Contains(err.Error(), "requires authentication") {
		t.Errorf("listDatabases without a user: %v", err)
	}
}
