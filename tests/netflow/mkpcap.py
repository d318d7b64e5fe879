"""Writes a pcap (Ethernet/IPv4/TCP or UDP) of N one-way flows, each of K packets, for softflowd -r:
flow i goes from 10.0.(i//250).(i%250+1) port 40000+i%25000 to 192.168.1.10 port 80 (TCP, even i)
or 53 (UDP, odd i) with 100+i%1000 bytes of payload a packet.

usage: mkpcap.py OUT N K
"""
import struct, sys
out, flows, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b)//2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    t0 = 1795860000
    for i in range(flows):
        src = bytes([10, 0, i // 250, i % 250 + 1]); dst = bytes([192, 168, 1, 10])
        proto = 6 if i % 2 == 0 else 17
        sport, dport = 40000 + i % 25000, 80 if proto == 6 else 53
        for k in range(per):
            payload = b"x" * (100 + i % 1000)
            if proto == 6:
                flags = 0x02 if k == 0 else (0x11 if k == per - 1 else 0x18)
                l4 = struct.pack("!HHIIBBHHH", sport, dport, k, 0, 5 << 4, flags, 65535, 0, 0) + payload
            else:
                l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), i, 0, 64, proto, 0, src, dst)
            ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
            eth = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + b"\x08\x00"
            pkt = eth + ip + l4
            ts = t0 + i * 0.01 + k * 0.001
            f.write(struct.pack("<IIII", int(ts), int((ts % 1) * 1e6), len(pkt), len(pkt)) + pkt)
