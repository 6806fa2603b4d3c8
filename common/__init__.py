"""Strata's shared code, imported by every role and importing none: configuration, errors, etcd, storage,
the filter language, schemas, WAL messages.

gRPC's fork handlers are switched off for every Strata process (unless the
environment says otherwise). With them on, a process that has used gRPC and
then starts a child with ``subprocess.Popen`` can lose that child before it
runs: gRPC's post-fork handler restarts its epoll thread in the child, the
child closes inherited descriptors before ``exec`` (``close_fds``), and the
thread aborts on ``epoll_wait: Bad file descriptor`` (grpc/grpc#43055,
grpcio >= 1.81). The standalone launcher hit it starting the coordinator
after clearing sessions in etcd; a loaded machine made it 5 spawns in 750.
Strata never uses gRPC across a fork without ``exec``, which is all the
handlers are for. This must run before ``grpc`` is first imported.
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
