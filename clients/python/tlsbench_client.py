"""tlsbench's client program for the Python stacks (clients/PROTOCOL.md).

One program serves psycopg, mysqlclient, pymysql, redis-py, pymongo and
urllib3: it reads its configuration from the file TLSBENCH_CONFIG names,
says hello (or refuse), then runs the experiments that tlsbench asks for
on stdin (connect and pool; pymongo's new-client and reused-client too,
the MongoDB seed's loops), one thread per worker, and prints one line per
operation. Each driver is used as applications use it: its own connect,
its own TLS options, its own pool. The GIL is part of what these stacks
cost, and is in the CPU tlsbench meters.
"""

import ctypes
import importlib.metadata
import logging
import os
import platform
import random
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time

PROTOCOL = "1"
EXPERIMENTS = ("connect", "pool")
# The MongoDB seed's loops (mongodb-ssl-impact-test): a stack that has a
# client object which opens its own connections runs them.
SEED_EXPERIMENTS = ("new-client", "reused-client")


class Refuse(Exception):
    """The configuration asks for what the stack cannot do."""


class Fatal(Exception):
    """The program itself cannot go on."""


# ---------------------------------------------------------------- output


class Out:
    """Buffered, thread-safe standard output: one write per batch of lines,
    and at once for the lines tlsbench waits on."""

    def __init__(self):
        self.lock = threading.Lock()
        self.buf = []
        self.last = time.monotonic()

    def line(self, text, flush=False):
        with self.lock:
            self.buf.append(text + "\n")
            now = time.monotonic()
            if flush or len(self.buf) >= 128 or now - self.last >= 0.2:
                self._flush(now)

    def flush(self):
        with self.lock:
            self._flush(time.monotonic())

    def _flush(self, now):
        if self.buf:
            sys.stdout.write("".join(self.buf))
            self.buf = []
        sys.stdout.flush()
        self.last = now


OUT = Out()


# ---------------------------------------------------------------- config


def read_config(path):
    """PROTOCOL.md's key=value lines; unknown keys are kept and ignored."""
    cfg = {}
    with open(path, encoding="utf-8") as f:
        for raw in f.read().splitlines():
            if "=" in raw:
                k, v = raw.split("=", 1)
                cfg[k] = v
    if cfg.get("protocol") != PROTOCOL:
        raise Fatal("configuration protocol %r: this program speaks %s" % (cfg.get("protocol"), PROTOCOL))
    for k, default in (("tables", "0"), ("rows", "0"), ("timeout_ms", "10000"), ("port", "0")):
        try:
            cfg[k] = int(cfg.get(k) or default)
        except ValueError:
            raise Fatal("configuration %s=%r is not a number" % (k, cfg.get(k)))
    for k in ("stack", "engine", "host", "user", "password", "database", "tls", "ca", "verify",
              "server_name", "cert", "key", "group", "resume", "workload", "query_mode", "path"):
        cfg.setdefault(k, "")
    cfg["tls"] = cfg["tls"] or "off"
    cfg["experiments"] = [e for e in cfg.get("experiments", "").split(",") if e]
    cfg["verify"] = cfg["verify"] or "full"
    cfg["timeout"] = max(cfg["timeout_ms"], 1) / 1000.0
    return cfg


# ---------------------------------------------------------------- errors


def one_line(exc, password):
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if password:
        msg = msg.replace(password, "***")
    return msg[:400]


def causes(exc):
    """exc and the exceptions it was raised from."""
    seen = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


AUTH_WORDS = ("authentication failed", "access denied", "wrongpass", "invalid username-password",
              "noauth", "auth failed", "authentication required")
TLS_WORDS = ("ssl", "tls", "certificate", "handshake", "wrong version number")
RESET_WORDS = ("reset by peer", "closed the connection", "lost connection", "connection closed",
               "broken pipe", "unexpected eof", "eof detected", "server has gone away")


def classify(stack, exc, during):
    """PROTOCOL.md's phase and kind of an exception raised during connect,
    query or close."""
    chain = causes(exc)
    low = " ".join(str(e) for e in chain).lower()

    def at(phase_at_connect):
        return phase_at_connect if during == "connect" else during

    if stack.is_auth(exc) or any(w in low for w in AUTH_WORDS):
        return at("auth"), "auth"
    if any(isinstance(e, (ssl.SSLError, ssl.CertificateError)) for e in chain) or any(w in low for w in TLS_WORDS):
        return at("tls-handshake"), "tls"
    if stack.is_refused(exc) or any(isinstance(e, ConnectionRefusedError) for e in chain) or any(
            w in low for w in ("connection refused", "errno 111")):
        return at("tcp"), "refused"
    if any(isinstance(e, (TimeoutError, socket.timeout)) for e in chain) or "timed out" in low or "timeout expired" in low:
        return at("tcp" if "connect" in low else "auth"), "timeout"
    if any(isinstance(e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)) for e in chain) or any(
            w in low for w in RESET_WORDS):
        return at("auth"), "reset"
    if stack.is_server(exc):
        return at("auth"), "server"
    return at("other"), "other"


class OpError(Exception):
    """An operation's failure, classified."""

    def __init__(self, phase, kind, message):
        super().__init__(message)
        self.phase, self.kind, self.message = phase, kind, message


# ---------------------------------------------------------------- TLS


def openssl_name(text):
    """'OpenSSL 3.0.19 27 Jan 2026' as 'OpenSSL/3.0.19'."""
    f = text.split()
    return "/".join(f[:2]) if len(f) >= 2 else text.replace(" ", "_")


PY_TLS = openssl_name(ssl.OPENSSL_VERSION)
VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
# PROTOCOL.md's group names as OpenSSL's SSL_CTX_set1_groups (through
# SSLContext.set_ecdh_curve) knows them.
GROUPS = {"X25519": "X25519", "X448": "X448", "P-256": "prime256v1", "P-384": "secp384r1", "P-521": "secp521r1"}


class Negotiated:
    """The last TLS handshake a context of ours made: what Python's ssl
    says of it (it cannot say the group before 3.13)."""

    lock = threading.Lock()
    last = None

    @classmethod
    def socket_class(cls):
        class Observed(ssl.SSLSocket):
            def do_handshake(self, *args, **kwargs):
                super().do_handshake(*args, **kwargs)
                info = (self.version() or "-", (self.cipher() or ("-",))[0], "-",
                        "1" if self.session_reused else "0")
                with cls.lock:
                    cls.last = info

        return Observed

    @classmethod
    def get(cls):
        # One process runs one configuration: any handshake of it will do.
        with cls.lock:
            return cls.last


def py_context(cfg, purpose_client=True):
    """An SSLContext from the configuration: versions, CA, verify mode,
    client certificate and group, as an application sets them."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cfg["verify"] == "none":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = cfg["verify"] == "full"
        ctx.verify_mode = ssl.CERT_REQUIRED
        if cfg["ca"]:
            ctx.load_verify_locations(cafile=cfg["ca"])
        else:
            ctx.load_default_certs()
    set_versions(ctx, cfg)
    if cfg["cert"]:
        ctx.load_cert_chain(cfg["cert"], cfg["key"] or None)
    set_group(ctx, cfg)
    ctx.sslsocket_class = Negotiated.socket_class()
    return ctx


def set_versions(ctx, cfg):
    v = VERSIONS.get(cfg["tls"])
    if v is not None:
        ctx.minimum_version = ctx.maximum_version = v


def set_group(ctx, cfg):
    if cfg["group"]:
        # On OpenSSL 3, CPython 3.11's set_ecdh_curve is SSL_CTX_set1_groups
        # with one group: the only one offered.
        ctx.set_ecdh_curve(GROUPS[cfg["group"]])


def check_py_tls(cfg, name, resume=False, group=True, versions=("1.2", "1.3", "auto")):
    """Refuses what a stack on Python's ssl module cannot be told."""
    if cfg["tls"] == "off":
        return
    if cfg["tls"] not in versions:
        raise Refuse("%s cannot pin TLS %s: %s" % (name, cfg["tls"], "it sets only a minimum version"
                                                   if "1.3" in versions else "no TLS version option"))
    if cfg["group"]:
        if not group:
            raise Refuse("%s has no setting for the key-exchange group (%s)" % (name, cfg["group"]))
        if cfg["group"] not in GROUPS:
            raise Refuse("Python's ssl module knows no group %r: use one of %s" % (cfg["group"], ", ".join(GROUPS)))
    if cfg["resume"] == "1" and not resume:
        raise Refuse("%s has no API to resume TLS sessions across connections (Python's ssl resumes only a "
                     "session passed to wrap_socket, which the driver does not take)" % name)


def check_name_is_host(cfg, name):
    """Drivers that verify the certificate against the host they dial."""
    if cfg["tls"] != "off" and cfg["verify"] == "full" and cfg["server_name"] and cfg["server_name"] != cfg["host"]:
        raise Refuse("%s verifies the certificate against the host it connects to (%s), not server_name %s: "
                     "use verify=ca or connect by that name" % (name, cfg["host"], cfg["server_name"]))


def loaded_library(fragment, under=""):
    """The path of a shared library this process has loaded (from a
    directory whose path holds under)."""
    with open("/proc/self/maps") as f:
        for row in f:
            path = row.split()[-1]
            if fragment in os.path.basename(path) and under in os.path.dirname(path):
                return path
    raise Fatal("no %s%s is loaded" % (fragment, " from " + under if under else ""))


def version_of(dist):
    return importlib.metadata.version(dist)


# ---------------------------------------------------------------- workloads


def fnvhash64(val):
    """YCSB's Utils.fnvhash64 (Java longs): FNV-1a over the 8 bytes of
    val, least significant first, made non-negative by Math.abs."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= val & 0xFF
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        val >>= 8
    v = h - (1 << 64) if h >= 1 << 63 else h
    return -v if v < 0 and v != -(1 << 63) else v


def ycsb_key(n):
    return "user" + str(fnvhash64(n))


# ---------------------------------------------------------------- stacks


class Stack:
    """One driver: connect, one workload operation, close; and its pool."""

    name = ""
    engines = ()
    workloads = ()
    # seed_loops: connect() builds a client object that opens its own
    # connections (its monitor's and its pool's), as the seed's loops time.
    seed_loops = False

    def __init__(self, cfg):
        self.cfg = cfg
        if cfg["engine"] not in self.engines:
            raise Refuse("%s serves %s, not %s" % (self.name, " and ".join(self.engines), cfg["engine"] or "no engine"))
        if cfg["workload"] not in self.workloads:
            raise Refuse("%s runs the workloads %s, not %r" % (self.name, ", ".join(self.workloads), cfg["workload"]))
        if cfg["tls"] not in ("off", "1.2", "1.3", "auto"):
            raise Refuse("tls=%s: use off, 1.2, 1.3 or auto" % cfg["tls"])
        if cfg["verify"] not in ("full", "ca", "none"):
            raise Refuse("verify=%s: use full, ca or none" % cfg["verify"])
        if cfg["workload"] in ("point-select", "get", "find-one-id") and cfg["rows"] <= 0:
            raise Refuse("workload %s needs rows > 0" % cfg["workload"])
        if cfg["workload"] == "point-select" and cfg["tables"] <= 0:
            raise Refuse("workload point-select needs tables > 0")
        for e in cfg["experiments"]:
            if e in SEED_EXPERIMENTS and not self.seed_loops:
                raise Refuse("%s runs connect and pool, not %s: the new-client and reused-client loops are the "
                             "MongoDB seed's, which time a pymongo MongoClient" % (self.name, e))
            if e not in EXPERIMENTS + SEED_EXPERIMENTS:
                raise Refuse("this program runs the experiments %s, not %s" % (", ".join(EXPERIMENTS + SEED_EXPERIMENTS), e))

    # What hello says.
    def driver(self):
        return ""

    def tls_library(self):
        return PY_TLS

    # The connect experiment's parts; handle is the driver's connection.
    def connect(self):
        raise NotImplementedError

    def work(self, handle, rng):
        raise NotImplementedError

    def close(self, handle):
        handle.close()

    def tls_info(self, handle):
        """(version, cipher, group, resumed) of handle's connection, or None
        for a plain one."""
        return Negotiated.get()

    def open_pool(self, n):
        """The stack's pool of n connections, all open."""
        return WorkerPool(self, n)

    # Error kinds the driver's exceptions tell.
    def is_auth(self, exc):
        return False

    def is_refused(self, exc):
        return False

    def unconnected(self, exc):
        """Whether exc, raised by a lazy driver's first operation, is its
        connect failing."""
        return False

    def is_server(self, exc):
        return False

    def sql(self, rng):
        """A statement of the SQL workloads and its parameter."""
        if self.cfg["workload"] == "ping":
            return "SELECT 1", None
        t = rng.randint(1, self.cfg["tables"])
        return "SELECT c FROM sbtest%d WHERE id=%%s" % t, (rng.randint(1, self.cfg["rows"]),)


class WorkerPool:
    """A pool for drivers that have none (PyMySQL, mysqlclient): each worker
    keeps its own connection, all opened before the warm-up, as
    applications without a pool library hold one connection per thread."""

    def __init__(self, stack, n):
        self.stack = stack
        self.conns = []
        try:
            for _ in range(n):
                self.conns.append(stack.connect())
        except BaseException:
            self.close()
            raise

    def op(self, worker, rng):
        self.stack.work(self.conns[worker], rng)

    def tls_info(self, worker):
        return self.stack.tls_info(self.conns[worker])

    def close(self):
        for c in self.conns:
            try:
                self.stack.close(c)
            except Exception:
                pass
        self.conns = []


# psycopg ------------------------------------------------------------------


class Psycopg(Stack):
    """psycopg 3 (binary wheel: its own libpq and OpenSSL); libpq's own TLS
    parameters; psycopg_pool.ConnectionPool for pool. Connections are in
    autocommit, so that one statement is one round trip (a transaction
    would add a COMMIT)."""

    name = "psycopg"
    engines = ("postgres",)
    workloads = ("ping", "point-select")

    def __init__(self, cfg):
        super().__init__(cfg)
        import psycopg
        import psycopg.pq

        self.psycopg = psycopg
        if psycopg.pq.__impl__ != "binary":
            raise Refuse("psycopg runs its %s implementation, not the binary wheel's libpq" % psycopg.pq.__impl__)
        if cfg["group"]:
            raise Refuse("libpq has no setting for the client's key-exchange group (%s)" % cfg["group"])
        if cfg["resume"] == "1":
            raise Refuse("libpq never resumes TLS sessions (and PostgreSQL disables them)")
        if cfg["query_mode"] not in ("", "prepared", "simple"):
            raise Refuse("query_mode=%s: use prepared or simple" % cfg["query_mode"])
        self.libpq = ctypes.CDLL(loaded_library("libpq", "psycopg_binary"))
        self.libpq.PQsslAttribute.restype = ctypes.c_char_p
        self.libpq.PQsslAttribute.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        crypto = ctypes.CDLL(loaded_library("libcrypto", "psycopg_binary"))
        crypto.OpenSSL_version.restype = ctypes.c_char_p
        crypto.OpenSSL_version.argtypes = [ctypes.c_int]
        self.openssl = openssl_name(crypto.OpenSSL_version(0).decode())
        v = psycopg.pq.version()
        self.libpq_version = "%d.%d" % (v // 10000, v % 10000)
        self.params = self.conninfo()

    def conninfo(self):
        c = self.cfg
        p = dict(hostaddr=c["host"], host=c["server_name"] or c["host"], port=c["port"], user=c["user"],
                 password=c["password"], dbname=c["database"], autocommit=True,
                 # libpq takes whole seconds, at least 2.
                 connect_timeout=max(2, -(-c["timeout_ms"] // 1000)))
        if c["tls"] == "off":
            p["sslmode"] = "disable"
            return p
        p["sslmode"] = {"full": "verify-full", "ca": "verify-ca", "none": "require"}[c["verify"]]
        if c["verify"] != "none":
            p["sslrootcert"] = c["ca"] or "system"
        if c["tls"] in VERSIONS:
            p["ssl_min_protocol_version"] = p["ssl_max_protocol_version"] = "TLSv" + c["tls"]
        if c["cert"]:
            p["sslcert"], p["sslkey"] = c["cert"], c["key"]
        return p

    def driver(self):
        return "psycopg/%s+libpq/%s" % (version_of("psycopg"), self.libpq_version)

    def tls_library(self):
        return self.openssl

    def connect(self):
        return self.psycopg.connect(**self.params)

    def work(self, conn, rng):
        q, args = self.sql(rng)
        mode = self.cfg["query_mode"]
        if mode == "simple":
            self.psycopg.ClientCursor(conn).execute(q, args).fetchall()
        else:
            conn.execute(q, args, prepare=True if mode == "prepared" else None).fetchall()

    def tls_info(self, conn):
        ptr = conn.pgconn.pgconn_ptr
        if not conn.pgconn.ssl_in_use:
            return None

        def attr(name):
            v = self.libpq.PQsslAttribute(ptr, name)
            return v.decode() if v else "-"

        # libpq says no group and never resumes.
        return attr(b"protocol"), attr(b"cipher"), "-", "-"

    def open_pool(self, n):
        return PsycopgPool(self, n)

    def is_auth(self, exc):
        return (getattr(exc, "sqlstate", None) or "").startswith("28")

    def is_server(self, exc):
        return bool(getattr(exc, "sqlstate", None))


class LastError(logging.Handler):
    """The last connection error psycopg_pool logged: a pool that cannot
    fill says only that it timed out."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.message = None

    def emit(self, record):
        self.message = record.getMessage()


class PsycopgPool:
    def __init__(self, stack, n):
        from psycopg_pool import ConnectionPool, PoolTimeout

        self.stack = stack
        log = logging.getLogger("psycopg.pool")
        self.last = LastError()
        log.addHandler(self.last)
        kwargs = dict(stack.params)
        self.pool = ConnectionPool(kwargs=kwargs, min_size=n, max_size=n, open=False,
                                   timeout=stack.cfg["timeout"])
        try:
            self.pool.open(wait=True, timeout=stack.cfg["timeout"])
        except PoolTimeout as e:
            self.pool.close()
            log.removeHandler(self.last)
            if self.last.message:
                raise self.stack.psycopg.OperationalError(self.last.message) from e
            raise
        log.removeHandler(self.last)

    def op(self, worker, rng):
        with self.pool.connection() as conn:
            self.stack.work(conn, rng)

    def tls_info(self, worker):
        with self.pool.connection() as conn:
            return self.stack.tls_info(conn)

    def close(self):
        self.pool.close()


# MySQL -----------------------------------------------------------------------


class MySQL(Stack):
    engines = ("mysql",)
    workloads = ("ping", "point-select")

    def __init__(self, cfg):
        super().__init__(cfg)
        if cfg["query_mode"] == "prepared":
            raise Refuse("%s has no server-side prepared statements (it interpolates parameters into the "
                         "query text): use query_mode simple" % self.name)
        check_name_is_host(cfg, self.name)

    def work(self, conn, rng):
        q, args = self.sql(rng)
        cur = conn.cursor()
        try:
            cur.execute(q, args)
            cur.fetchall()
        finally:
            cur.close()

    def is_auth(self, exc):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return code in (1044, 1045, 1698)

    def is_server(self, exc):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return 1000 <= code < 2000

    def is_refused(self, exc):
        # CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR: libmariadb says (115),
        # its non-blocking connect's errno, where the port was closed.
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return code in (2002, 2003)


class PyMySQL(MySQL):
    """PyMySQL: pure Python over the ssl module, given our SSLContext. It
    has no pool: each pool worker keeps its own connection."""

    name = "pymysql"

    def __init__(self, cfg):
        super().__init__(cfg)
        check_py_tls(cfg, "PyMySQL")
        import pymysql

        self.pymysql = pymysql
        t = cfg["timeout"]
        self.params = dict(host=cfg["host"], port=cfg["port"], user=cfg["user"], password=cfg["password"],
                           database=cfg["database"] or None, connect_timeout=t, read_timeout=t, write_timeout=t,
                           # autocommit as the server has it: False would cost a SET round trip.
                           autocommit=None)
        if cfg["tls"] == "off":
            # PyMySQL's default is TLS when the server offers it.
            self.params["ssl_disabled"] = True
        else:
            self.params["ssl"] = py_context(cfg)

    def driver(self):
        return "PyMySQL/" + version_of("PyMySQL")

    def connect(self):
        return self.pymysql.connect(**self.params)


class MySQLClient(MySQL):
    """mysqlclient (MySQLdb) over Debian's libmariadb: the TLS settings go
    where libmariadb reads them, a [client] option file (tls-version,
    ssl-ca, ssl-verify-server-cert ...), as my.cnf would give them. It has
    no pool: each pool worker keeps its own connection."""

    name = "mysqlclient"
    # mariadb_get_infov's values (mariadb/mysql.h, enum mariadb_value).
    TLS_LIBRARY, TLS_VERSION = 22, 23

    def __init__(self, cfg):
        super().__init__(cfg)
        if cfg["tls"] != "off":
            if cfg["group"]:
                raise Refuse("libmariadb has no setting for the key-exchange group (%s)" % cfg["group"])
            if cfg["resume"] == "1":
                raise Refuse("libmariadb 3.3 keeps no TLS sessions to resume")
            if cfg["verify"] == "ca" and not cfg["ca"]:
                raise Refuse("libmariadb verifies the chain only against a given CA: give ca, or verify=full")
        import MySQLdb

        self.MySQLdb = MySQLdb
        self.lib = ctypes.CDLL(loaded_library("libmariadb"))
        self.lib.mysql_get_ssl_cipher.restype = ctypes.c_char_p
        self.lib.mysql_get_ssl_cipher.argtypes = [ctypes.c_void_p]
        self.lib.mariadb_get_infov.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        capsule = ctypes.pythonapi.PyCapsule_GetPointer
        capsule.restype, capsule.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        self.capsule = capsule
        t = max(1, -(-cfg["timeout_ms"] // 1000))  # whole seconds
        self.params = dict(host=cfg["host"], port=cfg["port"], user=cfg["user"], password=cfg["password"],
                           connect_timeout=t, read_timeout=t, write_timeout=t)
        if cfg["database"]:
            self.params["database"] = cfg["database"]
        self.dir = None
        if cfg["tls"] != "off":
            self.dir = tempfile.mkdtemp(prefix="tlsbench-mysqlclient-")
            path = os.path.join(self.dir, "my.cnf")
            rows = ["[client]", "ssl-enforce=1"]
            if cfg["tls"] in VERSIONS:
                rows.append("tls-version=TLSv" + cfg["tls"])
            if cfg["verify"] != "none" and cfg["ca"]:
                rows.append("ssl-ca=" + cfg["ca"])
            if cfg["verify"] == "full":
                rows.append("ssl-verify-server-cert=1")
            if cfg["cert"]:
                rows += ["ssl-cert=" + cfg["cert"], "ssl-key=" + cfg["key"]]
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(rows) + "\n")
            self.params.update(read_default_file=path, read_default_group="client")

    def info(self, mysql, what):
        out = ctypes.c_char_p()
        if self.lib.mariadb_get_infov(mysql, what, ctypes.byref(out)) != 0 or not out.value:
            return None
        return out.value.decode()

    def driver(self):
        return "mysqlclient/%s+libmariadb/%s" % (version_of("mysqlclient"), self.MySQLdb._mysql.get_client_info())

    def tls_library(self):
        return openssl_name(self.info(None, self.TLS_LIBRARY) or "-")

    def connect(self):
        return self.MySQLdb.connect(**self.params)

    def tls_info(self, conn):
        mysql = self.capsule(conn._get_native_connection(), b"_mysql.connection.native_connection")
        version = self.info(mysql, self.TLS_VERSION)
        if not version:
            return None
        cipher = self.lib.mysql_get_ssl_cipher(mysql)
        return version, cipher.decode() if cipher else "-", "-", "-"

    def cleanup(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


# redis-py ------------------------------------------------------------------


class RedisPy(Stack):
    """redis-py: its own SSL options (it makes a new SSLContext for every
    connection and has only a minimum TLS version); redis.Redis over its
    ConnectionPool for pool."""

    name = "redis-py"
    engines = ("redis",)
    workloads = ("ping", "get")

    def __init__(self, cfg):
        super().__init__(cfg)
        check_py_tls(cfg, "redis-py", group=False, versions=("1.3", "auto"))
        check_name_is_host(cfg, "redis-py")
        import redis

        self.redis = redis
        try:
            db = int(cfg["database"] or 0)
        except ValueError:
            raise Refuse("redis database %r is not a number" % cfg["database"])
        # No retries (redis-py's default retries a failed connect three
        # times with backoff): one operation is one connection.
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.params = dict(host=cfg["host"], port=cfg["port"], username=cfg["user"] or None,
                           password=cfg["password"] or None, db=db, socket_timeout=cfg["timeout"],
                           socket_connect_timeout=cfg["timeout"], retry=Retry(NoBackoff(), 0))
        if cfg["tls"] != "off":
            self.params.update(ssl=True, ssl_cert_reqs="none" if cfg["verify"] == "none" else "required",
                               ssl_check_hostname=cfg["verify"] == "full", ssl_ca_certs=cfg["ca"] or None,
                               ssl_certfile=cfg["cert"] or None, ssl_keyfile=cfg["key"] or None)
            if cfg["tls"] == "1.3":
                self.params["ssl_min_version"] = ssl.TLSVersion.TLSv1_3

    def driver(self):
        return "redis-py/" + version_of("redis")

    def connect(self):
        # One connection, made now: the client an application keeps for a
        # single connection.
        return self.redis.Redis(single_connection_client=True, **self.params)

    def work(self, r, rng):
        if self.cfg["workload"] == "ping":
            r.ping()
        else:
            r.get("key:%d" % rng.randint(1, self.cfg["rows"]))

    def tls_info(self, r):
        return sock_info(r.connection._sock)

    def open_pool(self, n):
        return RedisPool(self, n)

    def is_auth(self, exc):
        return isinstance(exc, self.redis.exceptions.AuthenticationError)

    def is_server(self, exc):
        return isinstance(exc, self.redis.exceptions.ResponseError)


def sock_info(sock):
    if not isinstance(sock, ssl.SSLSocket):
        return None
    return sock.version() or "-", (sock.cipher() or ("-",))[0], "-", "1" if sock.session_reused else "0"


class RedisPool:
    def __init__(self, stack, n):
        self.stack = stack
        self.client = stack.redis.Redis(max_connections=n, **stack.params)
        pool = self.client.connection_pool
        held = []
        try:
            for _ in range(n):
                held.append(pool.get_connection())
        finally:
            for c in held:
                pool.release(c)

    def op(self, worker, rng):
        self.stack.work(self.client, rng)

    def tls_info(self, worker):
        pool = self.client.connection_pool
        c = pool.get_connection()
        try:
            return sock_info(c._sock)
        finally:
            pool.release(c)

    def close(self):
        self.client.close()


# pymongo ---------------------------------------------------------------------


class PyMongo(Stack):
    """PyMongo: MongoClient's own TLS options; for connect and new-client, a
    new MongoClient per operation, as mongodb-ssl-impact-test's loop did
    (its constructor starts the monitor, which opens a connection; the first
    operation opens the pool's); for reused-client, one MongoClient's
    operations; for pool, one MongoClient with maxPoolSize=concurrency.
    PyMongo has no TLS version option: the versions and the group are set
    on each SSLContext it makes, before it connects."""

    name = "pymongo"
    engines = ("mongodb",)
    workloads = ("ping", "find-one-id", "find-one")
    seed_loops = True

    def __init__(self, cfg):
        super().__init__(cfg)
        check_py_tls(cfg, "PyMongo")
        check_name_is_host(cfg, "PyMongo")
        import pymongo
        import pymongo.errors

        self.pymongo = pymongo
        ms = cfg["timeout_ms"]
        # MongoClient's defaults, as the seed built it (the constructor
        # starts the monitor), bounded by the timeout; but no retried reads
        # (a read failed by the network would run again on a new
        # connection): one operation is one connection.
        self.params = dict(host=cfg["host"], port=cfg["port"], connectTimeoutMS=ms, socketTimeoutMS=ms,
                           serverSelectionTimeoutMS=ms, retryReads=False)
        if cfg["user"]:
            self.params.update(username=cfg["user"], password=cfg["password"],
                               authSource=cfg["database"] or "admin")
        self.dir = None
        if cfg["tls"] != "off":
            self.params.update(tls=True, tlsAllowInvalidCertificates=cfg["verify"] == "none",
                               tlsAllowInvalidHostnames=cfg["verify"] != "full")
            if cfg["ca"] and cfg["verify"] != "none":
                self.params["tlsCAFile"] = cfg["ca"]
            if cfg["cert"]:
                # tlsCertificateKeyFile is one PEM file: certificate and key.
                self.dir = tempfile.mkdtemp(prefix="tlsbench-pymongo-")
                path = os.path.join(self.dir, "client.pem")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    for part in (cfg["cert"], cfg["key"]):
                        if part:
                            with open(part, "rb") as src:
                                f.write(src.read().rstrip(b"\n") + b"\n")
                self.params["tlsCertificateKeyFile"] = path
            self.tune_contexts()

    def tune_contexts(self):
        """Sets the versions and the group on every SSLContext MongoClient
        makes, as it makes it: the constructor's monitor connects at once,
        so the context cannot be changed after."""
        import pymongo.client_options

        made, cfg = pymongo.client_options.get_ssl_context, self.cfg

        def get_ssl_context(*args, **kwargs):
            ctx = made(*args, **kwargs)
            set_versions(ctx, cfg)
            set_group(ctx, cfg)
            ctx.sslsocket_class = Negotiated.socket_class()
            return ctx

        pymongo.client_options.get_ssl_context = get_ssl_context

    def driver(self):
        return "pymongo/" + version_of("pymongo")

    def client(self, **extra):
        return self.pymongo.MongoClient(**self.params, **extra)

    def connect(self):
        return self.client()

    def work(self, c, rng):
        if self.cfg["workload"] == "ping":
            c.admin.command("ping")
        elif self.cfg["workload"] == "find-one":
            # The seed's find_one() with no filter; None is a collection
            # tlsbench did not prepare, not a figure.
            if c["ycsb"]["usertable"].find_one() is None:
                raise OpError("query", "server", "ycsb.usertable is empty: prepare it (--rows)")
        else:
            c["ycsb"]["usertable"].find_one({"_id": ycsb_key(rng.randint(0, self.cfg["rows"] - 1))})

    def open_pool(self, n):
        return MongoPool(self, n)

    def is_auth(self, exc):
        return isinstance(exc, self.pymongo.errors.OperationFailure) and exc.code in (18, 13)

    def unconnected(self, exc):
        # MongoClient's pool connects (and logs in) at its first operation.
        return self.is_auth(exc) or isinstance(exc, self.pymongo.errors.ConnectionFailure)

    def is_server(self, exc):
        return isinstance(exc, self.pymongo.errors.OperationFailure)

    def cleanup(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class MongoPool:
    def __init__(self, stack, n):
        from pymongo import monitoring

        self.stack = stack
        ready = threading.Semaphore(0)

        events = ("pool_created", "pool_ready", "pool_cleared", "pool_closed", "connection_created",
                  "connection_closed", "connection_check_out_started", "connection_check_out_failed",
                  "connection_checked_out", "connection_checked_in")
        methods = {e: lambda self, event: None for e in events}
        methods["connection_ready"] = lambda self, event: ready.release()
        Ready = type("Ready", (monitoring.ConnectionPoolListener,), methods)
        self.client = stack.client(maxPoolSize=n, minPoolSize=n, event_listeners=[Ready()])
        try:
            self.client.admin.command("ping")
            # minPoolSize fills the pool in the background: wait for it.
            deadline = time.monotonic() + max(stack.cfg["timeout"], 1.0)
            for _ in range(n):
                if not ready.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    raise OpError("other", "timeout", "pymongo opened fewer than %d pool connections within %.1fs"
                                  % (n, stack.cfg["timeout"]))
        except BaseException:
            self.client.close()
            raise

    def op(self, worker, rng):
        self.stack.work(self.client, rng)

    def tls_info(self, worker):
        return Negotiated.get()

    def close(self):
        self.client.close()


# urllib3 ---------------------------------------------------------------------


class Urllib3(Stack):
    """urllib3: one SSLContext (as PoolManager(ssl_context=...) takes it);
    for connect, a new HTTPSConnectionPool per operation, its one
    connection closed at the end; for pool, PoolManager(maxsize=n)."""

    name = "urllib3"
    engines = ("https", "http")
    workloads = ("request", "ping")

    def __init__(self, cfg):
        super().__init__(cfg)
        check_py_tls(cfg, "urllib3")
        import urllib3

        self.urllib3 = urllib3
        tls = cfg["tls"] != "off"
        self.scheme = "https" if tls else "http"
        self.url = "%s://%s:%d%s" % (self.scheme, cfg["host"], cfg["port"], cfg["path"] or "/")
        self.kw = dict(retries=False, timeout=urllib3.Timeout(connect=cfg["timeout"], read=cfg["timeout"]))
        if tls:
            self.kw.update(ssl_context=py_context(cfg),
                           cert_reqs="CERT_NONE" if cfg["verify"] == "none" else "CERT_REQUIRED",
                           server_hostname=cfg["server_name"] or cfg["host"])
            if cfg["verify"] == "ca":
                self.kw["assert_hostname"] = False

    def driver(self):
        return "urllib3/" + version_of("urllib3")

    def connect(self):
        cls = self.urllib3.HTTPSConnectionPool if self.scheme == "https" else self.urllib3.HTTPConnectionPool
        return cls(self.cfg["host"], self.cfg["port"], maxsize=1, **self.kw)

    def work(self, pool, rng):
        r = pool.request("GET", self.cfg["path"] or "/")
        if not 200 <= r.status < 300:
            raise HTTPStatus(r.status, r.reason)

    def open_pool(self, n):
        return Urllib3Pool(self, n)

    def unconnected(self, exc):
        # A connection pool connects at its first request.
        e = self.urllib3.exceptions
        return isinstance(exc, (e.NewConnectionError, e.ConnectTimeoutError, e.SSLError))

    def is_server(self, exc):
        return isinstance(exc, HTTPStatus)


class HTTPStatus(Exception):
    def __init__(self, status, reason):
        super().__init__("HTTP %d %s" % (status, reason or ""))


class Urllib3Pool:
    def __init__(self, stack, n):
        self.stack = stack
        self.pm = stack.urllib3.PoolManager(num_pools=1, maxsize=n, block=True, **stack.kw)
        # n requests held at once open n connections.
        held = []
        try:
            for _ in range(n):
                held.append(self.pm.request("GET", stack.url, preload_content=False))
        finally:
            for r in held:
                r.drain_conn()
                r.release_conn()

    def op(self, worker, rng):
        r = self.pm.request("GET", self.stack.url)
        if not 200 <= r.status < 300:
            raise HTTPStatus(r.status, r.reason)

    def tls_info(self, worker):
        return Negotiated.get()

    def close(self):
        self.pm.clear()


STACKS = {s.name: s for s in (Psycopg, PyMySQL, MySQLClient, RedisPy, PyMongo, Urllib3)}


# ---------------------------------------------------------------- runs


class Run:
    """One run: its budget of operations and time, and its once-only tls
    line."""

    def __init__(self, stack, rid, max_ops, duration_ms):
        self.stack, self.rid = stack, rid
        self.max_ops = max_ops
        self.deadline = None
        self.duration_ns = duration_ms * 1_000_000
        self.lock = threading.Lock()
        self.started = self.ops = self.errors = 0
        self.warm_ops = self.warm_errors = 0  # the warm-up's, said on its line
        self.checked = False  # the first success's TLS was looked at

    def warmed(self, ops, errors):
        """Adds a worker's warm-up operations and failures."""
        with self.lock:
            self.warm_ops += ops
            self.warm_errors += errors

    def start_clock(self):
        """Ends the warm-up: says so, then the measured part's clock runs."""
        OUT.line("warm %d %d %d" % (self.rid, self.warm_ops, self.warm_errors), flush=True)
        self.deadline = time.monotonic_ns() + self.duration_ns if self.duration_ns > 0 else None

    def take(self):
        """Whether another operation may start."""
        with self.lock:
            if self.max_ops and self.started >= self.max_ops:
                return False
            if self.deadline is not None and time.monotonic_ns() >= self.deadline:
                return False
            self.started += 1
            return True

    def want_tls(self):
        return not self.checked

    def said_tls(self, info):
        """Prints the tls line once; a plain connection that is not plain, or
        a TLS one that is not, fails the operation."""
        tls = self.stack.cfg["tls"] != "off"
        if tls and info is None:
            raise OpError("tls-handshake", "other", "asked for TLS %s, but the connection is plain" % self.stack.cfg["tls"])
        if not tls and info is not None:
            raise OpError("tls-handshake", "other", "asked for plain, but the connection negotiated %s" % info[0])
        with self.lock:
            if self.checked:
                return
            self.checked = True
        if info is not None:
            OUT.line("tls %s %s %s %s" % tuple(x.replace(" ", "_") for x in info))

    def report(self, worker, start, end, err=None, built=None):
        """Prints an operation's line: op, err, or seedop for a new client
        built at built."""
        with self.lock:
            self.ops += 1
            if err is not None:
                self.errors += 1
        if err is not None:
            OUT.line("err %d %d %d %s %s %s" % (worker, start, end, err.phase, err.kind, err.message))
        elif built is not None:
            OUT.line("seedop %d %d %d %d" % (worker, start, built, end))
        else:
            OUT.line("op %d %d %d" % (worker, start, end))


def failure(stack, exc, during):
    if isinstance(exc, OpError):
        return exc
    phase, kind = classify(stack, exc, during)
    return OpError(phase, kind, one_line(exc, stack.cfg["password"]))


def connect_op(stack, run, per_conn, rng):
    """One connect operation: open, per_conn operations, close; run is None
    in the warm-up (no tls line)."""
    h = open_handle(stack)
    first_ops(stack, run, h, per_conn, rng)
    close_handle(stack, h)


def new_client_op(stack, run, rng):
    """One iteration of the seed's new-client loop: a new client, its first
    operation, then a close that is not timed. It returns when the client
    was built and when its first operation ended."""
    h = open_handle(stack)
    built = time.monotonic_ns()
    first_ops(stack, run, h, 1, rng)
    end = time.monotonic_ns()
    close_handle(stack, h)
    return built, end


def open_handle(stack):
    try:
        return stack.connect()
    except Exception as e:
        raise failure(stack, e, "connect")


def first_ops(stack, run, h, n, rng):
    """A new handle's first n operations (their failure a connect failure
    when the driver connects lazily) and, once per run, its tls line; a
    failure closes h."""
    try:
        done = 0
        try:
            for done in range(n):
                stack.work(h, rng)
        except Exception as e:
            raise failure(stack, e, "connect" if done == 0 and stack.unconnected(e) else "query")
        if run is not None and run.want_tls():
            try:
                info = stack.tls_info(h)
            except Exception as e:
                raise failure(stack, e, "other")
            run.said_tls(info)
    except OpError:
        try:
            stack.close(h)
        except Exception:
            pass
        raise


def close_handle(stack, h):
    try:
        stack.close(h)
    except Exception as e:
        raise failure(stack, e, "close")


class Reused:
    """A worker's client in the seed's reused-client loop: built, and its
    first operation run, untimed, so that what follows reuses its
    connection; dropped after a failed operation, and built anew before the
    next."""

    def __init__(self, stack, run, rng):
        self.stack, self.run, self.rng = stack, run, rng
        self.h = None

    def open(self):
        if self.h is None:
            h = open_handle(self.stack)
            first_ops(self.stack, self.run, h, 1, self.rng)
            self.h = h

    def op(self):
        try:
            self.stack.work(self.h, self.rng)
        except Exception as e:
            self.drop()
            raise failure(self.stack, e, "query")

    def drop(self):
        if self.h is not None:
            try:
                self.stack.close(self.h)
            except Exception:
                pass
            self.h = None


def run_workers(n, body):
    threads = [threading.Thread(target=body, args=(w,), daemon=True) for w in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def warm_up(run, warmup_ms, op):
    """Runs op, unreported, until warmup_ms have passed; run counts them."""
    warm_end = time.monotonic_ns() + warmup_ms * 1_000_000
    ops = errors = 0
    while time.monotonic_ns() < warm_end:
        ops += 1
        try:
            op()
        except Exception:
            errors += 1
    run.warmed(ops, errors)


def do_run(stack, rid, exp, conc, per_conn, max_ops, duration_ms, warmup_ms):
    run = Run(stack, rid, max_ops, duration_ms)
    barrier = threading.Barrier(conc, action=run.start_clock)

    def rng_of(w):
        return random.Random(rid * 1_000_003 + w)

    if exp == "connect":

        def body(w):
            rng = rng_of(w)
            warm_up(run, warmup_ms, lambda: connect_op(stack, None, per_conn, rng))
            barrier.wait()
            while run.take():
                start = time.monotonic_ns()
                try:
                    connect_op(stack, run, per_conn, rng)
                    run.report(w, start, time.monotonic_ns())
                except OpError as e:
                    run.report(w, start, time.monotonic_ns(), e)

        run_workers(conc, body)
    elif exp == "new-client":

        def body(w):
            rng = rng_of(w)
            warm_up(run, warmup_ms, lambda: new_client_op(stack, None, rng))
            barrier.wait()
            while run.take():
                start = time.monotonic_ns()
                try:
                    built, end = new_client_op(stack, run, rng)
                    run.report(w, start, end, built=built)
                except OpError as e:
                    run.report(w, start, time.monotonic_ns(), e)

        run_workers(conc, body)
    elif exp == "reused-client":

        def body(w):
            c = Reused(stack, run, rng_of(w))
            try:
                try:
                    c.open()  # failed, it is built again after warm
                except OpError:
                    pass

                def warm_op():
                    c.open()
                    c.op()

                warm_up(run, warmup_ms, warm_op)
                barrier.wait()
                while run.take():
                    start = time.monotonic_ns()
                    try:
                        if c.h is None:
                            # A new client's failure is an operation's; its
                            # success is not timed.
                            c.open()
                            start = time.monotonic_ns()
                        c.op()
                        run.report(w, start, time.monotonic_ns())
                    except OpError as e:
                        run.report(w, start, time.monotonic_ns(), e)
            finally:
                c.drop()

        run_workers(conc, body)
    else:
        start = time.monotonic_ns()
        try:
            pool = stack.open_pool(conc)
        except Fatal:
            raise
        except Exception as e:
            # A pool that cannot open is one failed operation: the run's
            # reason, with the driver's words.
            run.start_clock()
            run.report(0, start, time.monotonic_ns(), failure(stack, e, "connect"))
            pool = None
        if pool is not None:
            try:

                def body(w):
                    rng = rng_of(w)
                    warm_up(run, warmup_ms, lambda: pool.op(w, rng))
                    barrier.wait()
                    while run.take():
                        start = time.monotonic_ns()
                        try:
                            try:
                                pool.op(w, rng)
                            except Exception as e:
                                raise failure(stack, e, "query")
                            if run.want_tls():
                                try:
                                    info = pool.tls_info(w)
                                except Exception as e:
                                    raise failure(stack, e, "other")
                                run.said_tls(info)
                            run.report(w, start, time.monotonic_ns())
                        except OpError as e:
                            run.report(w, start, time.monotonic_ns(), e)

                run_workers(conc, body)
            finally:
                pool.close()
    OUT.line("done %d %d %d" % (rid, run.ops, run.errors), flush=True)


def parse_run(stack, words):
    if len(words) != 8 or words[2] not in EXPERIMENTS + SEED_EXPERIMENTS:
        raise Fatal("a run is: run <id> %s <concurrency> <per_conn> <max_ops> <duration_ms> <warmup_ms>, not %r"
                    % ("|".join(EXPERIMENTS + SEED_EXPERIMENTS), " ".join(words)))
    if words[2] in SEED_EXPERIMENTS and words[2] not in stack.cfg["experiments"]:
        raise Fatal("run %s: the configuration's experiments (%s) do not name %s"
                    % (words[1], ",".join(stack.cfg["experiments"]) or "none", words[2]))
    try:
        rid, conc, per_conn, max_ops, duration_ms, warmup_ms = (int(w) for w in words[1:2] + words[3:])
    except ValueError:
        raise Fatal("a run's numbers are integers: %r" % " ".join(words))
    if conc < 1 or per_conn < 0 or max_ops < 0 or duration_ms < 0 or warmup_ms < 0:
        raise Fatal("a run's concurrency is at least 1 and its counts and times are not negative: %r" % " ".join(words))
    if max_ops == 0 and duration_ms == 0:
        raise Fatal("a run needs max_ops or duration_ms: %r" % " ".join(words))
    return rid, words[2], conc, per_conn, max_ops, duration_ms, warmup_ms


def main():
    stack = None
    try:
        path = os.environ.get("TLSBENCH_CONFIG")
        if not path:
            raise Fatal("TLSBENCH_CONFIG names no configuration file")
        cfg = read_config(path)
        cls = STACKS.get(cfg["stack"])
        if cls is None:
            raise Refuse("this program runs the stacks %s, not %r" % (", ".join(STACKS), cfg["stack"]))
        try:
            stack = cls(cfg)
        except ImportError as e:
            raise Fatal("%s is not installed (%s): run bash scripts/install-clients.sh" % (cfg["stack"], e))
        OUT.line("hello protocol=%s stack=%s driver=%s tls=%s runtime=%s/%s model=threads" % (
            PROTOCOL, stack.name, stack.driver(), stack.tls_library(), platform.python_implementation(),
            platform.python_version()), flush=True)
        for raw in sys.stdin:
            words = raw.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            if words[0] != "run":
                raise Fatal("unknown command %r: run or quit" % words[0])
            do_run(stack, *parse_run(stack, words))
        return 0
    except Refuse as e:
        OUT.line("refuse " + " ".join(str(e).split()), flush=True)
        return 0
    except Fatal as e:
        OUT.line("fatal " + " ".join(str(e).split()), flush=True)
        return 1
    except Exception as e:
        OUT.line("fatal %s: %s" % (type(e).__name__, one_line(e, stack.cfg["password"] if stack else "")), flush=True)
        return 1
    finally:
        OUT.flush()
        if stack is not None and hasattr(stack, "cleanup"):
            stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())
