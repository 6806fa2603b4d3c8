"""Offline jobs on Spark: compaction and bulk import (see README.md in this package)."""
