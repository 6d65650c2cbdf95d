// Client.java is tlsbench's program for the Java client stacks (pgjdbc,
// Connector/J, Jedis, the MongoDB sync driver, java.net.http.HttpClient):
// it speaks clients/PROTOCOL.md on stdin and stdout, and uses each driver as
// an application does (its own connect and TLS options, its usual pool),
// one platform thread per worker. Run as a source file:
//   java -cp "$TLSBENCH_CLIENTS/java/lib/*" Client.java
// with TLSBENCH_CONFIG naming the configuration file.

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLContextSpi;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocketFactory;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSessionContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import javax.net.ssl.X509TrustManager;

public class Client {
    static Out out;
    static Config cfg;

    public static void main(String[] args) throws Exception {
        // stdout is the protocol: whatever a library prints goes to stderr.
        out = new Out(new FileOutputStream(FileDescriptor.out));
        System.setOut(System.err);
        Stack stack;
        try {
            cfg = Config.read(System.getenv("TLSBENCH_CONFIG"));
            String why = cfg.refusal();
            if (why == null) {
                Tls.configure(cfg); // before the first TLS use: JSSE reads its properties once
                stack = Stack.of(cfg);
                why = stack.refusal();
            } else {
                stack = null;
            }
            if (why != null) {
                out.line("refuse " + why);
                out.flush();
                return;
            }
        } catch (Exception e) {
            out.line("fatal " + Errors.message(e));
            out.flush();
            System.exit(1);
            return;
        }
        out.line("hello protocol=1 stack=" + cfg.stack + " driver=" + stack.driver()
                + " tls=JSSE/" + System.getProperty("java.version")
                + " runtime=" + System.getProperty("java.runtime.name").split(" ")[0] + "/" + System.getProperty("java.runtime.version")
                + " model=threads" + stack.extra());
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String l; (l = in.readLine()) != null; ) {
            String[] f = l.trim().split(" ");
            if (f[0].equals("quit")) {
                break;
            }
            if (f[0].isEmpty()) {
                continue;
            }
            if (!f[0].equals("run") || f.length != 8) {
                out.line("fatal not a command: " + Errors.oneLine(l));
                out.flush();
                System.exit(1);
            }
            try {
                Run r = new Run(stack, Integer.parseInt(f[1]), f[2], Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                        Long.parseLong(f[5]), Long.parseLong(f[6]), Long.parseLong(f[7]));
                r.run();
            } catch (NumberFormatException e) {
                out.line("fatal run's fields are numbers: " + Errors.oneLine(l));
                out.flush();
                System.exit(1);
            } catch (IllegalArgumentException e) {
                out.line("fatal " + e.getMessage());
                out.flush();
                System.exit(1);
            }
        }
        out.flush();
        // Driver threads (Hikari's housekeeper, Mongo's monitors, HttpClient's
        // selectors) need not be waited for: the runs closed what they opened.
        System.exit(0);
    }

    /** Out writes the protocol's lines, buffered, from any thread. */
    static final class Out {
        private final OutputStream w;

        Out(OutputStream raw) {
            w = new BufferedOutputStream(raw, 1 << 16);
            // A run that hangs still shows what finished: flush a few times a second.
            Thread t = new Thread(() -> {
                for (;;) {
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        return;
                    }
                    flush();
                }
            }, "tlsbench-flush");
            t.setDaemon(true);
            t.start();
        }

        synchronized void line(String s) {
            try {
                w.write((s + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (java.io.IOException e) {
                System.exit(1); // tlsbench is gone
            }
        }

        synchronized void flush() {
            try {
                w.flush();
            } catch (java.io.IOException e) {
                System.exit(1);
            }
        }
    }

    /** Config is PROTOCOL.md's key=value file. */
    static final class Config {
        final Map<String, String> m = new HashMap<>();
        String stack, engine, host, user, password, database, tls, ca, verify, serverName, cert, key, group, workload, queryMode, path;
        int port, tables, rows, timeoutMs;
        boolean resume;
        Path dir; // the config file's directory: 0700, removed by tlsbench

        static Config read(String file) throws Exception {
            if (file == null || file.isEmpty()) {
                throw new IllegalArgumentException("TLSBENCH_CONFIG is not set: tlsbench starts this program with the path of its configuration");
            }
            Config c = new Config();
            for (String l : Files.readAllLines(Path.of(file), StandardCharsets.UTF_8)) {
                int i = l.indexOf('=');
                if (i > 0) {
                    c.m.put(l.substring(0, i), l.substring(i + 1));
                }
            }
            c.dir = Path.of(file).toAbsolutePath().getParent();
            c.stack = c.get("stack");
            c.engine = c.get("engine");
            c.host = c.get("host");
            c.port = c.num("port");
            c.user = c.get("user");
            c.password = c.get("password");
            c.database = c.get("database");
            c.tls = c.or("tls", "off");
            c.ca = c.get("ca");
            c.verify = c.or("verify", "full");
            c.serverName = c.or("server_name", c.host);
            c.cert = c.get("cert");
            c.key = c.get("key");
            c.group = c.get("group");
            c.resume = c.get("resume").equals("1");
            c.workload = c.get("workload");
            c.tables = Math.max(1, c.num("tables"));
            c.rows = Math.max(1, c.num("rows"));
            c.queryMode = c.or("query_mode", "prepared");
            c.path = c.or("path", "/");
            c.timeoutMs = c.num("timeout_ms") > 0 ? c.num("timeout_ms") : 10000;
            if (!c.or("protocol", "1").equals("1")) {
                throw new IllegalArgumentException("protocol " + c.get("protocol") + ": this program speaks 1");
            }
            return c;
        }

        String get(String k) {
            return m.getOrDefault(k, "");
        }

        /** or is k's value, or def where it is empty. */
        String or(String k, String def) {
            String v = get(k);
            return v.isEmpty() ? def : v;
        }

        int num(String k) {
            String v = get(k);
            try {
                return v.isEmpty() ? 0 : Integer.parseInt(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(k + "=" + v + " is not a number");
            }
        }

        boolean tlsOn() {
            return !tls.equals("off");
        }

        /** refusal says why this configuration cannot run here, or null. */
        String refusal() {
            if (!List.of("off", "1.2", "1.3", "auto").contains(tls)) {
                return "tls=" + tls + " is not off, 1.2, 1.3 or auto";
            }
            if (!List.of("full", "ca", "none").contains(verify)) {
                return "verify=" + verify + " is not full, ca or none";
            }
            if (cert.isEmpty() != key.isEmpty()) {
                return "a client certificate needs both cert and key";
            }
            if (!group.isEmpty() && Tls.jsseGroup(group) == null) {
                return "group " + group + ": JSSE " + System.getProperty("java.version") + " has no such key exchange group (it has X25519, X448, P-256, P-384, P-521, ffdhe2048..8192)";
            }
            return null;
        }
    }

    /**
     * Tls builds JSSE's side of a variant from the configuration's PEM files:
     * the trust and key managers, an SSLContext, and SSLParameters; and the
     * process-wide properties JSSE 17 has for what it has no API for.
     */
    static final class Tls {
        static TrustManager[] trust;
        static KeyManager[] keys;
        static SSLContext shared;
        /** seen is the version and cipher of the last handshake this program's trust manager checked. */
        static volatile String seen;

        static void configure(Config c) throws Exception {
            if (!c.tlsOn()) {
                return;
            }
            // JSSE 17 has no per-connection API for these (SSLParameters.setNamedGroups is
            // Java 20): one process serves one variant, so the process-wide properties are it.
            if (c.tls.equals("1.2")) {
                System.setProperty("jdk.tls.client.protocols", "TLSv1.2");
            } else if (c.tls.equals("1.3")) {
                System.setProperty("jdk.tls.client.protocols", "TLSv1.3");
            }
            if (!c.group.isEmpty()) {
                System.setProperty("jdk.tls.namedGroups", jsseGroup(c.group));
            }
            X509ExtendedTrustManager base = null;
            if (!c.verify.equals("none")) {
                TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                f.init(c.ca.isEmpty() ? null : trustStore(c.ca));
                for (TrustManager t : f.getTrustManagers()) {
                    if (t instanceof X509ExtendedTrustManager) {
                        base = (X509ExtendedTrustManager) t;
                    }
                }
            }
            trust = new TrustManager[] {new Checker(base, c.verify)};
            if (!c.cert.isEmpty()) {
                KeyManagerFactory f = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                char[] none = new char[0];
                f.init(keyStore(c, none), none);
                keys = f.getKeyManagers();
            }
            shared = fresh();
        }

        static SSLContext fresh() throws Exception {
            SSLContext x = SSLContext.getInstance("TLS");
            x.init(keys, trust, null);
            return x;
        }

        /**
         * context is the SSLContext the stacks that take one get: the shared
         * one when sessions may resume, else one whose every socket and
         * engine comes from a new context, so no session cache is shared.
         */
        static SSLContext context() {
            if (cfg.resume) {
                return shared;
            }
            return new SSLContext(new FreshSpi(), shared.getProvider(), shared.getProtocol()) {};
        }

        /** params names the server (SNI) and asks for its name to be checked for verify=full. */
        static SSLParameters params() {
            SSLParameters p = shared.getDefaultSSLParameters();
            if (!isIP(cfg.serverName)) {
                p.setServerNames(List.of(new SNIHostName(cfg.serverName)));
            }
            if (cfg.verify.equals("full")) {
                p.setEndpointIdentificationAlgorithm("HTTPS");
            }
            return p;
        }

        /** negotiated is the protocol's tls line's fields for a session. */
        static String negotiated(SSLSession s) {
            if (s == null) {
                return null;
            }
            return describe(s.getProtocol(), s.getCipherSuite());
        }

        static String describe(String version, String cipher) {
            // JSSE does not say which group it used; with one group offered it is that one.
            String g = !cfg.group.isEmpty() && (version.equals("TLSv1.3") || cipher.contains("_ECDHE_")) ? cfg.group : "-";
            return version + " " + cipher + " " + g + " " + (cfg.resume ? "-" : "0");
        }

        static boolean isIP(String h) {
            return h.matches("[0-9.]+") || h.contains(":");
        }

        static String jsseGroup(String g) {
            switch (g.toUpperCase()) {
                case "X25519": return "x25519";
                case "X448": return "x448";
                case "P-256": case "SECP256R1": case "PRIME256V1": case "CURVEP256": return "secp256r1";
                case "P-384": case "SECP384R1": case "CURVEP384": return "secp384r1";
                case "P-521": case "SECP521R1": case "CURVEP521": return "secp521r1";
                case "FFDHE2048": case "FFDHE3072": case "FFDHE4096": case "FFDHE6144": case "FFDHE8192": return g.toLowerCase();
                default: return null;
            }
        }

        static List<Certificate> certs(String pem) throws Exception {
            CertificateFactory f = CertificateFactory.getInstance("X.509");
            List<Certificate> l = new ArrayList<>(f.generateCertificates(new ByteArrayInputStream(Files.readAllBytes(Path.of(pem)))));
            if (l.isEmpty()) {
                throw new IllegalArgumentException(pem + " holds no PEM certificate");
            }
            return l;
        }

        static KeyStore trustStore(String pem) throws Exception {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            int i = 0;
            for (Certificate c : certs(pem)) {
                ks.setCertificateEntry("ca" + i++, c);
            }
            return ks;
        }

        /** pkcs8 reads a PKCS#8 PEM key (BEGIN PRIVATE KEY) as DER. */
        static byte[] pkcs8(String pem) throws Exception {
            String s = Files.readString(Path.of(pem), StandardCharsets.US_ASCII);
            Matcher m = Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----").matcher(s);
            if (!m.find()) {
                throw new IllegalArgumentException("key " + pem + " is not a PKCS#8 PEM key (BEGIN PRIVATE KEY): convert it with openssl pkcs8 -topk8 -nocrypt");
            }
            return Base64.getMimeDecoder().decode(m.group(1));
        }

        static PrivateKey privateKey(String pem) throws Exception {
            byte[] der = pkcs8(pem);
            for (String alg : new String[] {"RSA", "EC", "Ed25519", "RSASSA-PSS"}) {
                try {
                    return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
                } catch (Exception e) {
                    // try the next algorithm
                }
            }
            throw new IllegalArgumentException("key " + pem + ": not an RSA, EC or Ed25519 key");
        }

        static KeyStore keyStore(Config c, char[] pass) throws Exception {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("client", privateKey(c.key), pass, certs(c.cert).toArray(new Certificate[0]));
            return ks;
        }

        /** secretFile writes b into the config's 0700 directory, readable by this user only. */
        static Path secretFile(String name, byte[] b) throws Exception {
            Path p = cfg.dir.resolve(name);
            Files.deleteIfExists(p);
            Files.createFile(p, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.write(p, b);
            p.toFile().deleteOnExit();
            return p;
        }

        static Path storeFile(String name, KeyStore ks, char[] pass) throws Exception {
            java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
            ks.store(b, pass);
            return secretFile(name, b.toByteArray());
        }

        /**
         * Checker is the trust manager: the chain against the CA (and the
         * name, which JSSE checks when the connection asks for it) for
         * verify=full, the chain only for ca, nothing for none; it notes
         * what the handshake negotiated.
         */
        static final class Checker extends X509ExtendedTrustManager {
            final X509ExtendedTrustManager base;
            final String verify;

            Checker(X509ExtendedTrustManager base, String verify) {
                this.base = base;
                this.verify = verify;
            }

            void note(SSLSession hs) {
                if (hs != null) {
                    seen = describe(hs.getProtocol(), hs.getCipherSuite());
                }
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String auth, Socket s) throws CertificateException {
                if (s instanceof SSLSocket) {
                    note(((SSLSocket) s).getHandshakeSession());
                }
                if (verify.equals("full")) {
                    base.checkServerTrusted(chain, auth, s);
                } else if (verify.equals("ca")) {
                    base.checkServerTrusted(chain, auth);
                }
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String auth, SSLEngine e) throws CertificateException {
                if (e != null) {
                    note(e.getHandshakeSession());
                }
                if (verify.equals("full")) {
                    base.checkServerTrusted(chain, auth, e);
                } else if (verify.equals("ca")) {
                    base.checkServerTrusted(chain, auth);
                }
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String auth) throws CertificateException {
                if (!verify.equals("none")) {
                    base.checkServerTrusted(chain, auth);
                }
            }

            @Override
            public void checkClientTrusted(X509Certificate[] chain, String auth, Socket s) throws CertificateException {
                throw new CertificateException("a client does not check clients");
            }

            @Override
            public void checkClientTrusted(X509Certificate[] chain, String auth, SSLEngine e) throws CertificateException {
                throw new CertificateException("a client does not check clients");
            }

            @Override
            public void checkClientTrusted(X509Certificate[] chain, String auth) throws CertificateException {
                throw new CertificateException("a client does not check clients");
            }

            @Override
            public X509Certificate[] getAcceptedIssuers() {
                return base == null ? new X509Certificate[0] : base.getAcceptedIssuers();
            }
        }

        /** FreshSpi hands out sockets and engines of a new SSLContext each: no session is shared. */
        static final class FreshSpi extends SSLContextSpi {
            static SSLContext next() {
                try {
                    return fresh();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }

            @Override
            protected void engineInit(KeyManager[] km, TrustManager[] tm, SecureRandom r) {}

            @Override
            protected SSLSocketFactory engineGetSocketFactory() {
                return new FreshFactory();
            }

            @Override
            protected SSLServerSocketFactory engineGetServerSocketFactory() {
                throw new UnsupportedOperationException("a client has no server sockets");
            }

            @Override
            protected SSLEngine engineCreateSSLEngine() {
                return next().createSSLEngine();
            }

            @Override
            protected SSLEngine engineCreateSSLEngine(String host, int port) {
                return next().createSSLEngine(host, port);
            }

            @Override
            protected SSLSessionContext engineGetServerSessionContext() {
                return shared.getServerSessionContext();
            }

            @Override
            protected SSLSessionContext engineGetClientSessionContext() {
                return shared.getClientSessionContext();
            }

            @Override
            protected SSLParameters engineGetDefaultSSLParameters() {
                return shared.getDefaultSSLParameters();
            }

            @Override
            protected SSLParameters engineGetSupportedSSLParameters() {
                return shared.getSupportedSSLParameters();
            }
        }

        static final class FreshFactory extends SSLSocketFactory {
            @Override
            public String[] getDefaultCipherSuites() {
                return shared.getSocketFactory().getDefaultCipherSuites();
            }

            @Override
            public String[] getSupportedCipherSuites() {
                return shared.getSocketFactory().getSupportedCipherSuites();
            }

            @Override
            public Socket createSocket() throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket();
            }

            @Override
            public Socket createSocket(Socket s, String host, int port, boolean autoClose) throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket(s, host, port, autoClose);
            }

            @Override
            public Socket createSocket(String host, int port) throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket(host, port);
            }

            @Override
            public Socket createSocket(String host, int port, java.net.InetAddress la, int lp) throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket(host, port, la, lp);
            }

            @Override
            public Socket createSocket(java.net.InetAddress host, int port) throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket(host, port);
            }

            @Override
            public Socket createSocket(java.net.InetAddress a, int port, java.net.InetAddress la, int lp) throws java.io.IOException {
                return FreshSpi.next().getSocketFactory().createSocket(a, port, la, lp);
            }
        }
    }

    /** Session is one connection of a stack, opened by the driver's connect. */
    interface Session extends AutoCloseable {
        void op() throws Exception;

        /** lazy says the driver connects at the first operation (MongoDB's): its failures are the connect's. */
        default boolean lazy() {
            return false;
        }

        /** tls is the tls line's fields for this connection, or null where the stack does not say. */
        default String tls() {
            return Tls.seen;
        }
    }

    /** Pool is the stack's own pool, its connections opened. */
    interface Pool extends AutoCloseable {
        /** op takes a connection, runs one operation and gives the connection back. */
        void op() throws Exception;

        default String tls() {
            return Tls.seen;
        }
    }

    /** Stack is one driver: its connect and its pool. */
    abstract static class Stack {
        static Stack of(Config c) {
            Map<String, String> engines = Map.of("pgjdbc", "postgres", "connector-j", "mysql", "jedis", "redis",
                    "mongodb-java", "mongodb", "java-httpclient", "http");
            String e = engines.get(c.stack);
            if (e == null) {
                return new Unknown("stack " + c.stack + " is not a Java stack (pgjdbc, connector-j, jedis, mongodb-java, java-httpclient)");
            }
            String engine = c.engine.equals("https") ? "http" : c.engine;
            if (!engine.equals(e)) {
                return new Unknown(c.stack + " speaks " + e + ", not " + c.engine);
            }
            switch (c.stack) {
                case "pgjdbc": return new Pg();
                case "connector-j": return new My();
                case "jedis": return new Redis();
                case "mongodb-java": return new Mongo();
                default: return new Http();
            }
        }

        /** refusal says what this stack cannot set for the configuration, or null. */
        String refusal() {
            return null;
        }

        abstract String driver();

        /** extra is more hello fields (the pool's library). */
        String extra() {
            return "";
        }

        /** open connects, for a session of ops operations. */
        abstract Session open(int ops) throws Exception;

        abstract Pool pool(int n) throws Exception;

        /** version is the version of the jar a class was loaded from. */
        static String version(Class<?> c) {
            String p = c.getProtectionDomain().getCodeSource().getLocation().getPath();
            Matcher m = Pattern.compile("-([0-9][^/]*)\\.jar$").matcher(p);
            return m.find() ? m.group(1) : "unknown";
        }

        static int id(int max) {
            return 1 + ThreadLocalRandom.current().nextInt(max);
        }

        String workloadRefusal(String... ok) {
            for (String w : ok) {
                if (w.equals(cfg.workload)) {
                    return null;
                }
            }
            return "workload " + cfg.workload + " is not one of " + cfg.engine + "'s (" + String.join(", ", ok) + ")";
        }
    }

    static final class Unknown extends Stack {
        final String why;

        Unknown(String why) {
            this.why = why;
        }

        @Override
        String refusal() {
            return why;
        }

        @Override
        String driver() {
            return "-";
        }

        @Override
        Session open(int ops) {
            throw new UnsupportedOperationException(why);
        }

        @Override
        Pool pool(int n) {
            throw new UnsupportedOperationException(why);
        }
    }

    /** Jdbc is what pgjdbc and Connector/J share: the SQL workloads and HikariCP. */
    abstract static class Jdbc extends Stack {
        abstract String url();

        abstract Properties props() throws Exception;

        /** sessionTLS is what the connection's socket negotiated, or null. */
        abstract String sessionTLS(Connection c);

        @Override
        String refusal() {
            String w = workloadRefusal("ping", "point-select");
            if (w != null) {
                return w;
            }
            if (!cfg.queryMode.equals("prepared") && !cfg.queryMode.equals("simple")) {
                return "query_mode " + cfg.queryMode + " is not prepared or simple";
            }
            if (cfg.tlsOn() && cfg.resume) {
                return driver().split("/")[0] + " builds a new SSLContext for every connection, so JSSE never resumes a session across connections";
            }
            if (cfg.tlsOn() && cfg.verify.equals("full") && !cfg.serverName.equals(cfg.host)) {
                return driver().split("/")[0] + " checks the certificate against the host it connects to (" + cfg.host + "), not a separate server name (" + cfg.serverName + ")";
            }
            return null;
        }

        @Override
        String extra() {
            return " pool=HikariCP/" + version(com.zaxxer.hikari.HikariDataSource.class);
        }

        void query(Connection c) throws SQLException {
            boolean ping = cfg.workload.equals("ping");
            String sql = ping ? "SELECT 1" : "SELECT c FROM sbtest" + id(cfg.tables) + " WHERE id=";
            if (cfg.queryMode.equals("simple")) {
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(ping ? sql : sql + id(cfg.rows))) {
                    while (r.next()) {
                        r.getString(1);
                    }
                }
                return;
            }
            try (PreparedStatement s = c.prepareStatement(ping ? sql : sql + "?")) {
                if (!ping) {
                    s.setInt(1, id(cfg.rows));
                }
                try (ResultSet r = s.executeQuery()) {
                    while (r.next()) {
                        r.getString(1);
                    }
                }
            }
        }

        @Override
        Session open(int ops) throws Exception {
            Connection c = java.sql.DriverManager.getConnection(url(), props());
            return new Session() {
                @Override
                public void op() throws Exception {
                    query(c);
                }

                @Override
                public String tls() {
                    return sessionTLS(c);
                }

                @Override
                public void close() throws Exception {
                    c.close();
                }
            };
        }

        @Override
        Pool pool(int n) throws Exception {
            com.zaxxer.hikari.HikariConfig hc = new com.zaxxer.hikari.HikariConfig();
            hc.setJdbcUrl(url());
            hc.setDataSourceProperties(props());
            hc.setMaximumPoolSize(n);
            hc.setMinimumIdle(n);
            hc.setConnectionTimeout(Math.max(250, cfg.timeoutMs));
            hc.setInitializationFailTimeout(Math.max(1, cfg.timeoutMs));
            hc.setPoolName("tlsbench");
            com.zaxxer.hikari.HikariDataSource ds = new com.zaxxer.hikari.HikariDataSource(hc);
            try {
                // All n connections open before the warm-up: hold n at once.
                List<Connection> held = new ArrayList<>();
                try {
                    for (int i = 0; i < n; i++) {
                        held.add(ds.getConnection());
                    }
                } finally {
                    for (Connection c : held) {
                        c.close();
                    }
                }
            } catch (Exception e) {
                ds.close();
                throw e;
            }
            return new Pool() {
                volatile String tls;

                @Override
                public void op() throws Exception {
                    try (Connection c = ds.getConnection()) {
                        query(c);
                        if (tls == null && cfg.tlsOn()) {
                            tls = sessionTLS(c);
                        }
                    }
                }

                @Override
                public String tls() {
                    return tls;
                }

                @Override
                public void close() {
                    ds.close();
                }
            };
        }

        static String secs(int ms) {
            return String.valueOf((ms + 999) / 1000);
        }
    }

    /** Pg is pgjdbc, with its own TLS options (sslmode, sslrootcert, sslcert, sslkey). */
    static final class Pg extends Jdbc {
        Properties props;

        @Override
        String driver() {
            return "pgjdbc/" + version(org.postgresql.Driver.class);
        }

        @Override
        String url() {
            return "jdbc:postgresql://" + (cfg.host.contains(":") ? "[" + cfg.host + "]" : cfg.host) + ":" + cfg.port + "/" + cfg.database;
        }

        @Override
        String refusal() {
            String r = super.refusal();
            if (r == null && cfg.tlsOn() && cfg.ca.isEmpty() && !cfg.cert.isEmpty() && !cfg.verify.equals("none")) {
                r = "pgjdbc takes a client certificate only with its own factory, which trusts a CA file (sslrootcert), not the system's: give ca";
            }
            return r;
        }

        @Override
        synchronized Properties props() throws Exception {
            if (props != null) {
                return props;
            }
            Properties p = new Properties();
            p.setProperty("user", cfg.user);
            p.setProperty("password", cfg.password);
            p.setProperty("connectTimeout", secs(cfg.timeoutMs));
            p.setProperty("socketTimeout", secs(cfg.timeoutMs));
            p.setProperty("loginTimeout", secs(cfg.timeoutMs));
            p.setProperty("ApplicationName", "tlsbench-pgjdbc");
            if (cfg.queryMode.equals("simple")) {
                p.setProperty("preferQueryMode", "simple");
            } else {
                p.setProperty("prepareThreshold", "1"); // a named server-side statement from the first execution
            }
            if (!cfg.tlsOn()) {
                p.setProperty("sslmode", "disable");
            } else {
                p.setProperty("sslmode", Map.of("full", "verify-full", "ca", "verify-ca", "none", "require").get(cfg.verify));
                if (!cfg.verify.equals("none") && cfg.ca.isEmpty()) {
                    // The JVM's trust store: pgjdbc's own factory reads only files.
                    p.setProperty("sslfactory", "org.postgresql.ssl.DefaultJavaSSLFactory");
                } else if (!cfg.ca.isEmpty()) {
                    p.setProperty("sslrootcert", cfg.ca);
                }
                if (!cfg.cert.isEmpty()) {
                    p.setProperty("sslcert", cfg.cert);
                    // pgjdbc reads a key as PKCS#8 DER (or PKCS#12), not PEM.
                    p.setProperty("sslkey", Tls.secretFile("pgjdbc-client.pk8", Tls.pkcs8(cfg.key)).toString());
                }
            }
            props = p;
            return p;
        }

        @Override
        String sessionTLS(Connection c) {
            // pgjdbc has no API for its socket: read it where it keeps it.
            try {
                Object qe = c.unwrap(org.postgresql.core.BaseConnection.class).getQueryExecutor();
                java.lang.reflect.Field f = org.postgresql.core.QueryExecutorBase.class.getDeclaredField("pgStream");
                f.setAccessible(true);
                Socket s = ((org.postgresql.core.PGStream) f.get(qe)).getSocket();
                return s instanceof SSLSocket ? Tls.negotiated(((SSLSocket) s).getSession()) : null;
            } catch (Exception e) {
                return null;
            }
        }
    }

    /** My is Connector/J (MySQL and MariaDB), with its own TLS options (sslMode, tlsVersions, key stores). */
    static final class My extends Jdbc {
        Properties props;

        @Override
        String driver() {
            return "connector-j/" + version(com.mysql.cj.jdbc.Driver.class);
        }

        @Override
        String url() {
            return "jdbc:mysql://" + (cfg.host.contains(":") ? "[" + cfg.host + "]" : cfg.host) + ":" + cfg.port + "/" + cfg.database;
        }

        @Override
        synchronized Properties props() throws Exception {
            if (props != null) {
                return props;
            }
            Properties p = new Properties();
            p.setProperty("user", cfg.user);
            p.setProperty("password", cfg.password);
            p.setProperty("connectTimeout", String.valueOf(cfg.timeoutMs));
            p.setProperty("socketTimeout", String.valueOf(cfg.timeoutMs));
            if (cfg.queryMode.equals("prepared")) {
                p.setProperty("useServerPrepStmts", "true");
                p.setProperty("cachePrepStmts", "true");
            }
            if (!cfg.tlsOn()) {
                p.setProperty("sslMode", "DISABLED");
            } else {
                p.setProperty("sslMode", Map.of("full", "VERIFY_IDENTITY", "ca", "VERIFY_CA", "none", "REQUIRED").get(cfg.verify));
                if (cfg.tls.equals("1.2")) {
                    p.setProperty("tlsVersions", "TLSv1.2");
                } else if (cfg.tls.equals("1.3")) {
                    p.setProperty("tlsVersions", "TLSv1.3");
                }
                // Connector/J reads key stores, not PEM: PKCS#12 files in the config's
                // directory, with a password made here that never leaves the process.
                String pass = Long.toHexString(new SecureRandom().nextLong());
                if (!cfg.ca.isEmpty() && !cfg.verify.equals("none")) {
                    p.setProperty("trustCertificateKeyStoreUrl", Tls.storeFile("cj-trust.p12", Tls.trustStore(cfg.ca), pass.toCharArray()).toUri().toString());
                    p.setProperty("trustCertificateKeyStoreType", "PKCS12");
                    p.setProperty("trustCertificateKeyStorePassword", pass);
                }
                if (!cfg.cert.isEmpty()) {
                    p.setProperty("clientCertificateKeyStoreUrl", Tls.storeFile("cj-client.p12", Tls.keyStore(cfg, pass.toCharArray()), pass.toCharArray()).toUri().toString());
                    p.setProperty("clientCertificateKeyStoreType", "PKCS12");
                    p.setProperty("clientCertificateKeyStorePassword", pass);
                }
            }
            props = p;
            return p;
        }

        @Override
        String sessionTLS(Connection c) {
            try {
                com.mysql.cj.NativeSession ns = (com.mysql.cj.NativeSession) c.unwrap(com.mysql.cj.jdbc.JdbcConnection.class).getSession();
                Socket s = ns.getProtocol().getSocketConnection().getMysqlSocket();
                return s instanceof SSLSocket ? Tls.negotiated(((SSLSocket) s).getSession()) : null;
            } catch (Exception e) {
                return null;
            }
        }
    }

    /** Redis is Jedis: a Jedis per connection, JedisPool for the pool. */
    @SuppressWarnings("deprecation") // JedisPool, deprecated in Jedis 7 for RedisClient, is what applications run
    static final class Redis extends Stack {
        redis.clients.jedis.JedisClientConfig conf;

        @Override
        String driver() {
            return "jedis/" + version(redis.clients.jedis.Jedis.class);
        }

        @Override
        String extra() {
            return " pool=JedisPool/commons-pool2-" + version(org.apache.commons.pool2.impl.GenericObjectPool.class);
        }

        @Override
        String refusal() {
            return workloadRefusal("ping", "get");
        }

        synchronized redis.clients.jedis.JedisClientConfig conf() {
            if (conf == null) {
                redis.clients.jedis.DefaultJedisClientConfig.Builder b = redis.clients.jedis.DefaultJedisClientConfig.builder()
                        .connectionTimeoutMillis(cfg.timeoutMs).socketTimeoutMillis(cfg.timeoutMs)
                        .database(cfg.database.isEmpty() ? 0 : Integer.parseInt(cfg.database)).clientName("tlsbench-jedis");
                if (!cfg.user.isEmpty()) {
                    b.user(cfg.user);
                }
                if (!cfg.password.isEmpty()) {
                    b.password(cfg.password);
                }
                if (cfg.tlsOn()) {
                    b.ssl(true).sslSocketFactory(Tls.context().getSocketFactory()).sslParameters(Tls.params());
                }
                conf = b.build();
            }
            return conf;
        }

        void command(redis.clients.jedis.Jedis j) {
            if (cfg.workload.equals("ping")) {
                j.ping();
            } else {
                j.get("key:" + id(cfg.rows));
            }
        }

        @Override
        Session open(int ops) {
            redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis(new redis.clients.jedis.HostAndPort(cfg.host, cfg.port), conf());
            j.getConnection().connect(); // the constructor may defer it: the connect is part of the operation
            return new Session() {
                @Override
                public void op() {
                    command(j);
                }

                @Override
                public void close() {
                    j.close();
                }
            };
        }

        @Override
        Pool pool(int n) {
            org.apache.commons.pool2.impl.GenericObjectPoolConfig<redis.clients.jedis.Jedis> pc = new org.apache.commons.pool2.impl.GenericObjectPoolConfig<>();
            pc.setMaxTotal(n);
            pc.setMaxIdle(n);
            pc.setMinIdle(n);
            pc.setMaxWait(Duration.ofMillis(cfg.timeoutMs));
            redis.clients.jedis.JedisPool p = new redis.clients.jedis.JedisPool(pc, new redis.clients.jedis.HostAndPort(cfg.host, cfg.port), conf());
            List<redis.clients.jedis.Jedis> held = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    held.add(p.getResource());
                }
            } catch (RuntimeException e) {
                held.forEach(redis.clients.jedis.Jedis::close);
                p.close();
                throw e;
            }
            held.forEach(redis.clients.jedis.Jedis::close);
            return new Pool() {
                @Override
                public void op() {
                    try (redis.clients.jedis.Jedis j = p.getResource()) {
                        command(j);
                    }
                }

                @Override
                public void close() {
                    p.close();
                }
            };
        }
    }

    /** Mongo is the MongoDB sync driver: a MongoClient per connection, its own pool. */
    static final class Mongo extends Stack {
        @Override
        String driver() {
            return "mongodb-driver-sync/" + version(com.mongodb.client.MongoClients.class);
        }

        @Override
        String refusal() {
            String w = workloadRefusal("ping", "find-one-id");
            if (w == null && cfg.tlsOn() && cfg.verify.equals("full") && !cfg.serverName.equals(cfg.host)) {
                w = "the MongoDB driver checks the certificate against the host it connects to (" + cfg.host + "), not a separate server name (" + cfg.serverName + ")";
            }
            return w;
        }

        com.mongodb.MongoClientSettings settings(int pool, com.mongodb.event.ConnectionPoolListener l) {
            com.mongodb.MongoClientSettings.Builder b = com.mongodb.MongoClientSettings.builder()
                    .applicationName("tlsbench-mongodb-java")
                    .applyToClusterSettings(s -> s.hosts(List.of(new com.mongodb.ServerAddress(cfg.host, cfg.port)))
                            .serverSelectionTimeout(cfg.timeoutMs, TimeUnit.MILLISECONDS))
                    .applyToSocketSettings(s -> s.connectTimeout(cfg.timeoutMs, TimeUnit.MILLISECONDS)
                            .readTimeout(cfg.timeoutMs, TimeUnit.MILLISECONDS))
                    .applyToConnectionPoolSettings(s -> {
                        s.maxSize(pool).minSize(pool > 1 ? pool : 0).maxWaitTime(cfg.timeoutMs, TimeUnit.MILLISECONDS);
                        if (l != null) {
                            s.addConnectionPoolListener(l);
                        }
                    });
            if (!cfg.user.isEmpty()) {
                b.credential(com.mongodb.MongoCredential.createCredential(cfg.user,
                        cfg.database.isEmpty() ? "admin" : cfg.database, cfg.password.toCharArray()));
            }
            if (cfg.tlsOn()) {
                b.applyToSslSettings(s -> s.enabled(true).context(Tls.context()).invalidHostNameAllowed(!cfg.verify.equals("full")));
            }
            return b.build();
        }

        void command(com.mongodb.client.MongoClient c) {
            if (cfg.workload.equals("ping")) {
                c.getDatabase("admin").runCommand(new org.bson.Document("ping", 1));
                return;
            }
            c.getDatabase("ycsb").getCollection("usertable")
                    .find(com.mongodb.client.model.Filters.eq("_id", "user" + fnvhash64(id(cfg.rows) - 1))).first();
        }

        /** fnvhash64 is YCSB's Utils.fnvhash64, which names its records. */
        static long fnvhash64(long val) {
            long h = 0xCBF29CE484222325L;
            for (int i = 0; i < 8; i++) {
                h ^= val & 0xff;
                h *= 1099511628211L;
                val >>= 8;
            }
            return Math.abs(h);
        }

        @Override
        Session open(int ops) {
            com.mongodb.client.MongoClient c = com.mongodb.client.MongoClients.create(settings(1, null));
            return new Session() {
                @Override
                public void op() {
                    command(c);
                }

                @Override
                public boolean lazy() {
                    return true;
                }

                @Override
                public void close() {
                    c.close();
                }
            };
        }

        @Override
        Pool pool(int n) throws Exception {
            CountDownLatch ready = new CountDownLatch(n);
            com.mongodb.event.ConnectionPoolListener l = new com.mongodb.event.ConnectionPoolListener() {
                @Override
                public void connectionReady(com.mongodb.event.ConnectionReadyEvent e) {
                    ready.countDown();
                }
            };
            com.mongodb.client.MongoClient c = com.mongodb.client.MongoClients.create(settings(n, l));
            try {
                command(c);
                // minSize opens the rest in the background: wait for all n.
                if (!ready.await(cfg.timeoutMs, TimeUnit.MILLISECONDS)) {
                    throw new SocketTimeoutException("the pool opened " + (n - ready.getCount()) + " of " + n + " connections in " + cfg.timeoutMs + " ms");
                }
            } catch (Exception e) {
                c.close();
                throw e;
            }
            return new Pool() {
                @Override
                public void op() {
                    command(c);
                }

                @Override
                public void close() {
                    c.close();
                }
            };
        }
    }

    /**
     * Http is java.net.http.HttpClient over HTTP/1.1: for connect a new client
     * per connection, whose last request says Connection: close (Java 17's
     * HttpClient has no close(): without it the idle connection would stay
     * open until the client is collected); for pool one client, n threads.
     */
    static final class Http extends Stack {
        static {
            System.setProperty("jdk.httpclient.allowRestrictedHeaders", "connection");
            if (cfg.tlsOn() && !cfg.verify.equals("full")) {
                // Checker skips the name for ca and none; this stops HttpClient asking for it.
                System.setProperty("jdk.internal.httpclient.disableHostnameVerification", "true");
            }
        }

        @Override
        String driver() {
            return "java.net.http/" + System.getProperty("java.version");
        }

        @Override
        String refusal() {
            return workloadRefusal("request", "ping");
        }

        HttpClient client() {
            HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofMillis(cfg.timeoutMs)).followRedirects(HttpClient.Redirect.NEVER);
            if (cfg.tlsOn()) {
                b.sslContext(Tls.context()).sslParameters(Tls.params());
            }
            return b.build();
        }

        URI uri() {
            String h = cfg.host.contains(":") ? "[" + cfg.host + "]" : cfg.host;
            return URI.create((cfg.tlsOn() ? "https://" : "http://") + h + ":" + cfg.port + cfg.path);
        }

        String get(HttpClient c, boolean last) throws Exception {
            HttpRequest.Builder r = HttpRequest.newBuilder(uri()).timeout(Duration.ofMillis(cfg.timeoutMs)).GET();
            if (last) {
                r.header("Connection", "close");
            }
            HttpResponse<Void> resp = c.send(r.build(), HttpResponse.BodyHandlers.discarding());
            if (resp.statusCode() / 100 != 2) {
                throw new ServerAnswer("HTTP status " + resp.statusCode());
            }
            return resp.sslSession().map(Tls::negotiated).orElse(null);
        }

        @Override
        Session open(int ops) {
            HttpClient c = client();
            return new Session() {
                int left = ops;
                String tls;

                @Override
                public void op() throws Exception {
                    tls = get(c, --left == 0);
                }

                @Override
                public boolean lazy() {
                    return true;
                }

                @Override
                public String tls() {
                    return tls;
                }

                @Override
                public void close() {}
            };
        }

        @Override
        Pool pool(int n) throws Exception {
            HttpClient c = client();
            // Open n connections before the warm-up: n requests at once.
            List<Thread> ts = new ArrayList<>();
            List<Exception> errs = new java.util.concurrent.CopyOnWriteArrayList<>();
            CountDownLatch go = new CountDownLatch(1);
            for (int i = 0; i < n; i++) {
                Thread t = new Thread(() -> {
                    try {
                        go.await();
                        get(c, false);
                    } catch (Exception e) {
                        errs.add(e);
                    }
                });
                t.start();
                ts.add(t);
            }
            go.countDown();
            for (Thread t : ts) {
                t.join();
            }
            if (!errs.isEmpty()) {
                throw errs.get(0);
            }
            return new Pool() {
                volatile String tls;

                @Override
                public void op() throws Exception {
                    String t = get(c, false);
                    if (tls == null) {
                        tls = t;
                    }
                }

                @Override
                public String tls() {
                    return tls;
                }

                @Override
                public void close() {}
            };
        }
    }

    /** ServerAnswer is an error the server answered that is no exception of a library's (an HTTP status). */
    static final class ServerAnswer extends Exception {
        private static final long serialVersionUID = 1;

        ServerAnswer(String m) {
            super(m);
        }
    }

    /** Run is one run command: workers on platform threads, reporting each operation. */
    static final class Run {
        final Stack stack;
        final int id, concurrency, perConn;
        final String experiment;
        final long maxOps, durationMs, warmupMs;
        final AtomicLong taken = new AtomicLong(), ops = new AtomicLong(), errs = new AtomicLong();
        /** The warm-up's operations and its failed ones, said on the warm line. */
        final AtomicLong warmOps = new AtomicLong(), warmErrs = new AtomicLong();
        final AtomicBoolean tlsSaid = new AtomicBoolean();
        volatile long warmEnd, end;

        Run(Stack stack, int id, String experiment, int concurrency, int perConn, long maxOps, long durationMs, long warmupMs) {
            if (!experiment.equals("connect") && !experiment.equals("pool")) {
                throw new IllegalArgumentException("experiment " + experiment + " is not connect or pool");
            }
            if (concurrency < 1 || perConn < 0 || maxOps < 0 || durationMs < 0 || warmupMs < 0 || (maxOps == 0 && durationMs == 0)) {
                throw new IllegalArgumentException("run " + id + ": concurrency must be at least 1 and the run bounded by max_ops or duration_ms");
            }
            this.stack = stack;
            this.id = id;
            this.experiment = experiment;
            this.concurrency = concurrency;
            this.perConn = Math.max(1, perConn);
            this.maxOps = maxOps;
            this.durationMs = durationMs;
            this.warmupMs = warmupMs;
        }

        /** next says whether a reported operation may start now. */
        boolean next() {
            if (end > 0 && System.nanoTime() >= end) {
                return false;
            }
            return maxOps == 0 || taken.incrementAndGet() <= maxOps;
        }

        void report(int worker, long start, Throwable e, String phase, String tls) {
            long stop = System.nanoTime();
            ops.incrementAndGet();
            if (e != null) {
                errs.incrementAndGet();
                out.line("err " + worker + " " + start + " " + stop + " " + Errors.describe(e, phase));
                return;
            }
            out.line("op " + worker + " " + start + " " + stop);
            if (cfg.tlsOn() && !tlsSaid.get()) {
                if (tls == null) {
                    tls = "- - - -";
                }
                if (tlsSaid.compareAndSet(false, true)) {
                    out.line("tls " + tls);
                }
            }
        }

        void run() {
            Pool pool = null;
            if (experiment.equals("pool")) {
                long start = System.nanoTime();
                try {
                    pool = stack.pool(concurrency);
                } catch (Exception e) {
                    // The pool never opened: one failed operation says why.
                    out.line("warm " + id);
                    report(0, start, e, "connect", null);
                    out.line("done " + id + " " + ops.get() + " " + errs.get());
                    out.flush();
                    return;
                }
            }
            warmEnd = System.nanoTime() + warmupMs * 1_000_000L;
            // When every worker is done warming up: warm, then the clock runs.
            CyclicBarrier warm = new CyclicBarrier(concurrency, () -> {
                out.line("warm " + id + " " + warmOps.get() + " " + warmErrs.get());
                out.flush();
                end = durationMs > 0 ? System.nanoTime() + durationMs * 1_000_000L : 0;
            });
            Pool p = pool;
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < concurrency; w++) {
                int worker = w;
                Thread t = new Thread(() -> {
                    for (boolean warming : new boolean[] {true, false}) {
                        if (p != null) {
                            poolWorker(worker, p, warming);
                        } else {
                            connectWorker(worker, warming);
                        }
                        if (warming) {
                            try {
                                warm.await();
                            } catch (InterruptedException | BrokenBarrierException e) {
                                return;
                            }
                        }
                    }
                }, "tlsbench-worker-" + w);
                t.start();
                workers.add(t);
            }
            for (Thread t : workers) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (pool != null) {
                try {
                    pool.close();
                } catch (Exception e) {
                    System.err.println("closing the pool: " + Errors.message(e));
                }
            }
            out.line("done " + id + " " + ops.get() + " " + errs.get());
            out.flush();
        }

        /** warming runs unreported operations until warmEnd; else reported ones until next says stop. */
        boolean more(boolean warming) {
            return warming ? System.nanoTime() < warmEnd : next();
        }

        void connectWorker(int worker, boolean warming) {
            while (more(warming)) {
                if (warming) {
                    warmOps.incrementAndGet();
                }
                long start = System.nanoTime();
                String phase = "connect";
                Session s = null;
                String tls = null;
                try {
                    s = stack.open(perConn);
                    for (int i = 0; i < perConn; i++) {
                        phase = i == 0 && s.lazy() ? "connect" : "query";
                        s.op();
                    }
                    tls = cfg.tlsOn() && !warming && !tlsSaid.get() ? s.tls() : null;
                    phase = "close";
                    Session c = s;
                    s = null;
                    c.close();
                } catch (Throwable e) {
                    if (s != null) {
                        try {
                            s.close();
                        } catch (Throwable ignored) {
                            // the operation already failed
                        }
                    }
                    if (!warming) {
                        report(worker, start, e, phase, null);
                    } else {
                        warmErrs.incrementAndGet();
                    }
                    continue;
                }
                if (!warming) {
                    report(worker, start, null, null, tls);
                }
            }
        }

        void poolWorker(int worker, Pool p, boolean warming) {
            while (more(warming)) {
                if (warming) {
                    warmOps.incrementAndGet();
                }
                long start = System.nanoTime();
                try {
                    p.op();
                } catch (Throwable e) {
                    if (!warming) {
                        report(worker, start, e, "query", null);
                    } else {
                        warmErrs.incrementAndGet();
                    }
                    continue;
                }
                if (!warming) {
                    report(worker, start, null, null, cfg.tlsOn() && !tlsSaid.get() ? p.tls() : null);
                }
            }
        }
    }

    /** Errors maps the drivers' exceptions to the protocol's phase and kind. */
    static final class Errors {
        /** describe is an err line's "phase kind message" for e, thrown in stage connect, query or close. */
        static String describe(Throwable e, String stage) {
            String kind = kind(e);
            String phase = stage;
            if (stage.equals("connect")) {
                if (kind.equals("tls")) {
                    phase = "tls-handshake";
                } else if (kind.equals("auth")) {
                    phase = "auth";
                } else if (kind.equals("refused") || has(e, ConnectException.class) || has(e, NoRouteToHostException.class)
                        || has(e, UnknownHostException.class) || text(e).contains("connect timed out")) {
                    phase = "tcp";
                } else {
                    // Past TCP and TLS: the engine's startup and login.
                    phase = "auth";
                }
            }
            return phase + " " + kind + " " + message(e);
        }

        static String kind(Throwable e) {
            String t = text(e).toLowerCase();
            // The MongoDB driver's server selection times out with the monitor's
            // failure only in its text: the cause, not the wait, is the kind.
            if (t.contains("connection refused") || (has(e, ConnectException.class) && !has(e, SocketTimeoutException.class))) {
                return "refused";
            }
            if (has(e, SSLException.class) || has(e, CertificateException.class) || t.contains("sslhandshakeexception")) {
                return "tls";
            }
            if (isAuth(e, t)) {
                return "auth";
            }
            if (has(e, SocketTimeoutException.class) || has(e, HttpTimeoutException.class) || has(e, java.util.concurrent.TimeoutException.class)
                    || has(e, com.mongodb.MongoTimeoutException.class) || t.contains("timed out") || t.contains("timeout")) {
                return "timeout";
            }
            if (t.contains("connection reset") || t.contains("broken pipe") || t.contains("unexpected end of stream")
                    || t.contains("end of file") || t.contains("eofexception") || t.contains("closed by the server")) {
                return "reset";
            }
            if (isServer(e)) {
                return "server";
            }
            return "other";
        }

        static boolean isAuth(Throwable e, String t) {
            for (Throwable c : chain(e)) {
                if (c instanceof SQLException) {
                    String st = ((SQLException) c).getSQLState();
                    if (st != null && st.startsWith("28")) {
                        return true; // invalid authorization (PostgreSQL 28P01, MySQL 28000)
                    }
                }
                if (c instanceof com.mongodb.MongoSecurityException || c instanceof redis.clients.jedis.exceptions.JedisAccessControlException) {
                    return true;
                }
            }
            return t.contains("wrongpass") || t.contains("noauth") || t.contains("authentication failed") || t.contains("access denied");
        }

        static boolean isServer(Throwable e) {
            for (Throwable c : chain(e)) {
                if (c instanceof ServerAnswer || c instanceof redis.clients.jedis.exceptions.JedisDataException
                        || c instanceof com.mongodb.MongoServerException) {
                    return true;
                }
                if (c instanceof SQLException) {
                    String st = ((SQLException) c).getSQLState();
                    return st != null && !st.startsWith("08"); // 08: connection exceptions
                }
            }
            return false;
        }

        /** chain is e, its causes and what they suppressed (Jedis keeps the connect's failure there). */
        static List<Throwable> chain(Throwable e) {
            List<Throwable> l = new ArrayList<>();
            for (Throwable c = e; c != null && !l.contains(c) && l.size() < 32; c = c.getCause()) {
                l.add(c);
                for (Throwable s : c.getSuppressed()) {
                    l.addAll(chain(s));
                }
            }
            return l;
        }

        static boolean has(Throwable e, Class<?> k) {
            return chain(e).stream().anyMatch(k::isInstance);
        }

        /** text is every message of the chain, for matching. */
        static String text(Throwable e) {
            StringBuilder b = new StringBuilder();
            for (Throwable c : chain(e)) {
                b.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage()).append("; ");
            }
            return b.toString();
        }

        /** message is the library's message on one line, its cause's added, never the password. */
        static String message(Throwable e) {
            String m = e.getClass().getSimpleName() + ": " + e.getMessage();
            List<Throwable> l = chain(e);
            Throwable root = l.get(l.size() - 1);
            if (root != e && root.getMessage() != null && (e.getMessage() == null || !e.getMessage().contains(root.getMessage()))) {
                m += " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
            }
            return oneLine(m);
        }

        static String oneLine(String s) {
            s = s.replaceAll("\\s+", " ").trim();
            if (cfg != null && cfg.password != null && !cfg.password.isEmpty()) {
                s = s.replace(cfg.password, "***");
            }
            return s;
        }
    }
}
