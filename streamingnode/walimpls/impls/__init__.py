"""WAL backends; each registers itself in ``walimpls.registry`` by name."""
