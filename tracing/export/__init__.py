"""What leaves the process: OpenTelemetry wiring (exporters, a bounded exit: ``otel``), export
shaping and secret redaction (``shaping``, ``redact``), and the OTLP/JSON file exporter
(``otlpfile``). The local event log is not shaped; everything else is.
"""
