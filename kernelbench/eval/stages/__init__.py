"""The named stages of a grading, in the order `kernelbench.eval.grade.grade_solution` calls them (each takes the
grading's plan and state, kernelbench.eval.grading):

1. `audits.lint`                 static lint of the solution and its sidecars
2. `correctness.check`           judge and check stages side by side: every case compared by the judge
3. `audits.problem_copy`         the grader's problem copy unchanged (rebuilt if a candidate stage edited it)
4. `audits.launches`             what the checked calls launched: forbidden libraries, FP8 tensor-core code
5. `audits.counters`             one hardware-counter pass over a timed call (CUDA, correct solutions)
6. `timing.bench`                the bench stage and the fresh stage that judges its kept calls
7. `audits.speed_of_light`       no shape faster than the hardware allows
8. `timing.baselines`            the problem's eager / compiled / SOTA medians beside the candidate's
9. `audits.templates`            the template files unchanged (restored if not)

This package module imports nothing, so each stage imports only what it uses.
"""
