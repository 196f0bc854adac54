"""A bounded local load test of ``gearag serve``: concurrent clients, fixed duration, 127.0.0.1 only.

    python benchmarks/load_serve.py INDEX_DIR QUESTIONS [--clients 8] [--seconds 30] [--rounds 2]

Starts ``gearag serve INDEX_DIR`` on a free 127.0.0.1 port (never another
address), then for each phase — ``POST /v1/retrieve`` with ``syncge`` and
``POST /v1/ask`` with ``gear`` — runs ``--clients`` threads that send
questions back to back for ``--seconds`` seconds. Reports per phase the
requests, errors (any status but 200, or a failed connection), p50/p99
latency and throughput, and the server's resident memory at the start
(after one warm-up request per phase) and at the end, split into heap
(``RssAnon``) and memory-mapped index files (``RssFile``, pages of the
index read so far, which the kernel may drop), so growth is visible;
``--rounds 2`` repeats the phases to show the steady state.
The server is stopped (SIGTERM) when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

SRC = Path(__file__).resolve().parents[1] / "src"
HOST = "127.0.0.1"
PHASES = (("retrieve", "syncge", 10), ("ask", "gear", 5))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of ``pid`` in MB: ``VmRSS`` (all), ``RssAnon`` (heap) or ``RssFile`` (mapped index files)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory(pid: int) -> dict[str, float]:
    return {name: round(rss_mb(pid, field), 1) for name, field in
            (("rss_mb", "VmRSS"), ("anon_mb", "RssAnon"), ("file_mb", "RssFile"))}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_server(index: Path, port: int, clients: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "GEARAG_PROGRESS": "0"}
    env.pop("GEARAG_API_KEY", None)
    cmd = [sys.executable, "-m", "gearag.cli", "serve", str(index), "--host", HOST, "--port", str(port),
           "--max-concurrency", str(clients), "--no-access-log", "--request-timeout", "120"]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gearag serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://{HOST}:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.terminate()
    raise SystemExit("gearag serve did not come up within 120 s")


def run_phase(base: str, endpoint: str, method: str, top_k: int, questions: list[str], clients: int,
              seconds: float, pid: int) -> dict[str, Any]:
    url = f"{base}/v1/{endpoint}"
    with httpx.Client(timeout=180) as warm:  # loads the method's artefacts before timing
        warm.post(url, json={"question": questions[0], "method": method, "top_k": top_k}).raise_for_status()
    mem_start = memory(pid)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(n: int) -> None:
        i = n
        with httpx.Client(timeout=180) as http:
            while time.monotonic() < stop_at:
                question = questions[i % len(questions)]
                i += clients
                t0 = time.perf_counter()
                try:
                    r = http.post(url, json={"question": question, "method": method, "top_k": top_k})
                    ok, why = r.status_code == 200, f"{r.status_code} {r.text[:120]}"
                except httpx.HTTPError as exc:
                    ok, why = False, repr(exc)
                elapsed = time.perf_counter() - t0
                with lock:
                    (latencies.append(elapsed) if ok else errors.append(why))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    return {
        "endpoint": f"POST /v1/{endpoint}", "method": method, "top_k": top_k, "clients": clients,
        "seconds": round(wall, 1), "requests": len(latencies) + len(errors), "errors": len(errors),
        "error_samples": errors[:3],
        "p50_ms": round(1000 * percentile(latencies, 0.50), 1), "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
        "mean_ms": round(1000 * statistics.fmean(latencies), 1) if latencies else None,
        "per_second": round(len(latencies) / wall, 2), "memory_start": mem_start, "memory_end": memory(pid),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path)
    parser.add_argument("questions", type=Path, help="a question file gearag reads (2Wiki, MuSiQue, JSONL, ...)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the phases this many times (a later round shows steady-state memory)")
    parser.add_argument("--out", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600 or not 1 <= args.rounds <= 5:
        parser.error("--clients must be 1..64, --seconds 1..600 and --rounds 1..5 (a bounded local test)")
    sys.path.insert(0, str(SRC))
    from gearag.data import load_questions

    questions = [q.question for q in load_questions(args.questions)]
    port = free_port()
    proc = start_server(args.index, port, args.clients)
    report: dict[str, Any] = {"index": str(args.index), "questions": len(questions), "cpus": os.cpu_count()}
    try:
        report["memory_boot"] = memory(proc.pid)
        report["phases"] = [{"round": r + 1, **run_phase(f"http://{HOST}:{port}", endpoint, method, top_k, questions,
                                                          args.clients, args.seconds, proc.pid)}
                            for r in range(args.rounds) for endpoint, method, top_k in PHASES]
        report["memory_final"] = memory(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 1 if any(p["errors"] for p in report["phases"]) else 0


if __name__ == "__main__":
    sys.exit(main())
