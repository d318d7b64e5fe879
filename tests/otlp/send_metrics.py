# Records metrics through the OpenTelemetry Python SDK and exports them once (at shutdown)
# through its OTLP/HTTP protobuf exporter to ENDPOINT, or with "grpc" its OTLP/gRPC exporter;
# used by tests/otlp_input.rs. For each of N routes /r0, /r1, ...: the counter shop.orders
# adds i+1, the histogram shop.latency records 10 and 20, the up-down counter shop.inflight
# adds 1; the observable gauge shop.temperature reads 21.5.
# Usage: python send_metrics.py ENDPOINT N [grpc]
import sys
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.metrics import Observation

endpoint, n = sys.argv[1], int(sys.argv[2])
if sys.argv[3:] == ["grpc"]:
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    exporter = OTLPMetricExporter(endpoint=endpoint, insecure=True)
else:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    exporter = OTLPMetricExporter(endpoint=endpoint)
# A long interval: the one export is the one shutdown makes.
reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
provider = MeterProvider(resource=Resource.create({"service.name": "shop"}), metric_readers=[reader])
meter = provider.get_meter("shop.meter", "1.0")
orders = meter.create_counter("shop.orders", unit="{order}", description="orders placed")
latency = meter.create_histogram("shop.latency", unit="ms")
inflight = meter.create_up_down_counter("shop.inflight")
meter.create_observable_gauge("shop.temperature", callbacks=[lambda options: [Observation(21.5)]])
for i in range(n):
    route = {"http.route": f"/r{i}"}
    orders.add(i + 1, route)
    latency.record(10, route)
    latency.record(20, route)
    inflight.add(1, route)
provider.shutdown()
