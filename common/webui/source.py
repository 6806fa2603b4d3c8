"""What the web console shows: named views, each a JSON document built by the role that has the data.

The coordinator builds the cluster views from its own state
(``coordinator/console.py``); a proxy forwards those to the active coordinator
and adds its own slow requests (``proxy/console.py``). Each view is a dict of
JSON values; the page (``static/``) renders it.
"""

from __future__ import annotations

from typing import Any, Protocol

#: The views and what each holds (the keys of their documents are listed in ``common/webui/README.md``).
CLUSTER = "cluster"  # roles and their sessions, pchannels with their streaming node and term
COLLECTIONS = "collections"  # databases, collections: schema, load state, segments by state, rows
QUERYNODES = "querynodes"  # replicas, delegators, segments loaded per query node
JOBS = "jobs"  # compaction and import jobs, running and recent
SLOW_REQUESTS = "slow_requests"  # the proxy's last slow requests
VIEWS = (CLUSTER, COLLECTIONS, QUERYNODES, JOBS, SLOW_REQUESTS)

View = dict[str, Any]


class ViewUnavailable(Exception):
    """The view cannot be built here now (a standby coordinator, a coordinator out of reach); the
    message says why. The console answers 503 with it."""


class ConsoleSource(Protocol):
    @property
    def views(self) -> tuple[str, ...]:
        """The views this process serves, in ``VIEWS`` order."""
        ...

    async def view(self, name: str) -> View:
        """The view ``name`` (one of ``views``) as of now; raises ``ViewUnavailable``."""
        ...
