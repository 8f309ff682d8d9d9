"""collector-config.yaml (and its load-balancing variant) uses only component names and keys
the contrib Collector accepts. No Collector binary can run here, so the accepted keys are
spelled out below, from the components' configuration schemas (contrib, v0.130)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from callctx.export.shaping import Shaper

ROOT = Path(__file__).resolve().parents[2]

ANY = object()  # a map whose keys are free (headers)
MAX_SPAN = Shaper().max_span  # the largest span callctx exports
TLS = {"insecure": None, "insecure_skip_verify": None, "ca_file": None, "cert_file": None, "key_file": None,
       "server_name_override": None, "min_version": None, "max_version": None}  # fmt: skip
QUEUE = {"enabled": None, "num_consumers": None, "queue_size": None, "storage": None, "sizer": None,
         "block_on_overflow": None, "batch": ANY}  # fmt: skip
RETRY = {"enabled": None, "initial_interval": None, "randomization_factor": None, "multiplier": None,
         "max_interval": None, "max_elapsed_time": None}  # fmt: skip
OTLP_GRPC = {"endpoint": None, "tls": TLS, "headers": ANY, "compression": None, "timeout": None,
             "sending_queue": QUEUE, "retry_on_failure": RETRY, "balancer_name": None, "keepalive": ANY,
             "auth": ANY, "wait_for_ready": None, "read_buffer_size": None, "write_buffer_size": None}  # fmt: skip

SCHEMA = {
    "extensions": {
        "health_check": {"endpoint": None, "path": None, "tls": TLS, "response_body": ANY,
                         "check_collector_pipeline": ANY},
    },
    "receivers": {
        "otlp": {"protocols": {
            "grpc": {"endpoint": None, "transport": None, "tls": TLS, "max_recv_msg_size_mib": None,
                     "max_concurrent_streams": None, "keepalive": ANY, "auth": ANY, "include_metadata": None},
            "http": {"endpoint": None, "tls": TLS, "cors": {"allowed_origins": None, "allowed_headers": None,
                                                            "max_age": None},
                     "traces_url_path": None, "metrics_url_path": None, "logs_url_path": None, "auth": ANY,
                     "include_metadata": None, "max_request_body_size": None},
        }},
    },
    "processors": {
        "memory_limiter": {"check_interval": None, "limit_mib": None, "spike_limit_mib": None,
                           "limit_percentage": None, "spike_limit_percentage": None},
        "batch": {"timeout": None, "send_batch_size": None, "send_batch_max_size": None, "metadata_keys": None,
                  "metadata_cardinality_limit": None},
    },
    "exporters": {
        "otlp": OTLP_GRPC,
        "otlphttp": {"endpoint": None, "traces_endpoint": None, "metrics_endpoint": None, "logs_endpoint": None,
                     "encoding": None, "compression": None, "headers": ANY, "timeout": None, "tls": TLS,
                     "sending_queue": QUEUE, "retry_on_failure": RETRY, "auth": ANY},
        "file": {"path": None, "format": None, "append": None, "flush_interval": None, "create_directory": None,
                 "directory_permissions": None, "compression": None, "encoding": None,
                 "rotation": {"max_megabytes": None, "max_days": None, "max_backups": None, "localtime": None},
                 "group_by": {"enabled": None, "resource_attribute": None, "max_open_files": None}},
        "loadbalancing": {"routing_key": None, "routing_attributes": None, "timeout": None,
                          "protocol": {"otlp": OTLP_GRPC},
                          "resolver": {"static": {"hostnames": None},
                                       "dns": {"hostname": None, "port": None, "interval": None, "timeout": None},
                                       "k8s": {"service": None, "ports": None, "timeout": None,
                                               "return_hostnames": None},
                                       "aws_cloud_map": ANY},
                          "retry_on_failure": RETRY, "sending_queue": QUEUE},
        "debug": {"verbosity": None, "sampling_initial": None, "sampling_thereafter": None},
        # exporter/clickhouseexporter/config.go
        "clickhouse": {"endpoint": None, "username": None, "password": None, "connection_params": ANY,
                       "database": None, "create_schema": None, "compress": None, "async_insert": None,
                       "logs_table_name": None, "traces_table_name": None, "metrics_tables": ANY, "ttl": None,
                       "table_engine": {"name": None, "params": None}, "cluster_name": None, "json": None,
                       "timeout": None, "sending_queue": QUEUE, "retry_on_failure": RETRY},
    },
}  # fmt: skip


def check_keys(value, schema, where):
    if schema is ANY or schema is None:
        return
    assert isinstance(value, dict), f"{where} must be a map"
    for key, sub in value.items():
        assert key in schema, f"{where}: unknown key {key!r} (accepted: {sorted(schema)})"
        check_keys(sub, schema[key], f"{where}.{key}")


def check_config(cfg):
    assert set(cfg) <= {"receivers", "processors", "exporters", "extensions", "connectors", "service"}
    for section in ("extensions", "receivers", "processors", "exporters"):
        for full_name, body in (cfg.get(section) or {}).items():
            kind = full_name.split("/", 1)[0]
            assert kind in SCHEMA[section], f"{section}: no component type {kind!r} in the contrib Collector"
            check_keys(body or {}, SCHEMA[section][kind], f"{section}.{full_name}")
    pipelines = cfg["service"]["pipelines"]
    assert set(pipelines) == {"traces"}
    for name, p in pipelines.items():
        for section in ("receivers", "processors", "exporters"):
            for ref in p.get(section, []):
                assert ref in cfg[section], f"pipeline {name} uses undefined {section[:-1]} {ref!r}"
        assert p["processors"][0] == "memory_limiter", "memory_limiter must come first"
    ml = cfg["processors"]["memory_limiter"]
    assert ml["check_interval"] and ml["spike_limit_mib"] < ml["limit_mib"]
    batch = cfg["processors"]["batch"]
    assert batch.get("send_batch_max_size", 0) >= batch.get("send_batch_size", 0)
    # one export request stays under 4 MiB with spans as large as callctx lets them be (256 KiB)
    assert batch["send_batch_max_size"] * MAX_SPAN <= 4 * 1024 * 1024
    for ext in cfg["service"].get("extensions", []):
        assert ext in cfg["extensions"], f"service uses undefined extension {ext!r}"
    assert "health_check" in cfg["service"].get("extensions", [])
    for name, body in cfg["exporters"].items():
        kind = name.split("/", 1)[0]
        if kind == "otlp":
            assert re.fullmatch(r"[\w.-]+:\d+", body["endpoint"]), "otlp (gRPC) endpoints are host:port"
        if kind == "otlphttp":
            assert body["endpoint"].startswith("http") and not body["endpoint"].endswith("/v1/traces")
        if kind == "file":
            assert body.get("format", "json") in ("json", "proto")
        if kind == "clickhouse":
            assert re.fullmatch(r"(tcp|http|https|clickhouse)://[\w.-]+:\d+(\?.*)?", body["endpoint"])
            assert body.get("traces_table_name", "otel_traces") == "otel_traces"  # what --store reads by default
            assert "${env:" in body.get("password", "${env:"), "the password comes from the environment"
        if kind == "loadbalancing":
            assert body["routing_key"] == "traceID"
            assert len(body["resolver"]) == 1
            assert "endpoint" not in body["protocol"]["otlp"]  # the resolver supplies the endpoints


def test_collector_config_is_valid_for_the_contrib_collector():
    cfg = yaml.safe_load((ROOT / "collector-config.yaml").read_text())
    check_config(cfg)
    exporters = cfg["service"]["pipelines"]["traces"]["exporters"]
    assert {e.split("/")[0] for e in exporters} == {"otlp", "otlphttp", "file"}
    assert cfg["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    assert cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")


def variant(start: str) -> dict:
    """The base config with the sections of a variant the file documents in comments (from
    ``start`` to the next ``# ---`` heading) in place of its own."""
    text = (ROOT / "collector-config.yaml").read_text()
    block = text[text.index(start) :]
    if "\n# ---" in block:
        block = block[: block.index("\n# ---")]
    lines = (line[2:] if line.startswith("# ") else line.lstrip("#") for line in block.splitlines())
    return {**yaml.safe_load(text), **yaml.safe_load("\n".join(lines))}


def test_the_clickhouse_variant_documented_in_the_file():
    cfg = variant("# exporters:\n#   clickhouse:")
    check_config(cfg)
    assert cfg["service"]["pipelines"]["traces"]["exporters"] == ["clickhouse", "otlp/jaeger"]
    ch = cfg["exporters"]["clickhouse"]
    assert ch["create_schema"] is True and ch["database"] == "otel" and not ch.get("json")


def test_the_load_balancing_variant_documented_in_the_file():
    cfg = variant("# exporters:\n#   loadbalancing:")
    check_config(cfg)
    lb = cfg["exporters"]["loadbalancing"]
    assert len(lb["resolver"]["static"]["hostnames"]) >= 2
    exporters = cfg["service"]["pipelines"]["traces"]["exporters"]
    assert "loadbalancing" in exporters and "file" in exporters  # the file is kept with several instances


def test_the_checker_refuses_what_the_collector_would():
    cfg = yaml.safe_load((ROOT / "collector-config.yaml").read_text())
    bad = {**cfg, "exporters": {**cfg["exporters"], "otlp/jaeger": {"endpoint": "jaeger:4317", "insecure": True}}}
    with pytest.raises(AssertionError, match="unknown key 'insecure'"):
        check_config(bad)
    bad = {**cfg, "exporters": {**cfg["exporters"], "jaeger": {"endpoint": "jaeger:14250"}}}
    with pytest.raises(AssertionError, match="no component type 'jaeger'"):
        check_config(bad)


def test_docker_compose_wires_the_three_services():
    compose = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"collector", "jaeger", "callctx"}
    assert services["collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["jaeger"]["image"].startswith("jaegertracing/jaeger:2.")
    assert any("collector-config.yaml" in v for v in services["collector"]["volumes"])
    assert "callctx serve" in services["callctx"]["command"]
    cfg = yaml.safe_load((ROOT / "collector-config.yaml").read_text())
    hosts = {body["endpoint"].split("//")[-1].split(":")[0] for body in cfg["exporters"].values() if "endpoint" in body}
    assert hosts <= set(services)  # every exporter points at a service of the compose file
