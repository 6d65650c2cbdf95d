package clientstack

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// seedOps is the iterations of each seed loop the tests run.
const seedOps = 15

// TestPyMongoSeedLoops runs the MongoDB seed's loops through pymongo on
// the shared FerretDB, plain and TLS 1.3: new-client's iterations each
// build a client (the seed's only-connection) and then run its first
// find_one() (first-query), both taking time, each one login the server
// counted (the monitor's connection does not log in); reused-client's
// operations run on one client, one login. A wrong password fails every
// iteration in auth, and every reused-client operation too (each one
// builds the client again).
func TestPyMongoSeedLoops(t *testing.T) {
	labtest.Slow(t)
	srv := sharedLab(t, "mongodb")
	seedDocument(t, srv)
	ctx := context.Background()
	seed := func(t *testing.T, tls string) Config {
		cfg := srv.config(t, "pymongo", tls)
		cfg.Workload, cfg.Experiments = "find-one", []string{"new-client", "reused-client"}
		return cfg
	}
	for _, tls := range []string{"off", "1.3"} {
		t.Run(tls, func(t *testing.T) {
			cfg := seed(t, tls)
			c := startStack(t, cfg)
			logins0, _ := srv.count(t, 0)
			rep, err := c.Run(ctx, Run{Experiment: "new-client", Concurrency: 1, PerConn: 1, MaxOps: seedOps, Duration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			checkOps(t, cfg, rep, seedOps, 1)
			checkTLS(t, cfg, rep)
			for i, o := range rep.Ops {
				if !(o.Start < o.Built && o.Built < o.End) {
					t.Errorf("iteration %d: start %d, built %d, end %d: a phase took no time", i, o.Start, o.Built, o.End)
				}
			}
			checkCounted(t, srv, cfg, "new-client", logins0, -1, seedOps)

			logins0, _ = srv.count(t, 0)
			rep, err = c.Run(ctx, Run{Experiment: "reused-client", Concurrency: 1, PerConn: 1, MaxOps: seedOps, Duration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			checkOps(t, cfg, rep, seedOps, 1)
			checkTLS(t, cfg, rep)
			for i, o := range rep.Ops {
				if o.Built != 0 {
					t.Errorf("reused-client operation %d says a client was built: %+v", i, o)
				}
			}
			checkCounted(t, srv, cfg, "reused-client", logins0, -1, 1)
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := seed(t, "off")
		cfg.Password += "x"
		c := startStack(t, cfg)
		for _, exp := range []string{"new-client", "reused-client"} {
			rep, err := c.Run(ctx, Run{Experiment: exp, Concurrency: 1, PerConn: 1, MaxOps: 2, Duration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ops) != 2 {
				t.Errorf("%s: %d operations, want 2", exp, len(rep.Ops))
			}
			for _, o := range rep.Ops {
				if o.Phase != "auth" || o.Kind != "auth" {
					t.Errorf("%s: %+v, want a failure in auth", exp, o)
				}
			}
		}
	})
}

// seedDocument puts a document in ycsb.usertable, the collection the
// seed's find_one() reads, if it has none.
func seedDocument(t *testing.T, l *labServer) {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(l.urls[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Database("ycsb").Collection("usertable").UpdateOne(ctx, bson.D{{Key: "_id", Value: "user-seed"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "field0", Value: "seed"}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		t.Fatal(err)
	}
}
