"""A GELF UDP receiver of the test's own: takes datagrams on 127.0.0.1:PORT, puts chunks back
together, opens zlib/gzip, and prints each message's JSON on a line, until N messages came.

usage: receive.py PORT N
"""
import gzip
import json
import socket
import sys
import zlib

port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("127.0.0.1", port))
print("ready", flush=True)
pending = {}
done = 0
while done < n:
    data = s.recv(65536)
    if data[:2] == b"\x1e\x0f":
        mid, seq, count = data[2:10], data[10], data[11]
        parts = pending.setdefault(mid, {})
        parts[seq] = data[12:]
        if len(parts) < count:
            continue
        data = b"".join(parts[i] for i in range(count))
        del pending[mid]
        chunked = count
    else:
        chunked = 0
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:1] == b"\x78":
        data = zlib.decompress(data)
    m = json.loads(data)
    m["chunks"] = chunked
    print(json.dumps(m), flush=True)
    done += 1
