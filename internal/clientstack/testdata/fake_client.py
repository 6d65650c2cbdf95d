# A stand-in of a client program (clients/PROTOCOL.md) for the tests of
# clientstack's own logic: no driver, no server. argv[1] says how it
# misbehaves: ok, refuse, fatal, crash, hang, garbage, miscount, silent,
# nowarm (no warm line), seedop (new-client's lines in any run). A
# new-client run's iterations build their client in their first half.
import os, sys, time

mode = sys.argv[1]
conf = {}
with open(os.environ["TLSBENCH_CONFIG"]) as f:
    for line in f:
        k, _, v = line.rstrip("\n").partition("=")
        conf[k] = v
out = sys.stdout
if mode == "silent":
    time.sleep(3600)
if mode == "refuse":
    print("refuse this stand-in cannot pin TLS " + conf["tls"], flush=True)
    sys.exit(0)
if mode == "fatal":
    print("fatal no driver here", flush=True)
    sys.exit(3)
sys.stderr.write("connecting with password " + conf["password"] + "\n")
print("hello protocol=1 stack=%s driver=fake/1.0 tls=none/0 runtime=CPython/%d.%d model=threads" % (conf["stack"], sys.version_info[0], sys.version_info[1]), flush=True)
for cmd in sys.stdin:
    f = cmd.split()
    if f[0] == "quit":
        break
    rid, exp, conc, per, maxops, dur, warmup = f[1], f[2], int(f[3]), int(f[4]), int(f[5]), int(f[6]), int(f[7])
    warm_end = time.monotonic_ns() + warmup * 1_000_000
    while time.monotonic_ns() < warm_end:  # a warm-up that only burns CPU
        pass
    if mode != "nowarm":
        print("warm " + rid, flush=True)
    end = time.monotonic_ns() + dur * 1_000_000
    n = errs = 0
    while time.monotonic_ns() < end and (maxops == 0 or n < maxops):
        t0 = time.monotonic_ns()
        x = 0
        for i in range(20000):  # some CPU per operation
            x += i
            if i == 10000:
                tmid = time.monotonic_ns()
        t1 = time.monotonic_ns()
        if mode == "crash" and n == 3:
            out.flush()  # what it printed before it died
            os._exit(7)
        if mode == "hang" and n == 3:
            out.flush()
            time.sleep(3600)
        if mode == "garbage" and n == 3:
            print("op this is not a number", flush=True)
        if n % 5 == 4:
            print("err %d %d %d query server relation sbtest1 does not exist" % (n % conc, t0, t1))
            errs += 1
        elif exp == "new-client" or mode == "seedop":
            print("seedop %d %d %d %d" % (n % conc, t0, tmid, t1))
        else:
            print("op %d %d %d" % (n % conc, t0, t1))
        if n == 0 and conf["tls"] != "off":
            print("tls TLSv1.3 TLS_AES_128_GCM_SHA256 X25519 0")
        n += 1
    if mode == "miscount":
        n += 1
    print("done %s %d %d" % (rid, n, errs), flush=True)
