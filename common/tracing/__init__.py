"""OpenTelemetry tracing of the roles (Milvus's ``trace.*`` settings); see README.md here."""

from common.tracing.setup import (
    client_interceptors,
    install,
    provider_for,
    server_interceptors,
    uninstall,
    use_provider,
)
from common.tracing.spans import (
    MESSAGE_TRACE_KEY,
    enabled,
    extract,
    inject,
    linked_span,
    message_spans,
    span,
    stamp_messages,
    traced,
)

__all__ = [
    "MESSAGE_TRACE_KEY",
    "client_interceptors",
    "enabled",
    "extract",
    "inject",
    "install",
    "linked_span",
    "message_spans",
    "provider_for",
    "server_interceptors",
    "span",
    "stamp_messages",
    "traced",
    "uninstall",
    "use_provider",
]
