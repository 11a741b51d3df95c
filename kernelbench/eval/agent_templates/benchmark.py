"""Time solution.py (and the reference, eagerly) on every shape with the grader's own timing protocol.

    python benchmark.py

Same code as the official timing (kb_eval/timing.py): L2 flushed before every call, rotating input sets,
every timed output validated, median over the trials. Prints ms, TFLOP/s and GB/s per shape.
"""

import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kb_eval import guards
from kb_eval.compare import compare_outputs
from kb_eval.timing import time_function
from kb_eval.workspace import build_models, load, load_config, load_reference, parse_args


def time_shape(reference, module, config, index, shape, device):
    ref_model, model = build_models(reference, module, shape, index, device, config)
    sets = [reference.get_inputs(shape, seed, device) for seed in config["seeds"]]
    with torch.no_grad():
        expected = [ref_model(*s) for s in sets]
        t = config["timing"]
        return time_function(model, sets, device, warmup=t["warmup"], trials=t["trials"],
                             max_trials=t["max_trials"], stderr_target=t["stderr_target"],
                             graph_below_ms=t["cuda_graph_below_ms"], max_seconds=t.get("shape_seconds"),
                             validate=lambda out, k: compare_outputs(out, expected[k], config["tolerance"]).messages)


def main():
    args = parse_args(__doc__)
    config = load_config()
    guards.warm_math_library()  # before any multithreaded CPU math: see its docstring
    reference = load_reference(config)
    guards.pin_backend_flags()
    shapes = config["smoke_shapes"] if args.smoke else config["shapes"]
    work = config["smoke_work"] if args.smoke else config["work"]
    for index, shape in enumerate(shapes):
        for label in ("reference", "solution"):
            timing = time_shape(reference, load(label), config, index, shape, torch.device(args.device))
            seconds = timing.median_ms * 1e-3
            flops, nbytes = work[index]["flops"], work[index]["bytes"]
            # a problem without FLOP and byte formulas (another benchmark's) is timed without rates
            rates = (f", {flops / seconds / 1e12:.2f} TFLOP/s, {nbytes / seconds / 1e9:.1f} GB/s"
                     if flops is not None and nbytes is not None else "")
            print(f"shape {index} {shape} {label:9}: {timing.median_ms:.4f} ms (IQR {timing.iqr_ms:.4f}, "
                  f"{timing.method}){rates}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
