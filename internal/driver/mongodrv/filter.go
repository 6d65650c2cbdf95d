package mongodrv

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// filter is the user's workload (--filter on --collection): every
// operation is one find of the filter, its first batch its only one (the
// server closes the cursor: one round trip), each __rand_int__ in the
// filter's strings replaced by its own random number in [0, keyspace).
// The filter is encoded to BSON once; the placeholders, 12 bytes like the
// numbers that replace them, are filled in the encoded bytes. A find that
// matches nothing is an answer, not a failure.
type filter struct {
	doc      plan.Template
	keyspace int64
	opts     *options.FindOptionsBuilder
}

func newFilter(w plan.UserWorkload) (filter, error) {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(w.Filter), false, &d); err != nil {
		return filter{}, fmt.Errorf("mongodb: the filter is not extended JSON: %w", err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return filter{}, fmt.Errorf("mongodb: encoding the filter: %w", err)
	}
	return filter{
		doc:      plan.NewTemplate(raw),
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
