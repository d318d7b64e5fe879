# Logs N records through the OpenTelemetry Python SDK (stdlib logging bridge) and its
# OTLP/HTTP protobuf exporter to ENDPOINT, or with "grpc" its OTLP/gRPC exporter (ENDPOINT
# http://host:port, no TLS); used by tests/otlp_input.rs and tests/otlp_output.rs.
# Usage: python send_logs.py ENDPOINT N [grpc]
import logging, sys
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
endpoint, n = sys.argv[1], int(sys.argv[2])
if sys.argv[3:] == ["grpc"]:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    exporter = OTLPLogExporter(endpoint=endpoint, insecure=True)
else:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    exporter = OTLPLogExporter(endpoint=endpoint)
provider = LoggerProvider(resource=Resource.create({"service.name": "shop", "deployment.environment": "test"}))
provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
handler = LoggingHandler(logger_provider=provider)
log = logging.getLogger("shop.orders")
log.setLevel(logging.INFO)
log.addHandler(handler)
for i in range(n):
    log.warning("order %d shipped", i, extra={"order.id": i, "order.total": i * 1.5})
provider.shutdown()
