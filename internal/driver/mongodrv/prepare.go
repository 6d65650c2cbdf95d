package mongodrv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The shape of a YCSB record: field0..field9 of 100 bytes each.
const (
	fieldCount = 10
	fieldSize  = 100
	batch      = 1000 // documents per insertMany
)

// Prepare fills ycsb.usertable with records documents shaped as YCSB's
// load phase makes them: _id Key(n) for n in [0, records), field0..field9
// of 100 random bytes (BSON binary), inserted in order in batches of 1000.
// MongoDB has no tables, so their number is ignored. Idempotent, by
// probing _ids rather than counting (FerretDB counts by reading every
// document): with Key(0) and Key(records-1) present and Key(records)
// absent the data is kept; a run cut short (ordered inserts leave a prefix)
// is continued where it stopped; anything else, e.g. a larger earlier
// run, is dropped and loaded again. Other collections are left alone.
func (d *mongoDriver) Prepare(ctx context.Context, _, records int, progress func(done, total int64)) error {
	if records < 1 {
		return fmt.Errorf("preparing mongodb data: %d records: use 1 or more", records)
	}
	sess, err := d.Open(ctx)
	if err != nil {
		return err
	}
	s := sess.(*session)
	defer s.Close()
	coll := s.coll
	total := int64(records)
	has := func(n int) (bool, error) {
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: Key(n)}}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("looking for %s: %w", Key(n), d.clean(err))
		}
		return true, nil
	}
	start, err := resumeAt(records, has)
	if err != nil {
		return err
	}
	if start < 0 {
		if err := coll.Drop(ctx); err != nil {
			return fmt.Errorf("dropping %s.%s to load it again: %w", Database, Collection, d.clean(err))
		}
		start = 0
	}
	progress(int64(start), total)
	docs := make([]any, 0, batch)
	data := make([]byte, batch*fieldCount*fieldSize)
	for first := start; first < records; first += batch {
		last := min(first+batch, records)
		fillRandom(data)
		docs = docs[:0]
		for n := first; n < last; n++ {
			doc := make(bson.D, 0, 1+fieldCount)
			doc = append(doc, bson.E{Key: "_id", Value: Key(n)})
			for f := range fieldCount {
				i := ((n-first)*fieldCount + f) * fieldSize
				doc = append(doc, bson.E{Key: "field" + strconv.Itoa(f), Value: bson.Binary{Data: data[i : i+fieldSize]}})
			}
			docs = append(docs, doc)
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("inserting records %d to %d: %w", first, last-1, d.clean(err))
		}
		progress(int64(last), total)
	}
	return nil
}

// resumeAt returns where loading records documents should start, given a
// probe of which keys exist: records when all are there, the first missing
// record of a prefix left by an interrupted load, or -1 when the
// collection must be dropped first (a larger load, or not a prefix of ours).
func resumeAt(records int, has func(int) (bool, error)) (int, error) {
	probe := func(ns ...int) ([]bool, error) {
		out := make([]bool, len(ns))
		for i, n := range ns {
			ok, err := has(n)
			if err != nil {
				return nil, err
			}
			out[i] = ok
		}
		return out, nil
	}
	p, err := probe(0, records-1, records)
	if err != nil {
		return 0, err
	}
	first, last, beyond := p[0], p[1], p[2]
	switch {
	case beyond:
		return -1, nil
	case first && last:
		// A random record too: a hole would mean someone else's data.
		if ok, err := has(rand.IntN(records)); err != nil || ok {
			return records, err
		}
		return -1, nil
	case !first:
		return -1, nil // empty, or not ours: start clean
	}
	// 0 is there, records-1 is not: find the first missing one.
	lo, hi := 0, records-1
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := has(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// fillRandom fills b with random bytes: data no layer could compress away.
func fillRandom(b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}
