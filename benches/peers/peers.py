"""A Python agent framework on the same mock and workload as benches/exec_overhead.rs: one
`list_dir` call per step, then an answer; the CPU of the framework's process (user +
system, from wait4), median of ROUNDS runs per size, and the slope per model call.

    cargo bench --bench exec_overhead --no-run     # builds the mock (exec_overhead --mock)
    python3 -m venv venv && venv/bin/pip install -r benches/peers/requirements.txt
    venv/bin/python benches/peers/peers.py target/release/deps/exec_overhead-HASH [--closing]

Not run in CI.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1, 10, 60]
ROUNDS = int(os.environ.get("ROUNDS", "5"))


def run_once(bench, steps, closing):
    """CPU ms of one run of `steps` steps against a fresh mock."""
    mock = subprocess.Popen(
        [bench, "--mock", str(steps)] + (["--closing"] if closing else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    url = mock.stdout.readline().strip()
    try:
        child = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "pydantic_ai_agent.py")],
            env={**os.environ, "MOCK_URL": url},
            cwd=HERE,
        )
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            sys.exit(f"the run failed ({status})")
        return (usage.ru_utime + usage.ru_stime) * 1000
    finally:
        mock.stdin.close()
        mock.wait()


def main():
    bench = sys.argv[1]
    closing = "--closing" in sys.argv
    runs = {steps: [] for steps in SIZES}
    for _ in range(ROUNDS):
        for steps in SIZES:
            runs[steps].append(run_once(bench, steps, closing))
    medians = {steps: statistics.median(cpu) for steps, cpu in runs.items()}
    label = "closing" if closing else "keep-alive"
    for steps, cpu in medians.items():
        print(f"pydantic-ai {label} {steps:>4} steps: cpu {cpu:8.1f} ms (median of {ROUNDS})")
    for a, b in zip(SIZES[1:], SIZES[2:]):
        slope = (medians[b] - medians[a]) / (b - a)
        print(f"pydantic-ai {label} cpu per model call {a}→{b}: {slope:.3f} ms")


main()
