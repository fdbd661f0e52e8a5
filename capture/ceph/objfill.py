#!/usr/bin/python3
"""Write COUNT objects named PREFIX-00000… of SIZE bytes to POOL (full-object writes, async, a
window of CONCURRENCY in flight).  Writing the same names again overwrites them, which is how the
snaptrim scenario makes clones after a pool snapshot.  Runs under /usr/bin/python3 (rados bindings).
Prints one JSON line: objects, bytes, seconds."""
import argparse
import json
import os
import threading
import time

import rados


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conf", required=True)
    ap.add_argument("--pool", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--size", type=int, required=True, help="bytes per object")
    ap.add_argument("--prefix", default="obj")
    ap.add_argument("--concurrency", type=int, default=16)
    a = ap.parse_args()
    cluster = rados.Rados(conffile=a.conf)
    cluster.connect(timeout=20)
    io = cluster.open_ioctx(a.pool)
    base = bytearray(os.urandom(a.size))
    sem = threading.Semaphore(a.concurrency)
    errors = []

    def done(comp):
        rc = comp.get_return_value()
        if rc < 0:
            errors.append(rc)
        sem.release()

    t0 = time.time()
    comps = []
    for i in range(a.count):
        sem.acquire()
        if errors:
            break
        base[:8] = i.to_bytes(8, "little")
        comps.append(io.aio_write_full(f"{a.prefix}-{i:06d}", bytes(base), oncomplete=done))
    for c in comps:
        c.wait_for_complete()
    io.close()
    cluster.shutdown()
    if errors:
        raise SystemExit(f"objfill: {len(errors)} writes failed (first rc {errors[0]})")
    print(json.dumps({"objects": a.count, "bytes": a.count * a.size, "seconds": round(time.time() - t0, 3)}))


if __name__ == "__main__":
    main()
