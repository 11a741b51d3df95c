"""The named stages of a grading, in the order `kernelbench.eval.grade.grade_solution` calls them (the first eleven
through `grade.run_stages`; each takes the grading's plan and state, kernelbench.eval.grading). Names are relative
to `kernelbench.eval`:

1. `stages.audits.lint`              static lint of the solution and its sidecars
2. `stages.correctness.check`        judge and check stages side by side: every case compared by the judge
3. `stages.audits.problem_copy`      the grader's problem copy unchanged (rebuilt if a candidate stage edited it)
4. `stages.audits.launches`          what the checked calls launched: forbidden libraries, FP8 tensor-core code
5. `stages.sanitizer.check`          compute-sanitizer memcheck and racecheck over one call (CUDA, correct solutions)
6. `stages.audits.counters`          one hardware-counter pass over a timed call (CUDA, correct solutions)
7. `stages.timing.bench`             the bench stage and the fresh stage that judges its kept calls
8. `stages.audits.speed_of_light`    no shape faster than the hardware allows, nor much faster than the
   kernels the counter pass measured for one call of it (`profiled_time`, a lead)
9. `stages.timing.baseline_medians`  the problem's eager / compiled / SOTA medians beside the candidate's
10. `stages.heldout.check`           the held-out cases, in a judge and check pair of their own, reported apart
11. `stages.heldout_timing.bench`    the held-out shapes judged right, timed in a bench stage of their own
12. `integrity.hooks.Guards.template_findings`  the template files unchanged (restored if not); called by
   `grade_solution` itself once the others have ended, however they ended

This package module imports nothing, so each stage imports only what it uses.
"""
