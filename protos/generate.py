"""Regenerate the Python code of the internal contracts.

Run from anywhere: ``python -m protos.generate [OUT_DIR]``. The generated
modules are committed so a fresh clone needs no generation step;
``tests/protos/test_generated_up_to_date.py`` fails when they drift from the
``.proto`` files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTOS = sorted((ROOT / "protos").glob("*.proto"))


def generate(out_dir: Path) -> None:
    """Write ``*_pb2.py``, ``*_pb2.pyi`` and ``*_pb2_grpc.py`` under ``out_dir/protos``."""
    include = Path(protoc.__file__).resolve().parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(p.relative_to(ROOT)) for p in PROTOS),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
