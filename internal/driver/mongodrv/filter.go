package mongodrv

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// filter is the user's workload (--filter on --collection): every
// operation is one find of the filter, its first batch its only one (the
// server closes the cursor: one round trip), each __rand_int__ in the
// filter's strings replaced by its own random number in [0, keyspace).
// The filter comes encoded to BSON (plan.EncodeFilter, by plan.New); the
// placeholders, 12 bytes like the numbers that replace them, are filled
// in the encoded bytes. A find that
// matches nothing is an answer, not a failure.
type filter struct {
	doc      plan.Template
	keyspace int64
	opts     *options.FindOptionsBuilder
}

func newFilter(w plan.UserWorkload) (filter, error) {
	if len(w.FilterBSON) == 0 {
		return filter{}, errors.New("mongodb: the filter workload has no encoded filter (plan.EncodeFilter)")
	}
	return filter{
		doc:      plan.NewTemplate(w.FilterBSON),
		keyspace: w.Keyspace,
		// A negative limit asks for a single batch.
		opts: options.Find().SetLimit(-plan.MongoFirstBatch),
	}, nil
}

// run runs one find and reads its documents as raw BSON.
func (f filter) run(ctx context.Context, coll *mongo.Collection) error {
	cur, err := coll.Find(ctx, bson.Raw(f.doc.Fill(nil, f.keyspace)), f.opts)
	if err != nil {
		return err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
	}
	return cur.Err()
}
