"""The web console of the operations port: ``/webui`` (see ``README.md``)."""
