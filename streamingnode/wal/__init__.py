"""The WAL as the streaming node serves it: a backend wrapped with time and ordering."""
