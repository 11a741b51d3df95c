"""Check solution.py against reference.py on every shape and the public seeds, and the stress cases on the
smallest shape (where the grader draws them too).

    python check.py            # all shapes
    python check.py --smoke    # the tiny shapes only

The official grading runs the same comparison code (kb_eval/compare.py) with more cases and hidden seeds,
in separate processes; passing here is necessary, not sufficient.
"""

import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kb_eval import guards
from kb_eval.compare import compare_outputs
from kb_eval.workspace import build_models, load, load_config, load_reference, parse_args


def cases(config, shapes, stress_shapes):
    for i, shape in enumerate(shapes):
        for seed in config["seeds"]:
            yield i, shape, seed, "base", 1.0, f"seed {seed}", config["tolerance"]
        for stress in config["stress"]:
            # an entry naming its own shapes is drawn there; the others on the smallest shape(s)
            if i not in (stress["shapes"] if stress.get("shapes") is not None else stress_shapes):
                continue
            dist = "base" if stress["distribution"] == "normal" else stress["distribution"]
            tolerance = {**config["tolerance"], **(stress.get("tolerance") or {})}
            label = stress.get("label") or f"stress {stress['name']}"
            yield i, shape, config["seeds"][0], dist, stress["scale"], label, tolerance


def run_case(reference, solution, config, device, case):
    index, shape, seed, dist, scale, _, tolerance = case
    ref_model, model = build_models(reference, solution, shape, index, device, config)
    inputs = reference.get_inputs(shape, seed, device, case=dist, scale=scale)
    pristine = guards.clone_inputs(inputs)
    pinned = guards.pin_backend_flags()
    with torch.no_grad():
        out = model(*inputs)
        guards.synchronize(device)
        problems = guards.inputs_changed(pristine, inputs) + guards.changed_flags(pinned)
        expected = ref_model(*pristine)
    result = compare_outputs(out, expected, tolerance)
    hook = getattr(reference, "compare", None)
    if result.ok and hook is not None:
        problems += list(hook(out, expected, pristine, tolerance) or [])
    return problems + result.messages


def main():
    args = parse_args(__doc__)
    config = load_config()
    guards.warm_math_library()  # before any multithreaded CPU math: see its docstring
    reference, solution = load_reference(config), load("solution")
    failures = 0
    shapes = config["smoke_shapes"] if args.smoke else config["shapes"]
    stress_shapes = range(len(shapes)) if args.smoke else config.get("stress_shapes", range(len(shapes)))
    for case in cases(config, shapes, stress_shapes):
        problems = run_case(reference, solution, config, torch.device(args.device), case)
        print(f"{'PASS' if not problems else 'FAIL'} shape {case[0]} {case[1]} {case[5]}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    print("PASS" if not failures else f"FAIL ({failures} cases)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
