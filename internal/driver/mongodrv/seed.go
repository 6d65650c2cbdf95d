package mongodrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
)

// The loops of the MongoDB seed study (a Python script timing pymongo),
// driver.ClientLoops: a new client per iteration, timed from its
// construction to the end of its first find_one(), and one reused
// client's find_one()s. Its clients are the driver's defaults as far as
// tlsbench's measuring allows: the pool connects at the first operation,
// not before.
var _ driver.ClientLoops = (*mongoDriver)(nil)

// NewClient runs one iteration: connect, find_one() with no filter, then
// disconnect, which the seed's script did not do and is not timed.
func (d *mongoDriver) NewClient(ctx context.Context) (driver.ClientSample, error) {
	var smp driver.ClientSample
	t0 := time.Now()
	c, err := d.newClient(ctx, false)
	t1 := time.Now()
	if err != nil {
		return smp, err
	}
	qctx, cancel := c.queryContext(ctx)
	defer cancel()
	_, err = c.mongo.Database(Database).Collection(Collection).FindOne(qctx, bson.D{}).Raw()
	t2 := time.Now()
	op, mon := c.links()
	if op != nil {
		op.net.Mark(netx.PhaseClose) // what follows is not timed
	}
	cerr := c.close()
	if err != nil {
		if cf := c.failure(); cf != nil {
			err = cf // the connection's own error says more
		}
		return smp, d.queryError(ctx, err)
	}
	if cerr != nil {
		return smp, &driver.OpError{Phase: netx.PhaseClose, Err: cerr}
	}
	if op == nil || mon == nil {
		return smp, errors.New("the client ran its query without a monitor and an operation connection of its own")
	}
	smp.Connect, smp.FirstQuery = t1.Sub(t0), t2.Sub(t1)
	smp.Op, smp.Monitor = untilClose(op.net.Finish()), mon.net.Finish()
	if op.secure != nil {
		smp.TLS, smp.Secure = op.secure.ConnectionState(), true
	}
	return smp, nil
}

// untilClose drops the close phase, which the seed did not time.
func untilClose(tr netx.Trace) netx.Trace {
	if n := len(tr.Phases); n > 1 && tr.Phases[n-1].Name == netx.PhaseClose {
		tr.Phases = tr.Phases[:n-1]
		last := tr.Phases[n-2]
		tr.End = last.Start.Add(last.Duration)
	}
	return tr
}

// queryContext bounds an operation by the timeout, and ends it as soon as
// one of the client's connections failed: the driver would otherwise wait
// for its server selection to time out.
func (c *client) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	qctx, cancel := context.WithTimeout(ctx, c.d.cfg.Timeout)
	go func() {
		select {
		case <-c.failed:
			cancel()
		case <-qctx.Done():
		}
	}()
	return qctx, cancel
}

// failure is the client's own first failure, if any.
func (c *client) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// queryError names the phase of a failed first query.
func (d *mongoDriver) queryError(ctx context.Context, err error) error {
	var oe *driver.OpError
	if errors.As(err, &oe) {
		return err
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, mongo.ErrNoDocuments) {
		err = d.workload.errNotPrepared(fmt.Sprintf("%s.%s is empty", Database, Collection))
	}
	return &driver.OpError{Phase: PhaseQuery, Err: d.clean(err)}
}

// reused is one client whose find_one()s are timed one by one, as the
// seed's last loop did.
type reused struct {
	d    *mongoDriver
	c    *client
	coll *mongo.Collection
}

// OpenReused starts a client and runs its first find_one(), untimed, so
// that what follows reuses the connection.
func (d *mongoDriver) OpenReused(ctx context.Context) (driver.ReusedClient, error) {
	c, err := d.newClient(ctx, false)
	if err != nil {
		return nil, err
	}
	r := &reused{d: d, c: c, coll: c.mongo.Database(Database).Collection(Collection)}
	if _, err := r.Op(ctx); err != nil {
		if cf := c.failure(); cf != nil {
			err = cf
		}
		c.close()
		return nil, err
	}
	return r, nil
}

// Op times one find_one() with no filter.
func (r *reused) Op(ctx context.Context) (time.Duration, error) {
	qctx, cancel := r.c.queryContext(ctx)
	defer cancel()
	t0 := time.Now()
	_, err := r.coll.FindOne(qctx, bson.D{}).Raw()
	el := time.Since(t0)
	if err != nil {
		return el, r.d.queryError(ctx, err)
	}
	return el, nil
}

// Conn is the client's operation connection, for its bytes and TLS state.
func (r *reused) Conn() (*netx.Conn, *tls.Conn) {
	op, _ := r.c.links()
	if op == nil {
		return nil, nil
	}
	return op.net, op.secure
}

// Close disconnects the client.
func (r *reused) Close() error { return r.c.close() }
