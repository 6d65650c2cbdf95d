package redisdrv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// batch is how many SETs one pipeline carries.
const batch = 1000

// Prepare writes the data both workloads read: key:1..key:rows with 100
// random characters each, in pipelines of 1000 SETs, and stream:1 of
// StreamSize(rows) bytes; Redis has no tables, so their number is ignored. It
// does nothing when the data is already there (DBSIZE and a sample say
// so), and removes key:<n> for n > rows left by a larger run. Other keys
// are left alone.
func (d *redisDriver) Prepare(ctx context.Context, _, rows int, progress func(done, total int64)) error {
	if rows < 1 {
		return fmt.Errorf("preparing redis data: %d rows: use 1 or more", rows)
	}
	sess, err := d.Open(ctx)
	if err != nil {
		return err
	}
	s := sess.(*session)
	defer s.Close()
	c := s.client
	total := int64(rows) + 1 // the stream value counts as one
	done, err := prepared(ctx, c, rows)
	if err != nil || done {
		if done {
			progress(total, total)
		}
		return err
	}
	for first := 1; first <= rows; first += batch {
		last := min(first+batch-1, rows)
		values := randomText((last - first + 1) * valueSize)
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for n := first; n <= last; n++ {
				i := (n - first) * valueSize
				p.Set(ctx, key(n), values[i:i+valueSize], 0)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("writing key:%d..key:%d: %w", first, last, err)
		}
		progress(int64(last), total)
	}
	if err := c.Set(ctx, streamKey, randomText(StreamSize(rows)), 0).Err(); err != nil {
		return fmt.Errorf("writing %s: %w", streamKey, err)
	}
	if err := removeBeyond(ctx, c, rows); err != nil {
		return err
	}
	progress(total, total)
	return nil
}

func key(n int) string { return "key:" + strconv.Itoa(n) }

// prepared reports whether the data of rows rows is in place: at least
// rows+1 keys, key:1, key:rows and a random key:<n> of 100 bytes, no
// key:<rows+1>, and the stream value at its size.
func prepared(ctx context.Context, c *redis.Client, rows int) (bool, error) {
	size, err := c.DBSize(ctx).Result()
	if err != nil {
		return false, fmt.Errorf("DBSIZE: %w", err)
	}
	if size < int64(rows)+1 {
		return false, nil
	}
	for _, n := range []int{1, rows, 1 + rand.IntN(rows)} {
		l, err := c.StrLen(ctx, key(n)).Result()
		if err != nil {
			return false, fmt.Errorf("STRLEN %s: %w", key(n), err)
		}
		if l != valueSize {
			return false, nil
		}
	}
	beyond, err := c.Exists(ctx, key(rows+1)).Result()
	if err != nil {
		return false, fmt.Errorf("EXISTS %s: %w", key(rows+1), err)
	}
	l, err := c.StrLen(ctx, streamKey).Result()
	if err != nil {
		return false, fmt.Errorf("STRLEN %s: %w", streamKey, err)
	}
	return beyond == 0 && l == int64(StreamSize(rows)), nil
}

// removeBeyond deletes key:<n> for n > rows, if key:<rows+1> shows that a
// larger run left some.
func removeBeyond(ctx context.Context, c *redis.Client, rows int) error {
	if n, err := c.Exists(ctx, key(rows+1)).Result(); err != nil || n == 0 {
		return err
	}
	var stale []string
	iter := c.Scan(ctx, 0, "key:*", batch).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if n, err := strconv.Atoi(strings.TrimPrefix(k, "key:")); err == nil && n > rows {
			stale = append(stale, k)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("SCAN for keys beyond key:%d: %w", rows, err)
	}
	for len(stale) > 0 {
		k := min(batch, len(stale))
		if err := c.Unlink(ctx, stale[:k]...).Err(); err != nil {
			return fmt.Errorf("removing keys beyond key:%d: %w", rows, err)
		}
		stale = stale[k:]
	}
	return nil
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// randomText is n random letters and digits: data that no layer could
// compress away.
func randomText(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; {
		r := rand.Uint64()
		for j := 0; j < 10 && i < n; j++ {
			b[i] = alphabet[r&63]
			r >>= 6
			i++
		}
	}
	return b
}
