"""Logs n records through a GELF handler of graypy or pygelf into 127.0.0.1:port.

usage: send.py graypy|pygelf udp|tcp PORT N

Record i: "order i shipped" at WARNING, with the extra fields order_id=i and via=<library>/<proto>;
every fifth record carries 3 KB of random hex, so that over UDP it goes in chunks.
"""
import logging
import os
import sys
import time

library, proto, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if library == "graypy":
    import graypy

    if proto == "udp":
        handler = graypy.GELFUDPHandler(
            "127.0.0.1", port, gelf_chunker=graypy.handler.GELFWarningChunker(chunk_size=400)
        )
    else:
        handler = graypy.GELFTCPHandler("127.0.0.1", port)
else:
    import pygelf

    if proto == "udp":
        handler = pygelf.GelfUdpHandler("127.0.0.1", port, chunk_size=400, include_extra_fields=True)
    else:
        handler = pygelf.GelfTcpHandler("127.0.0.1", port, include_extra_fields=True)

log = logging.getLogger("shop.orders")
log.setLevel(logging.DEBUG)
log.propagate = False
log.addHandler(handler)
for i in range(n):
    extra = {"order_id": i, "via": f"{library}/{proto}"}
    if i % 5 == 0:
        extra["blob"] = os.urandom(1500).hex()
    log.warning("order %d shipped", i, extra=extra)
    if proto == "udp" and i % 50 == 49:
        time.sleep(0.01)
handler.close()
