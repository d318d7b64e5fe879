# Sends N traces (a server span "checkout" with a child "charge" that records an event and
# fails) through the OpenTelemetry Python SDK and its OTLP/HTTP protobuf exporter to
# ENDPOINT, or with "grpc" its OTLP/gRPC exporter; used by tests/otlp_input.rs.
# Usage: python send_traces.py ENDPOINT N [grpc]
import sys
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

endpoint, n = sys.argv[1], int(sys.argv[2])
if sys.argv[3:] == ["grpc"]:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True)
else:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter(endpoint=endpoint)
provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
provider.add_span_processor(BatchSpanProcessor(exporter))
tracer = provider.get_tracer("shop.checkout", "3.1")
for i in range(n):
    with tracer.start_as_current_span("checkout", kind=SpanKind.SERVER, attributes={"order.id": i}):
        with tracer.start_as_current_span("charge") as charge:
            charge.add_event("card declined", {"attempt": 1})
            charge.set_status(Status(StatusCode.ERROR, "declined"))
provider.shutdown()
