"""`kernelbench run` and `kernelbench sweep`: agents on problems, once or as a grid."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from kernelbench.harness import DEFAULT_BUDGET_S

RUN_EXAMPLES = """examples:
  kernelbench run --agent claude:claude-opus-4-7@max --problem problems/04_kahan_softmax
  kernelbench run --agent codex:gpt-5.5@high --problem problems/01_fp8_gemm --trials 3 --budget 1800
  kernelbench run --agent scripted:eager --problem problems/04_kahan_softmax --device cpu --shapes smoke
  kernelbench run --agent opencode:openrouter/moonshotai/kimi-k2 --provider-order moonshotai --problem ...
  kernelbench run --agent claude:stand-in --stand-in tests/harness/standin/eager.yaml \
      --problem problems/04_kahan_softmax --device cpu --shapes smoke --budget 300      # a real CLI, offline
"""
STANDIN_EXAMPLES = """examples:
  kernelbench standin tests/harness/standin/eager.yaml --problem 04_kahan_softmax --port 18080
  kernelbench run --agent codex:gpt-5.5 --model-server http://127.0.0.1:18080 --problem problems/04_kahan_softmax \\
      --device cpu --shapes smoke
"""
SWEEP_EXAMPLES = """examples:
  kernelbench sweep sweeps/demo-h100.yaml                  # one run per GPU of this machine
  kernelbench sweep sweeps/demo-h100.yaml --resume         # carry on after Ctrl-C or a crash
  kernelbench sweep sweeps/demo-h100.yaml --resume --stop-after 480   # sessions of limited length
  kernelbench sweep sweeps/demo-h100.yaml --backend ray --address auto
"""


def register(subparsers) -> None:
    from kernelbench.eval.cli import add_device_options

    run = subparsers.add_parser("run", help="run one agent on one problem (sandboxed, budgeted, graded)",
                                description=__doc__, epilog=RUN_EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--agent", required=True, help="HARNESS:MODEL[@EFFORT], e.g. claude:claude-opus-4-7@max")
    run.add_argument("--problem", required=True, type=Path, help="problem folder, e.g. problems/01_fp8_gemm")
    run.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="wall-clock seconds (default 2700)")
    run.add_argument("--trials", type=int, default=1, help="independent runs, one after another")
    run.add_argument("--runs", type=Path, default=Path("runs"), help="runs folder (default runs/)")
    add_device_options(run)
    run.add_argument("--gpu", help="GPU profile key to record (default: detected)")
    run.add_argument("--no-sandbox", action="store_true", help="run without bubblewrap (recorded in result.json)")
    run.add_argument("--held-out", choices=["on", "off"], default="on",
                     help="the grading judges the problem's held-out cases (default on; off skips them and the "
                          "result says so)")
    run.add_argument("--sanitizer", choices=["on", "off"], default="off",
                     help="the CUDA grading runs compute-sanitizer's memcheck and racecheck over one call (default "
                          "off until the stage is validated on a GPU; off skips the stage and the result says so)")
    run.add_argument("--unshare-net", action="store_true", help="no network inside the sandbox")
    run.add_argument("--provider-order", help="comma-separated providers a routed model is pinned to")
    served = run.add_mutually_exclusive_group()
    served.add_argument("--stand-in", type=Path, metavar="POLICY",
                        help="point the CLI at a model stand-in started for the run, playing this policy file "
                             "(offline: no API key, no network beyond the loopback)")
    served.add_argument("--model-server", metavar="URL",
                        help="point the CLI at this model server (e.g. `kernelbench standin serve`) instead of "
                             "its provider's API")
    run.set_defaults(func=run_command)

    sweep = subparsers.add_parser("sweep", help="run agents × problems × trials from a sweep file",
                                  description="Run a sweep file; finished runs stay when interrupted.",
                                  epilog=SWEEP_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("sweep_file", type=Path, metavar="SWEEP.yaml")
    sweep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="where the runs go: this machine's GPUs one run each, or a Ray cluster")
    sweep.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS or auto)")
    sweep.add_argument("--resume", action="store_true",
                       help="skip runs that already exist (runs that ended in a harness error are set aside under "
                            "runs/.retried/ and run again)")
    sweep.add_argument("--stop-after", type=float, metavar="SECONDS",
                       help="start no new run after this long; finish those in flight (then carry on with --resume)")
    sweep.add_argument("--no-sandbox", action="store_true",
                       help="run every agent without bubblewrap (recorded in each result.json)")
    sweep.set_defaults(func=sweep_command)

    standin = subparsers.add_parser("standin", help="serve the model stand-in that agent CLIs talk to offline",
                                    description="Serve a model stand-in on the loopback: Anthropic Messages, OpenAI "
                                                "Responses and Chat Completions, Gemini generateContent, playing a "
                                                "policy file. Point a run at it with --model-server URL.",
                                    epilog=STANDIN_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    standin.add_argument("policy", type=Path, metavar="POLICY.yaml")
    standin.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    standin.add_argument("--problem", default="", help="problem id filled into the policy's {problem}")
    standin.add_argument("--log", type=Path, help="write the request log (JSONL) here when stopped")
    standin.set_defaults(func=standin_command)
    register_regrade(subparsers)


def run_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kernelbench.errors import KernelBenchError
    from kernelbench.eval.cli import resolve_device_options
    from kernelbench.harness.agentspec import AgentSpec
    from kernelbench.harness.jobs import JobSummary
    from kernelbench.harness.progress import describe
    from kernelbench.harness.runner import RunRequest, execute_run
    from kernelbench.problems.problem import open_problem

    if args.trials < 1:
        raise KernelBenchError(f"--trials {args.trials} runs nothing", hint="give --trials 1 or more")
    resolve_device_options(args)
    options = {"provider_order": args.provider_order.split(",")} if args.provider_order else {}
    console, worst = Console(stderr=True), 0
    problem = open_problem(args.problem)
    for trial in range(1, args.trials + 1):
        request = RunRequest(agent=AgentSpec.parse(args.agent), problem=problem, runs_dir=args.runs,
                             budget_s=args.budget, trial=trial, device=args.device, shapes=args.shapes,
                             held_out=args.held_out == "on", sanitizer=args.sanitizer == "on",
                             sandboxed=not args.no_sandbox,
                             network=not args.unshare_net, gpu=args.gpu,
                             options=options, stand_in=args.stand_in, model_server=args.model_server)
        with console.status(f"trial {trial}/{args.trials}: {args.agent} on {args.problem.name}"):
            summary = JobSummary.of_run(execute_run(request))
        console.print(f"trial {trial}: {describe(summary)}")
        print(summary.run_dir)
        worst = max(worst, 0 if summary.status == "PASS" else 1)
    return worst


def sweep_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kernelbench.errors import KernelBenchError
    from kernelbench.hardware import cuda_available
    from kernelbench.harness.sweep import Sweep, pending_jobs, run_sweep

    sweep = Sweep.load(args.sweep_file)
    if sweep.spec.device == "cuda" and not cuda_available():
        raise KernelBenchError("the sweep runs on cuda (device: cuda) and this machine has no CUDA GPU: run it on a "
                               "GPU machine, or set device: cpu and shapes: smoke", path=args.sweep_file)
    if args.no_sandbox:
        sweep.spec.sandbox = False
    finished = run_sweep(sweep, backend=args.backend, resume=args.resume, address=args.address,
                         stop_after=args.stop_after)
    errors = [s for s in finished if s.error]
    console = Console(stderr=True)
    for summary in errors:
        console.print(f"[red]harness error:[/red] {summary.error}")
    left = len(pending_jobs(sweep, resume=True)[0])
    console.print(f"{len(finished)} runs finished in {sweep.runs_dir}; {left} left"
                  + (" (carry on with --resume)" if left else ""))
    return 1 if errors else 0


def standin_command(args: argparse.Namespace) -> int:
    import time

    from kernelbench.harness.standin.policy import load_policy
    from kernelbench.harness.standin.server import StandIn

    server = StandIn(load_policy(args.policy, problem=args.problem or None), problem=args.problem, port=args.port)
    print(f"model stand-in playing {args.policy} at {server.start()} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if args.log:
            args.log.write_text(server.log_jsonl())
    return 0


REGRADE_EXAMPLES = """examples:
  F=.foreign/kernelbench.com
  kernelbench regrade $F/published-h100/leaderboard.json --solutions $F/public/runs/h100 \\
      --deck $F/benchmarks/hard/problems-h100 --runs runs --jobs 2   # every cell, over every GPU, 2 per GPU
  kernelbench regrade ... --gpus 1,2,3                                        # on these GPUs only
  kernelbench regrade ... --resume --stop-after 420                           # sessions of limited length
  kernelbench regrade ... --sanitizer on --timing off --runs /tmp/sanitized   # a survey of the sanitizer alone
  kernelbench regrade ... --only 05_topk_bitonic --device cpu --shapes smoke  # one column, on the CPU
the repository and commit the solutions come from are read from SOURCE and COMMIT files at the fetched copy's
root, or given with --repository and --commit; the run directories keep the solution's hash and path, not its text.
exit status: 0 when every cell was graded (whatever its outcome), 3 when --stop-after left cells for --resume."""


def register_regrade(subparsers) -> None:
    from kernelbench.eval.cli import add_device_options, stage_limit

    p = subparsers.add_parser("regrade", help="grade every cell of another benchmark's published board again, here",
                              epilog=REGRADE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("leaderboard", type=Path, help="the published board's leaderboard.json")
    p.add_argument("--solutions", type=Path, required=True, help="folder of <run_id>_solution.py.txt files")
    p.add_argument("--deck", type=Path, required=True, help="the board's problem folders (its deck)")
    p.add_argument("--runs", type=Path, help="where the run directories go (default runs/)")
    add_device_options(p)
    p.add_argument("--jobs", type=int, default=1,
                   help="gradings side by side on each GPU (correctness and builds in parallel; a grading's "
                        "counters and timing run with nothing else on its GPU)")
    p.add_argument("--gpus", type=gpu_list, metavar="0,1,...",
                   help="the GPUs to spread the cells over, one grading's stages on one GPU (default: every GPU "
                        "this process sees, from CUDA_VISIBLE_DEVICES or nvidia-smi)")
    p.add_argument("--resume", action="store_true", help="skip the cells already graded in --runs")
    p.add_argument("--stop-after", type=float, metavar="SECONDS", help="start no cell after this many seconds")
    p.add_argument("--only", action="append", default=[], metavar="RUN_ID|PROBLEM",
                   help="grade only these cells, in the order named")
    p.add_argument("--limit", action="append", default=[], metavar="STAGE=SECONDS", type=stage_limit,
                   help="a stage's time limit, as for kernelbench grade")
    p.add_argument("--counters", choices=("on", "off"), default="on",
                   help="the hardware-counter pass, as for kernelbench grade")
    p.add_argument("--timing", choices=("on", "off"), default="on",
                   help="off: no stage measures (no counter pass, no timing): correctness, the audits, the "
                        "sanitizer and held-out judging only, so no grading waits for the GPU's measuring turn; "
                        "for a survey of those stages over the board, into a --runs folder of its own (such a "
                        "grading is no board cell: it has no median)")
    p.add_argument("--sanitizer", choices=("on", "off"), default="off",
                   help="the sanitizer stage (compute-sanitizer's memcheck and racecheck over one call on the "
                        "smallest shape), as for kernelbench grade; off by default until validated on a GPU")
    p.add_argument("--own-checker", action="store_true",
                   help="also run the published benchmark's own checker (its problems' check.py) over each cell, "
                        "confined, and show its verdict here beside the board's and ours: a pass of its own over "
                        "the cells graded earlier that lack it, then over those graded now (never beside a "
                        "measurement)")
    p.add_argument("--own-benchmark", action="store_true",
                   help="also run the published benchmark's own timing script (its problems' benchmark.py) over "
                        "each cell that passed our checks, confined, one at a time on each GPU after every grading "
                        "of the call: its peak here splits a peak gap into the machine's part and the grader's")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local: this machine's GPUs (default); ray: one task per cell on a Ray cluster, each on a "
                        "GPU of its own (the board, solutions and deck at the same paths on every node)")
    p.add_argument("--address", help="the Ray cluster's address (default: RAY_ADDRESS, else auto)")
    p.add_argument("--repository", help="the solutions' repository URL (default: SOURCE beside them)")
    p.add_argument("--commit", help="the solutions' commit (default: COMMIT beside them)")
    p.set_defaults(func=regrade_command)


def gpu_list(text: str) -> list[str]:
    entries = [entry.strip() for entry in text.split(",")]
    if not entries or any(not entry for entry in entries) or len(set(entries)) != len(entries):
        raise argparse.ArgumentTypeError(f"{text!r}: give distinct GPUs separated by commas, e.g. 0,1,2,3")
    return entries


class RegradeProgress:
    """A rich progress bar over the cells, with the last cell's outcome and the time left at the cells' mean."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(TextColumn("regrade"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TimeRemainingColumn(), TextColumn("{task.description}"),
                                 console=Console(stderr=True))
        self.task = self.progress.add_task("", total=total)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        self.progress.__exit__(*exc)

    def start(self, job) -> None:
        self.progress.update(self.task, description=f"grading {job.cell.run_id}")

    def stage(self, line: str) -> None:
        """A grading's step (kernelbench.harness.regrade.CellTimeline): a line of its own into a log; on a terminal
        the bar's description, which the next step replaces."""
        if self.progress.console.is_terminal:
            self.progress.update(self.task, description=line.split("] ", 1)[-1])
        else:
            self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def done(self, job, result) -> None:
        peak = result.grading.peak_fraction
        self.progress.console.print(f"{result.status.value:7} {job.cell.run_id}"
                                    + (f"  peak {peak:.3f}" if peak is not None else "")
                                    + (f"  ({result.grading.reasons[0][:120]})" if result.grading.reasons else ""))
        self.progress.advance(self.task)


def _interruptible() -> None:
    """SIGINT raises KeyboardInterrupt here even where the starting process left it ignored or blocked (a job put
    in the background by a shell without job control ignores it): an interrupt is how a regrade is stopped
    cleanly, throwing away only the cell under way."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def regrade_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kernelbench.eval.cli import resolve_device_options
    from kernelbench.harness.regrade import CellTimeline, plan_cells, regrade_board
    from kernelbench.results.published import load_published_board

    resolve_device_options(args)
    if args.timing == "off" and args.runs is None:
        from kernelbench.errors import KernelBenchError

        raise KernelBenchError("--timing off writes gradings with no median, which are no board's cells",
                               hint="name a folder of their own with --runs (not runs/)")
    args.runs = args.runs or Path("runs")
    console = Console(stderr=True)
    _interruptible()
    cells = plan_cells(load_published_board(args.leaderboard), args.solutions, args.deck)
    with RegradeProgress(total=sum(c.opened is not None for c in cells)) as progress:
        regrade = regrade_board
        if args.backend == "ray":
            from kernelbench.harness.regrade_ray import regrade_board_on_ray

            regrade = functools.partial(regrade_board_on_ray, address=args.address)
        report = regrade(args.leaderboard, args.solutions, args.deck, args.runs, device=args.device,
                               shapes=args.shapes, resume=args.resume, jobs=args.jobs, gpus=args.gpus,
                               stop_after=args.stop_after,
                               limits=dict(args.limit), only=args.only, repository=args.repository,
                               commit=args.commit, counters=args.counters == "on",
                               timing=args.timing == "on", sanitizer=args.sanitizer == "on",
                               own_checker=args.own_checker, own_benchmark=args.own_benchmark,
                               progress=progress,
                               timeline=CellTimeline(progress.stage))
    for problem in report.no_problem:
        console.print(f"[yellow]no problem folder[/yellow] for column {problem} in {args.deck}: its cells are skipped")
    for run_id in report.no_solution:
        console.print(f"[yellow]no solution file[/yellow] for {run_id}: recorded as that cell's outcome (ERR)")
    counts: dict[str, int] = {}
    for status in report.statuses.values():
        counts[status] = counts.get(status, 0) + 1
    console.print(f"{len(report.graded)} cells graded ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}), "
                  f"{report.skipped} graded earlier, {report.remaining} left"
                  + (" (carry on with --resume)" if report.remaining else ""))
    return 3 if report.stopped and report.remaining else 0
