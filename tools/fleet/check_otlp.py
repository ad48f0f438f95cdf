"""Checks an OTLP/JSON export against the official OpenTelemetry protobuf definitions.

    python3 check_otlp.py EXPORT.json [EXPECTED_SPANS]

OTLP/JSON differs from the plain protobuf JSON mapping in one way: trace and span ids are hex,
not base64. So the ids are checked as hex (32 and 16 digits, not all zero), turned into
base64, and the whole request is then parsed strictly (unknown fields are errors) by
protobuf's json_format into opentelemetry.proto's ExportTraceServiceRequest. Then every span
must have its ids, a name, start <= end and the stallwatch attributes, and every resource a
service.name. Prints a one-line summary; exits 1 on the first problem. Needs
`pip install opentelemetry-proto`.
"""
import base64
import json
import re
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

REQUIRED_SPAN_ATTRIBUTES = {"stallwatch.category", "stallwatch.tier", "stallwatch.signature", "stallwatch.site"}


def fail(message):
    print("OTLP check failed: " + message)
    sys.exit(1)


def hex_to_base64(value, digits, what):
    if not re.fullmatch(f"[0-9a-f]{{{digits}}}", value) or set(value) == {"0"}:
        fail(f"{what} {value!r} is not {digits} lowercase hex digits (and not all zero)")
    return base64.b64encode(bytes.fromhex(value)).decode()


def parse(path):
    """The export at `path` as an ExportTraceServiceRequest, parsed strictly (ids checked as hex)."""
    document = json.load(open(path))
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                span["traceId"] = hex_to_base64(span.get("traceId", ""), 32, "traceId")
                span["spanId"] = hex_to_base64(span.get("spanId", ""), 16, "spanId")
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        fail(str(error))
    return request


def main(path, expected_spans=None):
    request = parse(path)
    spans = 0
    span_ids = set()
    for resource in request.resource_spans:
        keys = {attribute.key for attribute in resource.resource.attributes}
        if "service.name" not in keys:
            fail("a resource has no service.name")
        for scope in resource.scope_spans:
            if scope.scope.name != "stallwatch":
                fail(f"scope {scope.scope.name!r}")
            for span in scope.spans:
                spans += 1
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    fail("ids of the wrong length")
                if (span.trace_id, span.span_id) in span_ids:
                    fail("duplicate span id")
                span_ids.add((span.trace_id, span.span_id))
                if not span.name or span.start_time_unix_nano == 0 or span.end_time_unix_nano < span.start_time_unix_nano:
                    fail(f"span {span.name!r}: name or times missing or reversed")
                attributes = {attribute.key for attribute in span.attributes}
                if span.name.startswith("stall") and not REQUIRED_SPAN_ATTRIBUTES <= attributes:
                    fail(f"span {span.name!r} lacks {sorted(REQUIRED_SPAN_ATTRIBUTES - attributes)}")
    if expected_spans is not None and spans != expected_spans:
        fail(f"{spans} spans, expected {expected_spans}")
    print(f"OTLP ok: {len(request.resource_spans)} resources, {spans} spans")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
