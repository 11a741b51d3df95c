"""Where sweep jobs run: a local pool (one run per GPU at a time, or N CPU slots) or a Ray cluster.

Both backends take the same jobs and report each finished one through `on_done(job, summary)`; the sweep
decides about retries. The local pool runs every job in its own process with its GPU in CUDA_VISIBLE_DEVICES,
so the agent, its tools and the grader all see only that GPU.
"""

from __future__ import annotations

import io
import os
import queue
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Protocol

from kernelbench.errors import KernelBenchError
from kernelbench.harness.jobs import Job, JobSummary
from kernelbench.results.rundir import staged_run

OnStart = Callable[[Job], None]
OnDone = Callable[[Job, JobSummary], None]


class Backend(Protocol):
    """Where a sweep's jobs run (LocalPool, RayBackend): `run` takes jobs off the queue until it is empty,
    telling `on_start` and `on_done` of each."""

    def run(self, jobs: queue.Queue, on_start: OnStart, on_done: OnDone) -> None: ...


# ---------------------------------------------------------------------------------------------- local pool

def local_slots(device: str, gpus: list[int] | None, slots: int | None) -> list[dict[str, str]]:
    """One environment per slot: a GPU each on a CUDA machine, otherwise `slots` CPU slots."""
    if device == "cuda":
        ids = gpus if gpus is not None else list(range(_gpu_count()))
        if not ids:
            raise KernelBenchError("no GPU found for a cuda sweep",
                                   hint="run on a GPU machine, or set `device: cpu` and `shapes: smoke`")
        return [{"CUDA_VISIBLE_DEVICES": str(i)} for i in ids]
    return [{"CUDA_VISIBLE_DEVICES": ""} for _ in range(slots or 1)]


def _gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:
        return 0


class LocalPool:
    def __init__(self, slots: list[dict[str, str]], deadline: float | None = None):
        self.slots, self.deadline = slots, deadline
        self._procs: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()

    def run(self, jobs: queue.Queue, on_start: OnStart, on_done: OnDone) -> None:
        """Run jobs until the queue is drained and no job is in flight (on_done may enqueue retries)."""
        pending = _Pending(jobs, self.deadline)
        threads = [threading.Thread(target=self._worker, args=(env, pending, on_start, on_done), daemon=True)
                   for env in self.slots]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.2)
        except KeyboardInterrupt:
            pending.stop()
            self.terminate()
            raise

    def _worker(self, env: dict[str, str], pending: "_Pending", on_start: OnStart, on_done: OnDone) -> None:
        while (job := pending.take()) is not None:
            try:
                on_start(job)
                summary = self._run_child(job, env)
                on_done(job, summary)
            finally:
                pending.finish()

    def _run_child(self, job: Job, slot_env: dict[str, str]) -> JobSummary:
        with tempfile.TemporaryDirectory(prefix="kernelbench-job-") as tmp:
            spec = Path(tmp) / "job.json"
            spec.write_text(job.model_dump_json())
            env = {**os.environ, **slot_env}
            proc = subprocess.Popen([sys.executable, "-m", "kernelbench.harness.jobs", str(spec)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            with self._lock:
                self._procs[proc.pid] = proc
            out, err = proc.communicate()
            with self._lock:
                self._procs.pop(proc.pid, None)
        lines = out.strip().splitlines()
        if proc.returncode == 0 and lines:
            return JobSummary.model_validate_json(lines[-1])
        return JobSummary(error=f"job process exited with {proc.returncode}: {err.strip()[-2000:]}")

    def terminate(self) -> None:
        """SIGTERM every job process; each stops its agent and removes its half-written run."""
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


class _Pending:
    """A job queue that also counts jobs in flight, so workers wait for retries instead of quitting early."""

    def __init__(self, jobs: queue.Queue, deadline: float | None = None):
        self.jobs, self.in_flight, self.stopped, self.deadline = jobs, 0, False, deadline
        self.cond = threading.Condition()

    def take(self) -> Job | None:
        with self.cond:
            while not self.stopped:
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    return None  # --stop-after: start nothing new, let the runs in flight finish
                try:
                    job = self.jobs.get_nowait()
                    self.in_flight += 1
                    return job
                except queue.Empty:
                    if self.in_flight == 0:
                        self.cond.notify_all()
                        return None
                    self.cond.wait(timeout=0.5)
            return None

    def finish(self) -> None:
        with self.cond:
            self.in_flight -= 1
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


# ---------------------------------------------------------------------------------------------- Ray

def connected_ray(address: str | None):
    """Ray, connected to the cluster at `address` (else RAY_ADDRESS, else the local one) unless this process is
    connected already (a test's local instance)."""
    try:
        import ray
    except ImportError:
        raise KernelBenchError("the ray backend needs Ray", hint="pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        target = address or os.environ.get("RAY_ADDRESS") or "auto"
        try:
            ray.init(address=target, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise KernelBenchError(f"no Ray cluster at '{target}': {exc}",
                                   hint="start one (ray start --head) or pass --address HOST:PORT") from None
    return ray


class RayBackend:
    """Each job is a Ray task needing one GPU (or one CPU for CPU sweeps) on an existing cluster."""

    def __init__(self, address: str | None, device: str, deadline: float | None = None):
        self.deadline = deadline
        self.ray = ray = connected_ray(address)
        if device == "cuda":
            remote = ray.remote(max_retries=0, num_gpus=1)
        else:
            remote = ray.remote(max_retries=0, num_cpus=1)
        self.task = remote(_ray_job)

    def run(self, jobs: queue.Queue, on_start: OnStart, on_done: OnDone) -> None:
        in_flight: dict = {}
        try:
            while True:
                while not jobs.empty() and (self.deadline is None or time.monotonic() < self.deadline):
                    job = jobs.get_nowait()
                    on_start(job)
                    in_flight[self.task.remote(job.model_dump())] = job
                if not in_flight:
                    return
                ready, _ = self.ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    job = in_flight.pop(ref)
                    on_done(job, self._receive(job, ref))
        except KeyboardInterrupt:
            for ref in in_flight:
                self.ray.cancel(ref, force=True)
            raise

    def _receive(self, job: Job, ref) -> JobSummary:
        try:
            summary, archive = self.ray.get(ref)
        except Exception as exc:  # a task that died is reported as that job's harness error
            return JobSummary(error=f"ray task failed: {type(exc).__name__}: {exc}"[:2000])
        summary = JobSummary.model_validate(summary)
        if archive is None:
            return summary
        return unpack_run(summary, archive, Path(job.runs_dir))


def _ray_job(job_data: dict):
    from kernelbench.errors import KernelBenchError as _Error
    from kernelbench.harness.jobs import Job as _Job, JobSummary as _Summary, run_job_packed

    try:
        summary, archive = run_job_packed(_Job.model_validate(job_data))
    except _Error as exc:
        return _Summary(error=str(exc)).model_dump(), None
    return summary.model_dump(), archive


def unpack_run(summary: JobSummary, archive: bytes, runs_dir: Path) -> JobSummary:
    """Extract a packed run into a staging folder of `runs_dir` and rename it into place."""
    assert summary.run_id is not None  # the summary of a packed run is read from the run's result
    with staged_run(runs_dir, summary.run_id) as run:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(run.path, filter="data")
        inner = run.path / summary.run_id
        for item in inner.iterdir():
            item.rename(run.path / item.name)
        inner.rmdir()
        try:
            final = run.publish()
        except KernelBenchError as exc:  # the name is taken here: keep the run aside rather than lose it
            kept = run.keep_as_conflict()
            return summary.model_copy(update={"error": f"{exc} (kept in {kept})"})
        return summary.model_copy(update={"run_dir": str(final)})
