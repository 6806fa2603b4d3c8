"""gRPC edge of the streaming node."""
