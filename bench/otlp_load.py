# OTLP/HTTP load for bench/otlp.sh: CLIENTS processes each POST the same protobuf
# ExportLogsServiceRequest of BATCH log records (about 200 bytes each, built once with
# opentelemetry-proto's classes) REQUESTS times over a keep-alive connection, each waiting
# for its answer, as an SDK's exporter does. Prints the records sent.
# Usage: python otlp_load.py PORT CLIENTS REQUESTS BATCH
import http.client, sys, time
from multiprocessing import Process
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs, LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

port, clients, requests, batch = map(int, sys.argv[1:5])
now = time.time_ns()
kv = lambda k, v: KeyValue(key=k, value=AnyValue(string_value=v))
records = [LogRecord(time_unix_nano=now + i, severity_number=9, severity_text="INFO",
                     body=AnyValue(string_value=f"GET /api/orders/{i} 200 {i % 997} ms"),
                     attributes=[kv("http.method", "GET"), kv("http.route", "/api/orders/{id}")],
                     trace_id=bytes(range(16)), span_id=bytes(range(8)))
           for i in range(batch)]
body = ExportLogsServiceRequest(resource_logs=[ResourceLogs(
    resource=Resource(attributes=[kv("service.name", "orders"), kv("host.name", "web-1")]),
    scope_logs=[ScopeLogs(scope=InstrumentationScope(name="orders.http"), log_records=records)])]).SerializeToString()

def run():
    c = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(requests):
        c.request("POST", "/v1/logs", body, {"Content-Type": "application/x-protobuf"})
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"answer {r.status}")

ps = [Process(target=run) for _ in range(clients)]
for p in ps: p.start()
for p in ps: p.join()
if any(p.exitcode for p in ps):
    raise SystemExit("a client failed")
print(clients * requests * batch)
