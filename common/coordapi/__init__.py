"""The coordinator as the other roles call it: one typed interface (``api.py``) and its gRPC client (``remote.py``).

Callers pass plain values and get the answer or a typed error (``common.errors``); the request
messages, the deadlines and the status checks live in the client. The answers are the
contract's messages (``protos/coordinator.proto``), named in ``api.py``, so a caller imports no
``coordinator_pb2``. The coordinator is always a process of its own, so there is no in-process
implementation; a test may give a role a fake of ``CoordinatorAPI``.
"""

from common.coordapi.api import CoordinatorAPI, LoadState
from common.coordapi.remote import RemoteCoordinator

__all__ = ["CoordinatorAPI", "LoadState", "RemoteCoordinator"]
