package mongodrv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// Workload names.
const (
	WorkloadFindOneID = "find-one-id" // find_one({_id: a random key}): YCSB's read
	WorkloadFindOne   = "find-one"    // find_one() with no filter, as the seed's script did
	WorkloadStream    = "stream"      // find() of the whole collection
)

type workload struct {
	name    string
	records int
	// db and coll are where the workload reads: ycsb.usertable, or the
	// user's --collection.
	db, coll string
	user     filter
}

func newWorkload(w driver.Workload) (workload, error) {
	switch w.Name {
	case "":
		w.Name = WorkloadFindOneID
	case plan.WorkloadFilter:
		f, err := newFilter(w.User)
		if err != nil {
			return workload{}, err
		}
		return workload{name: w.Name, db: w.User.Database, coll: w.User.Collection, user: f}, nil
	case plan.WorkloadPing:
		return workload{name: w.Name, db: "admin"}, nil
	case WorkloadFindOneID, WorkloadFindOne, WorkloadStream:
	default:
		return workload{}, fmt.Errorf("mongodb has no workload %q: use %s, %s, %s or %s", w.Name, WorkloadFindOneID, WorkloadFindOne, WorkloadStream, plan.WorkloadPing)
	}
	if w.Rows < 1 {
		return workload{}, fmt.Errorf("mongodb workload %s: %d records: use 1 or more", w.Name, w.Rows)
	}
	return workload{name: w.Name, records: w.Rows, db: Database, coll: Collection}, nil
}

// errNotPrepared says what to do about missing data.
func (w workload) errNotPrepared(what string) error {
	return fmt.Errorf("%s: prepare the data (tlsbench prepare URL --records %d)", what, w.records)
}

// run runs one operation: one find (a stream also its getMores), the
// documents read as raw BSON, not decoded.
func (w workload) run(ctx context.Context, coll *mongo.Collection) error {
	switch w.name {
	case plan.WorkloadFilter:
		return w.user.run(ctx, coll)
	case plan.WorkloadPing:
		return coll.Database().RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	case WorkloadFindOneID:
		key := Key(rand.IntN(w.records))
		if _, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Raw(); err != nil {
			if errors.Is(err, mongo.ErrNoDocuments) {
				return w.errNotPrepared(fmt.Sprintf("no document %s in %s.%s", key, Database, Collection))
			}
			return err
		}
	case WorkloadFindOne:
		if _, err := coll.FindOne(ctx, bson.D{}).Raw(); err != nil {
			if errors.Is(err, mongo.ErrNoDocuments) {
				return w.errNotPrepared(fmt.Sprintf("%s.%s is empty", Database, Collection))
			}
			return err
		}
	case WorkloadStream:
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			return err
		}
		defer cur.Close(context.WithoutCancel(ctx))
		n := 0
		for cur.Next(ctx) {
			n++
		}
		if err := cur.Err(); err != nil {
			return err
		}
		if n != w.records {
			return w.errNotPrepared(fmt.Sprintf("%s.%s holds %d documents, not %d", Database, Collection, n, w.records))
		}
	}
	return nil
}

// Key is the _id of record n, as YCSB's CoreWorkload names it with its
// default hashed (unordered) inserts: "user" and the FNV-1a 64 hash of n,
// so that a usertable loaded by YCSB itself is read the same way.
func Key(n int) string {
	return "user" + strconv.FormatInt(fnvhash64(int64(n)), 10)
}

// fnvhash64 is YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of val,
// least significant first, made non-negative with Java's Math.abs.
func fnvhash64(val int64) int64 {
	const offsetBasis, prime = uint64(0xCBF29CE484222325), uint64(1099511628211)
	h := offsetBasis
	for range 8 {
		h ^= uint64(val & 0xff)
		h *= prime
		val >>= 8
	}
	if v := int64(h); v < 0 && v != -v {
		return -v
	}
	return int64(h)
}
