"""The committed generated code must match the .proto files."""

from __future__ import annotations

from pathlib import Path

from protos.generate import PROTOS, ROOT, generate


def test_generated_code_matches_protos(tmp_path: Path) -> None:
    generate(tmp_path)
    for proto in PROTOS:
        stem = proto.stem
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            fresh = (tmp_path / "protos" / f"{stem}{suffix}").read_text()
            committed = (ROOT / "protos" / f"{stem}{suffix}").read_text()
            assert fresh == committed, f"protos/{stem}{suffix} is stale: run `make protos`"
