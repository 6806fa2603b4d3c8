"""etcd access: one metadata-store interface, sessions, the embedded etcd process."""
