"""Scalar and JSON-path indexes of sealed segments, for filters (see ``segcore/index/README.md``, "Scalar indexes")."""
