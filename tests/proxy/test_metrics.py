"""GetMetrics' request parsing and the hardware figures it reports (proxy/metrics.py, hardware.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import CODE_TABLE, StrataError
from proxy.hardware import CpuUsage, memory, read_cpu_times
from proxy.metrics import metric_type


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ('{"metric_type": "system_info"}', "system_info"),
        ('{"req_type": "qc_tasks_all", "metric_type": "system_info"}', "qc_tasks_all"),  # req_type first
        ('{"metric_type": 3}', "3"),
    ],
)
def test_the_type_is_req_type_else_metric_type(request_text: str, expected: str) -> None:
    assert metric_type(request_text) == expected


@pytest.mark.parametrize("request_text", ["", "{}", "[1]", "not json", '{"type": "system_info"}'])
def test_a_request_without_a_type_is_milvus_error(request_text: str) -> None:
    with pytest.raises(StrataError) as err:
        metric_type(request_text)
    assert err.value.message == "metric_type or req_type not found in request"
    assert CODE_TABLE[err.value.code].milvus_code == 65535


def _proc(tmp_path: Path, stat: str, meminfo: str = "") -> Path:
    (tmp_path / "stat").write_text(stat)
    (tmp_path / "meminfo").write_text(meminfo)
    return tmp_path


def test_cpu_usage_is_the_busy_share_since_the_previous_reading(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n")
    times = read_cpu_times(proc)
    assert times is not None and (times.busy, times.total) == (200, 1000)
    usage = CpuUsage(proc)
    # 300 more ticks, 150 of them busy (user + system), 150 idle or waiting.
    (proc / "stat").write_text("cpu  200 0 150 800 150 0 0 0 0 0\n")
    assert usage.percent() == pytest.approx(50.0)
    assert usage.percent() == 0.0  # no time passed since


def test_memory_is_total_and_total_less_available(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "", "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    600 kB\n")
    assert memory(proc) == (1000 * 1024, 400 * 1024)
    assert memory(tmp_path / "missing") == (0, 0)
