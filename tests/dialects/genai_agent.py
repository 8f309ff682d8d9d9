"""An agent traced with the GenAI semantic conventions (opentelemetry-util-genai's
TelemetryHandler, what GenAI instrumentations build on), exporting OTLP/HTTP to argv[1]."""

import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1] + "/v1/traces")))
h = TelemetryHandler(tracer_provider=provider)
with h.workflow("trip"), h.invoke_local_agent(agent_name="planner") as planner:
    planner.input_messages = [InputMessage(role="user", parts=[Text(content="plan paris")])]
    with h.invoke_local_agent(agent_name="researcher"):
        with h.tool("search", tool_type="function") as t:
            t.arguments = {"q": "paris"}
            t.tool_result = ["a", "b"]
        with h.inference("openai", request_model="gpt-4o-mini") as inf:
            inf.input_messages = [InputMessage(role="user", parts=[Text(content="about paris?")])]
            inf.output_messages = [OutputMessage(role="assistant", parts=[Text(content="nice")], finish_reason="stop")]
    planner.output_messages = [OutputMessage(role="assistant", parts=[Text(content="plan")], finish_reason="stop")]
provider.shutdown()
