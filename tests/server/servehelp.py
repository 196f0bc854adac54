"""Helpers for the service tests: the demo question and a real `gearag serve` subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

#: The demo question the offline engine answers right (answer 1982, three gold passages).
DEMO_QUESTION = ("In what year did Stephen Curry's father join the team from which he started his college "
                 "basketball career?")
DEMO_ANSWER = "1982"
SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """A real ``gearag serve`` subprocess on 127.0.0.1."""

    def __init__(self, index: Path, env: dict[str, str] | None = None, *args: str) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        environ = {**os.environ, "PYTHONPATH": str(SRC), "GEARAG_PROGRESS": "0", **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gearag.cli", "serve", str(index), "--port", str(self.port), *args],
            env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gearag serve exited: {self.proc.communicate()[1]}")
            try:
                if httpx.get(self.base_url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("gearag serve did not come up within 60 s")

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: uvicorn's graceful shutdown
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err
