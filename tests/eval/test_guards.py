import pytest
import torch

from kernelbench.eval.portable import guards


def test_flag_changes_are_caught_and_repinned():
    pinned = guards.pin_backend_flags()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.set_float32_matmul_precision("medium")
    changed = guards.changed_flags(pinned)
    assert any("allow_tf32" in c for c in changed) and any("matmul_precision" in c for c in changed)
    assert not torch.backends.cuda.matmul.allow_tf32 and guards.changed_flags(pinned) == []


def test_input_mutation_is_detected_bitwise():
    x = torch.randn(4, 4)
    pristine = guards.clone_inputs([x, 3])
    assert guards.inputs_changed(pristine, [x, 3]) == []
    x[1, 1] = -x[1, 1] if x[1, 1] != 0 else 1.0
    assert guards.inputs_changed(pristine, [x, 3]) == ["input 0 was modified by the candidate"]
    assert guards.inputs_changed(pristine, [pristine[0], 4]) == ["input 1 was modified by the candidate"]


def test_uninitialised_memory_reads_as_nan_on_cpu():
    guards.poison_free_memory(torch.device("cpu"))
    guards.fill_uninitialized(True)
    try:
        stale = torch.empty(1000)
        assert torch.isnan(stale).all()
        assert (torch.empty(10, dtype=torch.int32) == torch.iinfo(torch.int32).max).all()
    finally:
        guards.fill_uninitialized(False)


@pytest.mark.parametrize("visible, expected", [(None, "0"), ("3,4", "3"), ("GPU-1a2b, GPU-3c4d", "GPU-1a2b"),
                                               ("", ""), ("2", "2")])
def test_a_gpu_grading_sees_one_gpu(visible, expected, monkeypatch):
    from kernelbench.eval.process import worker_env

    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert worker_env("cuda")["CUDA_VISIBLE_DEVICES"] == expected
    assert worker_env("cpu")["CUDA_VISIBLE_DEVICES"] == ""
