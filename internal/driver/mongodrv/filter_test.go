package mongodrv

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The filter tests' data: filterDocs documents _id "user" + 12 digits
// (redis-benchmark's __rand_int__ numbers), each padded to about padBytes,
// so that the bytes a find receives tell whether it found one.
const (
	filterDB, filterColl = "tbfilter", "docs"
	filterDocs           = 10
	padBytes             = 4096
)

// adminClient is a plain client of the shared server, to look at it from
// outside the driver.
func adminClient(t *testing.T) *mongo.Client {
	t.Helper()
	cfg := configOf(t, srv, plan.Variant{TLS: "off"}, "", WorkloadFindOneID)
	c, err := mongo.Connect(options.Client().ApplyURI(cfg.URL.String()).SetDirect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

// commandCounts reads serverStatus metrics.commands: how many of each
// command the server ran.
func commandCounts(t *testing.T, admin *mongo.Client) map[string]int64 {
	t.Helper()
	var st struct {
		Metrics struct {
			Commands map[string]struct {
				Total int64 `bson:"total"`
			} `bson:"commands"`
		} `bson:"metrics"`
	}
	if err := admin.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for k, v := range st.Metrics.Commands {
		out[k] = v.Total
	}
	return out
}

// TestFilter: each operation is one find of the user's filter (the
// server's serverStatus counts one find per operation and no getMore or
// killCursors), in one round trip; every __rand_int__ becomes a number
// below the keyspace: with documents for all of [0, keyspace) every find
// receives one, with documents for half of it about half do.
func TestFilter(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	admin := adminClient(t)
	coll := admin.Database(filterDB).Collection(filterColl)
	coll.Drop(ctx)
	var docs []any
	for i := range filterDocs {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("user%012d", i)}, {Key: "n", Value: int64(i)}, {Key: "pad", Value: strings.Repeat("x", padBytes)}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	const ops = 100
	for _, tt := range []struct {
		name     string
		v        plan.Variant
		keyspace int64
		// found is the share of finds that must find a document.
		minFound, maxFound float64
	}{
		{"plain", plan.Variant{ID: "plain", TLS: "off"}, filterDocs, 1, 1},
		{"tls", plan.Variant{ID: "tls", TLS: "1.3", Key: "rsa2048"}, filterDocs, 1, 1},
		{"half", plan.Variant{ID: "plain", TLS: "off"}, 2 * filterDocs, 0.25, 0.75},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.v.Plain() {
				useKey(t, tt.v.Key)
			}
			cfg := configOf(t, srv, tt.v, "", plan.WorkloadFilter)
			// Relaxed and canonical extended JSON in one filter.
			cfg.Workload.User = filterWorkload(t, `{"_id": "user__rand_int__", "n": {"$gte": {"$numberLong": "0"}}}`)
			cfg.Workload.User.Keyspace = tt.keyspace
			s, err := newDriver(t, cfg).Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := commandCounts(t, admin)
			turns := s.Conn().Turns()
			_, received := s.Conn().Counters()
			for range ops {
				if err := s.Do(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n := s.Conn().Turns() - turns; n != ops {
				t.Errorf("%d round trips for %d finds, want one each", n, ops)
			}
			_, got := s.Conn().Counters()
			found := float64(got-received) / padBytes / ops
			t.Logf("%.2f of the finds received a document (%d bytes)", found, got-received)
			s.Close()
			after := commandCounts(t, admin)
			if n := after["find"] - before["find"]; n != ops {
				t.Errorf("the server ran %d finds, want %d", n, ops)
			}
			for _, c := range []string{"getMore", "killCursors"} {
				if n := after[c] - before[c]; n != 0 {
					t.Errorf("the server ran %d %s, want 0: the first batch is the only one", n, c)
				}
			}
			if found < tt.minFound || found > tt.maxFound+0.1 {
				t.Errorf("%.2f of the finds received a document, want %.2f to %.2f", found, tt.minFound, tt.maxFound)
			}
		})
	}
}

// TestFilterNothing: a filter that matches nothing is an answer; a filter
// the server refuses fails the operation with the server's message.
func TestFilterNothing(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	for _, tt := range []struct {
		filter, err string
	}{
		{`{"_id": "no such document"}`, ""},
		{`{"_id": {"$nosuchoperator": 1}}`, "$nosuchoperator"},
	} {
		cfg := configOf(t, srv, plan.Variant{TLS: "off"}, "", plan.WorkloadFilter)
		cfg.Workload.User = filterWorkload(t, tt.filter)
		s, err := newDriver(t, cfg).Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Do(ctx)
		s.Close()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.filter, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(driver.Kind(err), PhaseQuery+": ")):
			t.Errorf("%s: Do = %v, want an error of the query phase naming %s", tt.filter, err, tt.err)
		}
	}
}

// filterWorkload is the filter workload on the test's collection, encoded
// as plan.New encodes it.
func filterWorkload(t *testing.T, filter string) plan.UserWorkload {
	t.Helper()
	doc, err := plan.EncodeFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	return plan.UserWorkload{Filter: filter, FilterBSON: doc, Database: filterDB, Collection: filterColl}
}
