"""Logging on a full disk drops lines instead of raising into the code that logs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from common.logging import LineLogger
from tests.harness import REPO


def test_a_role_that_logs_to_a_full_disk_keeps_running() -> None:
    code = (
        "import structlog\n"
        "from common.logging import configure_logging\n"
        "configure_logging('test')\n"
        "for i in range(100):\n"
        "    structlog.get_logger().bind(component='c').error('still here', i=i)\n"
        "print('survived')\n"
    )
    with open("/dev/full", "wb") as full:  # every write fails with ENOSPC
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            stderr=full,
            stdout=subprocess.PIPE,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 0 and done.stdout.strip() == b"survived"


def test_the_first_line_that_gets_through_says_how_many_were_lost(tmp_path: Path) -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        logger = LineLogger(fd)
        logger.msg("lost one")
        logger.error("lost two")
        assert logger.dropped == 2
        with open(tmp_path / "log", "wb") as f:
            os.dup2(f.fileno(), fd)  # the disk has room again
        logger.info("back")
        assert logger.dropped == 0
    finally:
        os.close(fd)
    assert (tmp_path / "log").read_text().splitlines() == [
        "log_lines_dropped=2 (the log could not be written)",
        "back",
    ]
