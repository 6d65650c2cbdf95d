'use strict';
// tlsbench's Node.js client (clients/PROTOCOL.md): one process runs one stack
// (node-postgres, mysql2, ioredis, the MongoDB driver or https) on one event
// loop with N operations in flight, and reports each operation on stdout.
// CommonJS, so that require() finds the libraries through NODE_PATH.

const fs = require('fs');
const net = require('net');
const tls = require('tls');
const readline = require('readline');

const now = () => process.hrtime.bigint();

// Output is buffered and written at once: one write per op line would cost
// more CPU than some operations. Pipes are written synchronously on Linux.
let out = '';
function emit(line, flush) {
  out += line + '\n';
  if (flush || out.length >= 1 << 15) flushOut();
}
function flushOut() {
  if (out) {
    process.stdout.write(out);
    out = '';
  }
}
setInterval(flushOut, 200).unref();

function fatal(msg) {
  emit('fatal ' + oneLine(msg), true);
  process.exit(1);
}

let secret = '';
// oneLine makes a library's message fit the protocol: one line, never the password.
function oneLine(msg) {
  let s = String(msg).replace(/\s+/g, ' ').trim();
  if (secret) s = s.split(secret).join('***');
  return s || '(no message)';
}

function readConfig(path) {
  const cfg = {};
  for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) cfg[line.slice(0, i)] = line.slice(i + 1).replace(/\r$/, '');
  }
  return cfg;
}

// pkgVersion reads an installed library's version from its package.json,
// found beside its entry point (packages' "exports" may hide package.json).
function pkgVersion(name) {
  const main = require.resolve(name);
  const dir = main.slice(0, main.lastIndexOf('/node_modules/' + name + '/') + '/node_modules/'.length + name.length);
  return JSON.parse(fs.readFileSync(dir + '/package.json', 'utf8')).version;
}

// ---- TLS options, in Node's tls.connect vocabulary.

const exact = { '1.2': 'TLSv1.2', '1.3': 'TLSv1.3' };

// tlsOptions turns the config into tls.connect options; every stack below
// hands them (or the subset its driver takes) to its driver.
function tlsOptions(cfg) {
  const o = { rejectUnauthorized: cfg.verify !== 'none' };
  if (exact[cfg.tls]) o.minVersion = o.maxVersion = exact[cfg.tls];
  if (cfg.ca) o.ca = fs.readFileSync(cfg.ca);
  if (cfg.cert) o.cert = fs.readFileSync(cfg.cert);
  if (cfg.key) o.key = fs.readFileSync(cfg.key);
  if (cfg.group) o.ecdhCurve = cfg.group;
  const name = cfg.server_name || cfg.host;
  // SNI carries host names only (RFC 6066); an IP is verified against the
  // certificate's IP addresses, which Node does for the host it dials.
  if (!net.isIP(name)) o.servername = name;
  if (cfg.verify === 'ca') o.checkServerIdentity = () => undefined;
  else if (net.isIP(name) && name !== cfg.host) o.checkServerIdentity = (_, cert) => tls.checkServerIdentity(name, cert);
  return o;
}

// tlsLine is the protocol's `tls` line for a connected socket ('-' where
// Node does not say), or null for a plain one.
function tlsLine(sock) {
  if (!sock || typeof sock.getProtocol !== 'function') return null;
  const c = sock.getCipher() || {};
  const k = sock.getEphemeralKeyInfo() || {};
  return `tls ${sock.getProtocol() || '-'} ${c.standardName || c.name || '-'} ${k.name || '-'} ${sock.isSessionReused() ? 1 : 0}`;
}

// ---- Workloads: the SQL, key or path of one operation.

const rand = (n) => 1 + Math.floor(Math.random() * n);

// ycsbKey is YCSB's key of record n: "user" and the FNV-1a 64 hash of its
// 8 bytes, least significant first, made non-negative as Java's Math.abs.
function ycsbKey(n) {
  let h = 0xcbf29ce484222325n;
  let v = BigInt(n);
  for (let i = 0; i < 8; i++) {
    h = ((h ^ (v & 0xffn)) * 0x100000001b3n) & 0xffffffffffffffffn;
    v >>= 8n;
  }
  let s = BigInt.asIntN(64, h);
  if (s < 0n && s !== -(1n << 63n)) s = -s;
  return 'user' + s;
}

// sqlWork returns a function giving one operation's statement: text with the
// id inlined (simple) or a statement with one parameter (prepared).
function sqlWork(cfg, placeholder) {
  const tables = Number(cfg.tables) || 1;
  const rows = Number(cfg.rows) || 1;
  if (cfg.workload === 'ping') return () => ({ name: 'tlsbench_ping', text: 'SELECT 1', values: [] });
  return () => {
    const t = rand(tables);
    const id = rand(rows);
    if (cfg.query_mode === 'prepared') {
      return { name: 'tlsbench_sbtest' + t, text: `SELECT c FROM sbtest${t} WHERE id=${placeholder}`, values: [id], check: `sbtest${t} id ${id}` };
    }
    return { text: `SELECT c FROM sbtest${t} WHERE id=${id}`, check: `sbtest${t} id ${id}` };
  };
}

function mustHaveRow(rows, q) {
  if (q.check && rows.length !== 1) throw new NotPrepared(`no row ${q.check}: prepare the data first (tlsbench prepare)`);
}

class NotPrepared extends Error {}

// ---- Stacks. Each gives:
//   open(session) -> conn (cleans up after itself when it fails)
//   op(conn), close(conn), destroy(conn) (after a failed op), socket(conn)
//   openPool(n) -> pool, poolOp(pool), closePool(pool), poolSocket(pool)
// session is the last TLS session seen (resume=1) or undefined.

function pgStack(cfg) {
  const pg = require('pg');
  const ssl = cfg.tls === 'off' ? false : tlsOptions(cfg);
  const conf = (session) => ({
    host: cfg.host,
    port: Number(cfg.port),
    user: cfg.user,
    password: cfg.password,
    database: cfg.database,
    ssl: ssl && session ? { ...ssl, session } : ssl,
    connectionTimeoutMillis: cfg.timeout,
    query_timeout: cfg.timeout,
  });
  const work = sqlWork(cfg, '$1');
  const query = async (c) => {
    const q = work();
    const r = await c.query(cfg.query_mode === 'prepared' ? q : q.text);
    mustHaveRow(r.rows, q);
  };
  return {
    driver: 'pg/' + pkgVersion('pg'),
    async open(session) {
      const c = new pg.Client(conf(session));
      c.on('error', () => {}); // a failed query rejects too
      await c.connect();
      return c;
    },
    op: query,
    close: (c) => c.end(),
    destroy: (c) => c.connection.stream.destroy(),
    socket: (c) => c.connection.stream,
    async openPool(n) {
      const pool = new pg.Pool({ ...conf(), max: n, idleTimeoutMillis: 0 });
      pool.on('error', () => {}); // an idle client's error: its next query fails
      return fillPool(pool, n, () => pool.connect());
    },
    poolOp: query,
    closePool: (p) => p.end(),
    poolSocket: (p) => p.tlsSocket,
  };
}

// fillPool opens all n of a pool's connections before the warm-up (held at
// once, then given back), keeping the first one's socket for the tls line;
// a pool that cannot fill is ended.
async function fillPool(pool, n, acquire) {
  try {
    const cs = await Promise.all(Array.from({ length: n }, acquire));
    pool.tlsSocket = cs[0].connection.stream;
    cs.forEach((c) => c.release());
  } catch (e) {
    pool.end().catch(() => {});
    throw e;
  }
  return pool;
}

function mysql2Stack(cfg) {
  const mysql = require('mysql2/promise');
  let ssl;
  if (cfg.tls !== 'off') {
    const o = tlsOptions(cfg);
    ssl = { ca: o.ca, cert: o.cert, key: o.key, minVersion: o.minVersion, maxVersion: o.maxVersion, rejectUnauthorized: o.rejectUnauthorized, verifyIdentity: cfg.verify === 'full' };
  }
  const conf = {
    host: cfg.host,
    port: Number(cfg.port),
    user: cfg.user,
    password: cfg.password,
    database: cfg.database,
    connectTimeout: cfg.timeout,
  };
  const work = sqlWork(cfg, '?');
  const query = async (c) => {
    const q = work();
    const [rows] =
      cfg.query_mode === 'prepared' ? await c.execute({ sql: q.text, timeout: cfg.timeout }, q.values) : await c.query({ sql: q.text, timeout: cfg.timeout });
    mustHaveRow(rows, q);
  };
  return {
    driver: 'mysql2/' + pkgVersion('mysql2'),
    async open() {
      // mysql2 caches a TLS context and sessions per ssl object and always
      // resumes: resume=0 gives each connection a copy, so it makes its own
      // context per connection as tls.connect does for the other stacks.
      const c = await mysql.createConnection({ ...conf, ssl: ssl && cfg.resume !== '1' ? { ...ssl } : ssl });
      c.connection.on('error', () => {});
      return c;
    },
    op: query,
    close: (c) => c.end(),
    destroy: (c) => c.destroy(),
    socket: (c) => c.connection.stream,
    async openPool(n) {
      const pool = mysql.createPool({ ...conf, ssl, connectionLimit: n, maxIdle: n, idleTimeout: 2 ** 31 - 1 });
      pool.pool.on('error', () => {});
      return fillPool(pool, n, () => pool.getConnection());
    },
    poolOp: query,
    closePool: (p) => p.end(),
    poolSocket: (p) => p.tlsSocket,
  };
}

function ioredisStack(cfg) {
  const Redis = require('ioredis');
  const ssl = cfg.tls === 'off' ? undefined : tlsOptions(cfg);
  const rows = Number(cfg.rows) || 1;
  const conf = (session) => ({
    host: cfg.host,
    port: Number(cfg.port),
    username: cfg.user || undefined,
    password: cfg.password || undefined,
    db: Number(cfg.database) || 0,
    tls: ssl && session ? { ...ssl, session } : ssl,
    lazyConnect: false,
    connectTimeout: cfg.timeout,
    commandTimeout: cfg.timeout,
    // One try: a failed connect is an error to report, not to retry.
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  const op = async (r) => {
    if (cfg.workload === 'ping') {
      await r.ping();
      return;
    }
    const key = 'key:' + rand(rows);
    if ((await r.get(key)) === null) throw new NotPrepared(`no ${key}: prepare the data first (tlsbench prepare)`);
  };
  // ready resolves when the client has connected, logged in and passed its
  // ready check, or rejects with the error that ended it.
  const ready = (r) =>
    new Promise((resolve, reject) => {
      let last;
      const onError = (e) => (last = e);
      r.on('error', onError);
      r.once('ready', () => {
        r.off('end', onEnd);
        resolve(r);
      });
      const onEnd = () => reject(last || new Error('connection closed before it was ready'));
      r.once('end', onEnd);
    });
  return {
    driver: 'ioredis/' + pkgVersion('ioredis'),
    open: (session) => ready(new Redis(conf(session))),
    op,
    close: (r) => r.quit(),
    destroy: (r) => r.disconnect(),
    socket: (r) => r.stream,
    // ioredis has no pool: its way is one connection that carries every
    // command in flight (pipelined), so the pool is one client.
    openPool: () => ready(new Redis(conf())),
    poolOp: op,
    closePool: (r) => r.quit(),
    poolSocket: (r) => r.stream,
  };
}

function mongoStack(cfg) {
  const { MongoClient } = require('mongodb');
  const rows = Number(cfg.rows) || 1;
  const base = {
    authSource: cfg.database || 'admin',
    connectTimeoutMS: cfg.timeout,
    serverSelectionTimeoutMS: cfg.timeout,
    socketTimeoutMS: cfg.timeout,
  };
  if (cfg.user) base.auth = { username: cfg.user, password: cfg.password };
  if (cfg.tls !== 'off') {
    const o = tlsOptions(cfg);
    base.tls = true;
    // The driver passes secureContext, servername and checkServerIdentity
    // through to tls.connect; it has no option of its own for the version
    // bounds, which only a context made here can carry.
    base.secureContext = tls.createSecureContext({ ca: o.ca, cert: o.cert, key: o.key, minVersion: o.minVersion, maxVersion: o.maxVersion, ecdhCurve: o.ecdhCurve });
    for (const k of ['servername', 'checkServerIdentity']) if (o[k] !== undefined) base[k] = o[k];
    if (cfg.verify === 'none') base.tlsAllowInvalidCertificates = true;
    if (cfg.verify === 'ca') base.tlsAllowInvalidHostnames = true;
  }
  const url = `mongodb://${net.isIPv6(cfg.host) ? `[${cfg.host}]` : cfg.host}:${cfg.port}/`;
  const op = async (client) => {
    if (cfg.workload === 'ping') {
      await client.db('admin').command({ ping: 1 });
      return;
    }
    const id = ycsbKey(rand(rows) - 1);
    if ((await client.db('ycsb').collection('usertable').findOne({ _id: id })) === null) {
      throw new NotPrepared(`no document ${id} in ycsb.usertable: prepare the data first (tlsbench prepare)`);
    }
  };
  // socket finds a pooled connection's socket. The driver does not expose
  // it; these are its internals (pinned version), so '-' if they move.
  const socket = (client) => {
    try {
      for (const server of client.topology.s.servers.values()) for (const c of server.pool.connections) return c.socket;
    } catch {}
    return null;
  };
  return {
    driver: 'mongodb/' + pkgVersion('mongodb'),
    async open(session) {
      const client = new MongoClient(url, session ? { ...base, session } : base);
      try {
        await client.connect();
      } catch (e) {
        await client.close().catch(() => {});
        throw e;
      }
      return client;
    },
    op,
    close: (c) => c.close(),
    destroy: (c) => c.close(true).catch(() => {}),
    socket,
    async openPool(n) {
      const client = new MongoClient(url, { ...base, maxPoolSize: n, minPoolSize: n });
      // The driver fills the pool to minPoolSize in the background: wait
      // for its n connections to be ready before the warm-up.
      let ready = 0;
      const filled = new Promise((resolve) => client.on('connectionReady', () => ++ready >= n && resolve()));
      try {
        await client.connect();
        await Promise.race([filled, new Promise((_, reject) => setTimeout(() => reject(new Error(`the pool opened ${ready} of ${n} connections in ${cfg.timeout} ms`)), cfg.timeout).unref())]);
      } catch (e) {
        await client.close().catch(() => {});
        throw e;
      }
      return client;
    },
    poolOp: op,
    closePool: (c) => c.close(),
    poolSocket: socket,
  };
}

function httpsStack(cfg) {
  const mod = cfg.tls === 'off' ? require('http') : require('https');
  const ssl = cfg.tls === 'off' ? {} : tlsOptions(cfg);
  const path = cfg.path || '/';
  // get requests path and reads the whole body; it resolves with the socket.
  const get = (agent, session) =>
    new Promise((resolve, reject) => {
      const opts = { ...ssl, host: cfg.host, port: Number(cfg.port), path, agent, timeout: cfg.timeout };
      if (session) opts.session = session;
      const req = mod.get(opts, (res) => {
        const sock = res.socket; // a keep-alive agent takes it back at 'end'
        res.on('data', () => {});
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode < 200 || res.statusCode > 299) reject(new ServerError(`GET ${path}: status ${res.statusCode}`));
          else resolve(sock);
        });
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error(`GET ${path}: no answer in ${cfg.timeout} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', reject);
    });
  return {
    driver: 'node-https/' + process.versions.node,
    // One request: agent false, a new connection that the server closes
    // (Connection: close). More: a private keep-alive agent of one socket.
    async open(session) {
      if (cfg.per_conn === 1) return { agent: false, session };
      return { agent: new mod.Agent({ keepAlive: true, maxSockets: 1, maxCachedSessions: 0 }), session };
    },
    async op(c) {
      const sock = await get(c.agent, c.session);
      if (!c.sock) c.sock = sock;
    },
    async close(c) {
      if (c.agent) c.agent.destroy();
      else if (c.sock && !c.sock.destroyed) {
        // The server closes after Connection: close; one that does not is
        // closed here when the operation's time is up.
        await new Promise((resolve) => {
          const timer = setTimeout(() => c.sock.destroy(), cfg.timeout);
          c.sock.once('close', () => resolve(clearTimeout(timer)));
        });
      }
    },
    destroy: (c) => c.agent && c.agent.destroy(),
    socket: (c) => c.sock,
    async openPool(n) {
      const agent = new mod.Agent({ keepAlive: true, maxSockets: n, maxFreeSockets: n, maxCachedSessions: cfg.resume === '1' ? 100 : 0 });
      try {
        const socks = await Promise.all(Array.from({ length: n }, () => get(agent)));
        agent.tlsSocket = socks[0];
      } catch (e) {
        agent.destroy();
        throw e;
      }
      return agent;
    },
    poolOp: (agent) => get(agent),
    closePool: async (agent) => agent.destroy(),
    poolSocket: (agent) => agent.tlsSocket,
  };
}

class ServerError extends Error {}

const stacks = {
  'node-postgres': { engines: ['postgres'], make: pgStack, workloads: ['ping', 'point-select'] },
  mysql2: { engines: ['mysql'], make: mysql2Stack, workloads: ['ping', 'point-select'] },
  ioredis: { engines: ['redis'], make: ioredisStack, workloads: ['ping', 'get'] },
  'node-mongodb': { engines: ['mongodb'], make: mongoStack, workloads: ['ping', 'find-one-id'] },
  'node-https': { engines: ['https', 'http'], make: httpsStack, workloads: ['ping', 'request'] },
};

// refusal says what this stack cannot do of what cfg asks, or ''.
function refusal(cfg) {
  const s = stacks[cfg.stack];
  if (!s.engines.includes(cfg.engine)) return `${cfg.stack} serves ${s.engines.join(' and ')}, not ${cfg.engine}`;
  if (!s.workloads.includes(cfg.workload)) return `${cfg.stack} runs the workloads ${s.workloads.join(', ')}, not ${cfg.workload}`;
  if (cfg.tls === 'off') return '';
  if (cfg.group) {
    try {
      tls.createSecureContext({ ecdhCurve: cfg.group });
    } catch (e) {
      return `group ${cfg.group}: Node's OpenSSL ${process.versions.openssl} does not know it (${oneLine(e.message)})`;
    }
  }
  if (cfg.stack === 'node-mongodb' && cfg.resume === '1') {
    return "resume=1: the MongoDB driver keeps no TLS session cache, and a session given as its client option 'session' is taken for a ClientSession (every operation fails)";
  }
  if (cfg.stack === 'mysql2') {
    if (cfg.group) return `group ${cfg.group}: mysql2 makes its TLS context from ca, cert, key, ciphers and the version bounds only; it has no option for the key-exchange group`;
    const name = cfg.server_name || cfg.host;
    if (cfg.verify === 'full' && name !== cfg.host) return `server_name ${name}: mysql2 verifies the certificate against the host it connects to (${cfg.host}) and has no option for another name`;
  }
  return '';
}

// ---- Errors: the protocol's phase and kind for a driver's error.

const tlsCode = /^(ERR_SSL_|ERR_TLS_|ERR_OSSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH|HANDSHAKE_SSL_ERROR|INVALID_CA|INVALID_PURPOSE|CERT_UNTRUSTED)/;

// causes lists err and what it wraps: cause chains, and the MongoDB
// driver's server selection error, which holds each server's last error.
function causes(err) {
  const all = [];
  const seen = new Set();
  const walk = (e) => {
    if (!e || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    all.push(e);
    walk(e.cause);
    if (Array.isArray(e.errors)) e.errors.forEach(walk);
    if (e.reason && e.reason.servers) for (const d of e.reason.servers.values()) walk(d.error);
  };
  walk(err);
  return all;
}

// classify gives [phase, kind, message] for an error raised in step
// ('connect', 'query' or 'close').
function classify(err, step) {
  const es = causes(err);
  const at = { connect: 'other', query: 'query', close: 'close' }[step];
  const deepest = es[es.length - 1] || err;
  for (const e of es) {
    const code = typeof e.code === 'string' ? e.code : '';
    const msg = String(e.message || '');
    if (code === 'ECONNREFUSED') return ['tcp', 'refused', e];
    if (e.syscall === 'connect' && (code === 'ETIMEDOUT' || code === 'ECONNRESET')) return ['tcp', code === 'ETIMEDOUT' ? 'timeout' : 'reset', e];
    if (tlsCode.test(code) || e.library === 'SSL routines' || /does not support SSL|SSL connection|secure TLS connection/i.test(msg)) return ['tls-handshake', 'tls', e];
    // PostgreSQL's SQLSTATE class 28, MySQL's access denied, Redis's
    // WRONGPASS/NOAUTH, MongoDB's AuthenticationFailed.
    if (/^28/.test(code) || ['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR'].includes(code) || e.code === 18 || e.codeName === 'AuthenticationFailed' || /^(WRONGPASS|NOAUTH)/.test(msg) || /authentication failed/i.test(msg)) {
      return ['auth', 'auth', e];
    }
  }
  for (const e of es) {
    const code = typeof e.code === 'string' ? e.code : '';
    const msg = String(e.message || '');
    if (code === 'ETIMEDOUT' || /time(d)? ?out/i.test(msg) || e.name === 'MongoNetworkTimeoutError' || e.name === 'MongoServerSelectionError') return [at, 'timeout', e];
    if (['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes(code) || /terminated unexpectedly|connection (is )?closed|socket (hang up|closed)|Connection lost|ended by the other party/i.test(msg)) {
      return [at, 'reset', e];
    }
  }
  if (err instanceof NotPrepared) return [at, 'other', err];
  // An error the server answered: SQLSTATE, MySQL errno, a Redis reply
  // error, a MongoDB server error, an HTTP status.
  if (err instanceof ServerError || err.severity || err.sqlState || err.errno > 999 || err.name === 'ReplyError' || err.name === 'MongoServerError') {
    return [step === 'connect' ? 'auth' : at, 'server', err];
  }
  return [at, 'other', deepest];
}

// ---- Runs.

// session is the last TLS session a connection got (resume=1), offered by
// the next connection, in this run or the next, as an application would.
let session;

async function run(stack, cfg, args) {
  const [id, experiment, ...nums] = args;
  const [c, perConn, maxOps, durMs, warmMs] = nums.map(Number);
  if (!['connect', 'pool'].includes(experiment)) fatal(`run ${id}: unknown experiment "${experiment}": want connect or pool`);
  if (nums.length !== 5 || ![c, perConn, maxOps, durMs, warmMs].every((n) => Number.isInteger(n) && n >= 0) || c < 1 || perConn < 1) {
    fatal(`run ${id}: want "run <id> <experiment> <concurrency>=1.. <per_conn>=1.. <max_ops> <duration_ms> <warmup_ms>", got "${args.join(' ')}"`);
  }
  if (maxOps === 0 && durMs === 0) fatal(`run ${id}: max_ops and duration_ms are both 0: the run would never end`);
  cfg.per_conn = perConn;

  const state = { started: 0, ops: 0, errs: 0, tls: null, tlsShown: false };
  let stopAt = Infinity;
  const canStart = () => (maxOps === 0 || state.started < maxOps) && now() < stopAt;
  const report = (w, t0, err, step) => {
    const t1 = now();
    if (!err) {
      state.ops++;
      emit(`op ${w} ${t0} ${t1}`);
      if (!state.tlsShown && state.tls) {
        state.tlsShown = true;
        emit(state.tls);
      }
      return;
    }
    state.errs++;
    const [phase, kind, e] = classify(err, step);
    emit(`err ${w} ${t0} ${t1} ${phase} ${kind} ${oneLine((e && e.message) || err.message || err)}`);
  };
  const tlsOn = cfg.tls !== 'off';
  const useSession = tlsOn && cfg.resume === '1';
  // Each worker runs warmOp, unreported, for warmMs; then the run says
  // warm, its clock starts, and each worker runs measured.
  const phases = async (warmOp, measured) => {
    const warmEnd = now() + BigInt(warmMs) * 1000000n;
    const warm = { ops: 0, errs: 0 }; // said on the warm line
    const warmUp = async (w) => {
      while (now() < warmEnd) {
        warm.ops++;
        try {
          await warmOp(w);
        } catch {
          warm.errs++;
        }
      }
    };
    await Promise.all(Array.from({ length: c }, (_, w) => warmUp(w)));
    emit(`warm ${id} ${warm.ops} ${warm.errs}`, true);
    if (durMs > 0) stopAt = now() + BigInt(durMs) * 1000000n;
    await Promise.all(Array.from({ length: c }, (_, w) => measured(w)));
  };

  if (experiment === 'connect') {
    // One connection's life: open, perConn operations, close; null, or
    // [error, step] where it failed.
    const connectOnce = async () => {
      let step = 'connect';
      let conn = null;
      try {
        conn = await stack.open(session);
        step = 'query';
        for (let i = 0; i < perConn; i++) await stack.op(conn);
        if (tlsOn && !state.tls) state.tls = tlsLine(stack.socket(conn)) || 'tls - - - -';
        if (useSession) {
          const sock = stack.socket(conn);
          session = (sock && sock.getSession && sock.getSession()) || session;
        }
        step = 'close';
        const closing = conn;
        conn = null;
        await stack.close(closing);
        return null;
      } catch (e) {
        if (conn) {
          try {
            await stack.destroy(conn);
          } catch {}
        }
        return [e, step];
      }
    };
    const warmOnce = async () => {
      const failed = await connectOnce();
      if (failed) throw failed[0];
    };
    await phases(warmOnce, async (w) => {
      while (canStart()) {
        state.started++;
        const t0 = now();
        const failed = await connectOnce();
        report(w, t0, ...(failed || [null]));
      }
    });
  } else {
    let pool;
    const t0 = now();
    try {
      pool = await stack.openPool(c);
    } catch (e) {
      // A pool that cannot open is the run's one failed operation.
      emit(`warm ${id}`, true);
      report(0, t0, e, 'connect');
      emit(`done ${id} ${state.ops + state.errs} ${state.errs}`, true);
      return;
    }
    if (tlsOn) state.tls = tlsLine(stack.poolSocket(pool)) || 'tls - - - -';
    await phases(() => stack.poolOp(pool), async (w) => {
      while (canStart()) {
        state.started++;
        const t = now();
        try {
          await stack.poolOp(pool);
          report(w, t, null);
        } catch (e) {
          report(w, t, e, 'query');
        }
      }
    });
    try {
      await stack.closePool(pool);
    } catch {}
  }
  emit(`done ${id} ${state.ops + state.errs} ${state.errs}`, true);
}

// ---- Main: config, hello or refuse, then commands until quit or EOF.

function main() {
  const path = process.env.TLSBENCH_CONFIG;
  if (!path) fatal('TLSBENCH_CONFIG is not set: tlsbench starts this program with the path of its config file there');
  let cfg;
  try {
    cfg = readConfig(path);
  } catch (e) {
    fatal(`reading the config file: ${e.message}`);
  }
  secret = cfg.password || '';
  if (cfg.protocol !== '1') fatal(`config protocol=${cfg.protocol || ''}: this program speaks protocol 1`);
  if (!stacks[cfg.stack]) fatal(`config stack=${cfg.stack || ''}: this program runs ${Object.keys(stacks).join(', ')}`);
  if (!['off', '1.2', '1.3', 'auto'].includes(cfg.tls)) fatal(`config tls=${cfg.tls || ''}: want off, 1.2, 1.3 or auto`);
  if (cfg.tls !== 'off' && !['full', 'ca', 'none'].includes(cfg.verify)) fatal(`config verify=${cfg.verify || ''}: want full, ca or none`);
  cfg.timeout = Number(cfg.timeout_ms) || 10000;

  const why = refusal(cfg);
  if (why) {
    emit('refuse ' + oneLine(why), true);
    process.exit(0);
  }
  let stack;
  try {
    stack = stacks[cfg.stack].make(cfg);
  } catch (e) {
    fatal(`${cfg.stack}: ${e.code === 'MODULE_NOT_FOUND' ? `${e.message.split('\n')[0]}: install it with bash scripts/install-clients.sh (NODE_PATH=${process.env.NODE_PATH || ''})` : e.message}`);
  }
  const model = cfg.stack === 'ioredis' ? 'event-loop-pipelined' : 'event-loop';
  emit(`hello protocol=1 stack=${cfg.stack} driver=${stack.driver} tls=OpenSSL/${process.versions.openssl} runtime=Node.js/${process.versions.node} model=${model}`, true);

  const lines = [];
  let wake = null;
  let eof = false;
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on('line', (l) => {
    lines.push(l.trim());
    if (wake) wake();
  });
  // End of input is quit once the commands before it have run: a run is
  // bounded anyway, and tlsbench kills a program that overruns.
  rl.on('close', () => {
    eof = true;
    if (wake) wake();
  });
  const next = async () => {
    while (!lines.length && !eof) await new Promise((resolve) => (wake = resolve));
    wake = null;
    return lines.length ? lines.shift() : null;
  };
  (async () => {
    for (;;) {
      const line = await next();
      if (line === null || line === 'quit') break;
      if (line === '') continue;
      const [cmd, ...args] = line.split(/\s+/);
      if (cmd !== 'run') fatal(`unknown command "${cmd}": want run or quit`);
      await run(stack, cfg, args);
    }
    flushOut();
    process.exit(0);
  })().catch((e) => fatal(e && e.stack ? e.stack : e));
}

process.on('uncaughtException', (e) => fatal(`uncaught: ${(e && e.message) || e}`));
// A driver's stray rejection (a close racing an error) is not the run's end.
process.on('unhandledRejection', (e) => process.stderr.write(`unhandled rejection: ${oneLine((e && e.message) || e)}\n`));
main();
