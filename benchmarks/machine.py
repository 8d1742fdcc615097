"""What a benchmark ran on, in the words its table prints: the CPU's model name and the cores this
process may use (or the GPU's name)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu() -> str:
    name = platform.processor() or platform.machine()
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return f"{name}, {len(os.sched_getaffinity(0))} cores"
