"""gRPC edge of the query node."""
