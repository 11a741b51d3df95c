"""What runs inside a grading's stage processes, one module per role (started by `kernelbench.eval.grade` as
`python -m kernelbench.eval.worker`, the job on stdin: `kernelbench.eval.protocol`).

- `judge` (trusted code only, `judge.py`): generates every case's inputs, hands them to the candidate as files,
  runs the reference on its own pristine copy, keeps the expected outputs (and fp64 oracles) in its memory, never
  on disk, then compares the candidate's saved outputs as they arrive. It runs beside the check stage.
- `check` (the candidate, `check.py`): runs the candidate on each case under the runtime guards and saves its
  outputs. The reference never runs in this process, so its results cannot be found in memory.
- `bench` (a candidate, or the eager / compiled / SOTA line, `bench.py`): times with every timed output validated
  (`timed_judge.py`), a few windows of timed calls audited by kernel name (`audit.py`).
- `fresh` (trusted code only, `fresh.py`): judges the timed calls the bench stage kept on fresh inputs.

`entry.py` reads the job, prepares the stage (the problem loaded, the candidate stages armed by `arming.py`) before
any candidate code is imported, runs the role and writes the signed reply. Whatever the candidate prints or exits
with is ignored. This package module imports nothing, so a role imports only what it uses.
"""
