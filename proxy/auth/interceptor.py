"""The proxy's gate: authenticate every Milvus RPC, then check its privilege, before it runs.

Installed only with ``common.security.authorizationEnabled``. Per call:

1. the ``authorization`` metadata must name a user and its password (``authenticator.py``);
   otherwise gRPC UNAUTHENTICATED with Milvus's message, and the handler never runs;
2. the request's privilege (``rpc_privileges.py``) must be granted to one of the user's roles in
   the call's database (the request's ``db_name``, else the ``dbname`` metadata pymilvus sends,
   else ``default``) for the collection or user the request names (``policy.py``); otherwise gRPC
   PERMISSION_DENIED with Milvus's message ``PrivilegeInsert: permission deny to alice in the
   `default` database``, and the handler never runs, so nothing changes;
3. the handler runs with ``CURRENT_USER`` set (the RBAC RPCs read it).

A collection named through an alias is checked as the collection the alias points to (as Milvus
2.6 does), so a grant on ``c1`` covers calls that say ``alias_of_c1``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any

import grpc
import structlog
from pymilvus.grpc_gen import milvus_pb2

from common.errors import NotAuthenticated
from common.rbac.privileges import ANY, ROLE_PUBLIC, ObjectType
from proxy.auth.authenticator import Authenticator
from proxy.auth.policy import Access, permits
from proxy.auth.rpc_privileges import RPC_PRIVILEGES, Rule
from proxy.auth.state import SecurityStateCache

#: Resolves a collection name or alias to the collection's name (a name it cannot resolve, to itself).
Resolver = Callable[[str], Awaitable[str]]

#: The authenticated user of the RPC being served (None: authorization is off).
CURRENT_USER: ContextVar[str | None] = ContextVar("strata_current_user", default=None)
DEFAULT_DB = "default"
_SERVICE = "/" + milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].full_name

log = structlog.get_logger().bind(component="proxy-auth")


def _names(request: Any, rule: Rule) -> list[str]:
    if not rule.name_field:
        return [ANY]
    value = request
    for part in rule.name_field.split("."):
        value = getattr(value, part)
    names = [value] if isinstance(value, str) else list(value)
    return [n or ANY for n in names] or [ANY]


# Requests whose ``db_name`` is what they grant on, not where the call runs.
_GRANT_DB = frozenset({"OperatePrivilegeV2"})


def database_of(method: str, request: Any, metadata: dict[str, str]) -> str:
    """The request's ``db_name``, else the ``dbname`` metadata, else ``default``."""
    has_db = "db_name" in request.DESCRIPTOR.fields_by_name and method not in _GRANT_DB
    db = request.db_name if has_db else ""
    return db or metadata.get("dbname", "") or DEFAULT_DB


def denial(method: str, rule: Rule | None, user: str, db: str) -> str:
    privilege = f"Privilege{rule.privilege}" if rule is not None else method
    return f"{privilege}: permission deny to {user} in the `{db}` database"


class AuthInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: Authenticator, states: SecurityStateCache, resolve: Resolver | None = None) -> None:
        self._authn = authenticator
        self._states = states
        self._resolve = resolve

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        service, _, method = handler_call_details.method.rpartition("/")
        handler = await continuation(handler_call_details)
        if service != _SERVICE or handler is None:
            return handler  # health checks and unknown methods: not Milvus RPCs
        metadata = _metadata(handler_call_details.invocation_metadata)
        try:
            user = await self._authn.authenticate(metadata.get("authorization"))
        except NotAuthenticated as err:
            log.info("authentication refused", method=method, reason=err.message)
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED, err.message)
        except Exception as err:  # RPC boundary: a check that cannot be made refuses the call
            log.exception("authentication failed", method=method)
            return _refusal(handler, grpc.StatusCode.INTERNAL, f"authentication failed: {type(err).__name__}")
        if handler.unary_unary is None:
            # Streaming Milvus RPCs (replication) need no privilege; a new one with a rule is refused.
            if RPC_PRIVILEGES.get(method, Rule("", ObjectType.GLOBAL)) is not None:
                return _refusal(handler, grpc.StatusCode.PERMISSION_DENIED, denial(method, None, user, DEFAULT_DB))
            return handler
        return self._checked(handler, method, user, metadata)

    def allowed(
        self, method: str, user: str, request: Any, metadata: dict[str, str], real: dict[str, str] | None = None
    ) -> tuple[bool, str]:
        """Whether ``user`` may make this call, and the denial message if not; ``real`` maps the
        aliases the request names to their collections."""
        db = database_of(method, request, metadata)
        if method not in RPC_PRIVILEGES:
            return False, denial(method, None, user, db)
        rule = RPC_PRIVILEGES[method]
        if rule is None:
            return True, ""
        state = self._states.state
        if method == "SelectGrant" and request.entity.role.name in state.roles_of(user) | {ROLE_PUBLIC}:
            return True, ""  # one's own roles' grants, as in Milvus
        for name in _names(request, rule):
            name = (real or {}).get(name, name)
            access = Access(privilege=rule.privilege, object_type=rule.object_type, db_name=db, object_name=name)
            if not permits(state, user, access):
                return False, denial(method, rule, user, db)
        return True, ""

    async def _collections(self, method: str, user: str, request: Any) -> dict[str, str]:
        """The collections behind the names a request gives (only where a grant could depend on it)."""
        rule = RPC_PRIVILEGES.get(method)
        if self._resolve is None or rule is None or not rule.name_field or rule.object_type == ObjectType.USER:
            return {}
        state = self._states.state
        if permits(state, user, Access(privilege=rule.privilege, object_type=rule.object_type, db_name=ANY)):
            return {}  # root, admin, or a grant on everything: no lookup needed
        return {name: await self._resolve(name) for name in _names(request, rule) if name != ANY}

    async def authorize(self, method: str, user: str, request: Any, metadata: dict[str, str]) -> tuple[bool, str]:
        """Whether ``user`` may call ``method`` with ``request`` (aliases resolved), and the denial
        message if not; a check that cannot be made denies. The RESTful API calls it too."""
        try:
            real = await self._collections(method, user, request)
            return self.allowed(method, user, request, metadata, real)
        except Exception:  # RPC boundary: a check that cannot be made denies
            log.exception("privilege check failed", method=method)
            return False, denial(method, RPC_PRIVILEGES.get(method), user, database_of(method, request, metadata))

    def _checked(self, handler: grpc.RpcMethodHandler, method: str, user: str, metadata: dict[str, str]) -> Any:
        inner = handler.unary_unary

        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            ok, message = await self.authorize(method, user, request, metadata)
            if not ok:
                log.info("permission denied", method=method, user=user)
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, message)
            token = CURRENT_USER.set(user)
            try:
                return await inner(request, context)
            finally:
                CURRENT_USER.reset(token)

        return grpc.unary_unary_rpc_method_handler(
            checked,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _metadata(pairs: Iterable[tuple[str, str | bytes]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in pairs or ():
        if isinstance(value, str):
            out[key.lower()] = value
    return out


def _refusal(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same kind as ``handler`` that only answers ``code``."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message)
        yield  # pragma: no cover - abort raises

    des, ser = handler.request_deserializer, handler.response_serializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(refuse, request_deserializer=des, response_serializer=ser)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(refuse_stream, request_deserializer=des, response_serializer=ser)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse, request_deserializer=des, response_serializer=ser)
    return grpc.stream_stream_rpc_method_handler(refuse_stream, request_deserializer=des, response_serializer=ser)
