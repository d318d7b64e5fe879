# Makes one gRPC unary call with grpcio (from scripts/otel-python): METHOD (a path such as
# /opentelemetry.proto.collector.logs.v1.LogsService/Export) with BODY_HEX as the request's
# bytes, optionally with an authorization header. Prints the status code's name and details
# ("OK" and the response's hex on success); used by tests/otlp_input.rs. With SLUICE_GRPC_CA
# set (a CA file), the call goes over TLS, trusting that CA.
# Usage: python grpc_call.py HOST:PORT METHOD BODY_HEX [AUTHORIZATION]
import os, sys
import grpc

target, method, body = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
metadata = [("authorization", sys.argv[4])] if len(sys.argv) > 4 else None
ca = os.environ.get("SLUICE_GRPC_CA")
if ca:
    credentials = grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
    channel = grpc.secure_channel(target, credentials)
else:
    channel = grpc.insecure_channel(target)
with channel:
    call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
    try:
        answer = call(body, metadata=metadata, timeout=30)
        print("OK", answer.hex())
    except grpc.RpcError as e:
        print(e.code().name, e.details())
