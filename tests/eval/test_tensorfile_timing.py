import json

import pytest
import torch

from kernelbench.eval.portable.timing import TimedOutputInvalid, time_function
from kernelbench.eval.tensorfile import ALIGN, MAGIC, load_tensors, save_tensors


def test_tensor_files_keep_dtype_shape_and_strides(tmp_path):
    items = [torch.randn(3, 4).t(), torch.arange(5), torch.randn(2, 3).to(torch.bfloat16), torch.tensor(2.5),
             torch.randn(2, 3, 4).permute(2, 0, 1), torch.randn(4, 1).expand(4, 3), torch.empty(0, 3)]
    save_tensors(tmp_path / "t.kbt", items, single=False)
    loaded, header = load_tensors(tmp_path / "t.kbt")
    assert not header.single
    for a, b in zip(items, loaded):
        assert torch.equal(a, b) and a.dtype == b.dtype
    assert loaded[0].stride() == (1, 4) and loaded[4].stride() == items[4].stride()
    assert header.tensors[5].dense is False and header.tensors[5].stride == [1, 0]


@pytest.mark.parametrize("name", ["t.kbt", "a_much_longer_name_for_the_header.kbt"])
def test_loaded_tensors_are_aligned_whatever_the_header_length(tmp_path, name):
    # CPU kernels given a float view at an odd address (the data used to start right after a header of any
    # length) sometimes returned slightly wrong values on their first call: timed outputs then disagreed with
    # the checked ones of an honest solution
    items = [torch.arange(3, dtype=torch.uint8), torch.randn(4, 5, dtype=torch.float64), torch.randn(7),
             torch.arange(3, dtype=torch.int16), torch.randn(2, 2, dtype=torch.complex128)]
    save_tensors(tmp_path / name, items, single=False)
    loaded, _ = load_tensors(tmp_path / name)
    for a, b in zip(items, loaded):
        assert torch.equal(a, b) and a.dtype == b.dtype
        assert b.data_ptr() % ALIGN == 0


def test_files_without_padding_still_load_aligned(tmp_path):
    x, y = torch.arange(3, dtype=torch.uint8), torch.randn(4, 5)
    meta = {"single": False, "tensors": [{"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                                          "stride": list(t.stride()), "dense": True, "device": "cpu"}
                                         for t in (x, y)]}
    header = json.dumps(meta).encode()
    raw = b"".join(t.view(torch.uint8).reshape(-1).numpy().tobytes() for t in (x, y))
    (tmp_path / "old.kbt").write_bytes(MAGIC + len(header).to_bytes(8, "little") + header + raw)
    loaded, _ = load_tensors(tmp_path / "old.kbt")
    assert torch.equal(loaded[0], x) and torch.equal(loaded[1], y)
    assert loaded[1].data_ptr() % y.element_size() == 0


def _raw_file(path, header: dict, data: bytes = b"") -> None:
    text = json.dumps(header).encode()
    path.write_bytes(MAGIC + len(text).to_bytes(8, "little") + text + data)


@pytest.mark.parametrize("header, data, says", [
    ({"single": True, "tensors": [{"dtype": "load", "shape": [1], "stride": [1], "dense": True,
                                   "device": "cpu"}]}, b"\0" * 8, "unknown dtype"),
    ({"single": True, "tensors": [{"dtype": "float32", "shape": [1000], "stride": [1], "dense": True,
                                   "device": "cpu"}]}, b"\0" * 8, "data ends before"),
    ({"single": True, "tensors": [{"dtype": "float32", "shape": [-4], "stride": [1], "dense": True,
                                   "device": "cpu"}]}, b"", "greater than or equal"),
    ({"single": True, "tensors": [], "comment": "an undeclared key"}, b"", "Extra inputs"),
    ({"single": [1], "tensors": []}, b"", "single"),
])
def test_a_tensor_file_a_candidate_wrote_is_validated_before_use(tmp_path, header, data, says):
    """The check stage writes its outputs in the candidate's process: the judge parses them as untrusted input."""
    _raw_file(tmp_path / "bad.kbt", header, data)
    with pytest.raises(ValueError, match=says):
        load_tensors(tmp_path / "bad.kbt")


def _sets():
    return [[torch.randn(32, 32, generator=torch.Generator().manual_seed(k))] for k in range(2)]


def test_every_timed_call_is_validated_and_samples_kept():
    sets = _sets()
    expected = [s[0] * 2 for s in sets]
    timing = time_function(lambda x: x * 2, sets, torch.device("cpu"), warmup=2, trials=7,
                           validate=lambda out, k: [] if torch.equal(out, expected[k]) else ["wrong"])
    assert len(timing.samples_ms) == 7 and timing.median_ms > 0 and timing.memo_probe == "ok"


def test_a_call_that_behaves_differently_later_is_caught():
    sets = _sets()
    calls = {"n": 0}

    def sniffing(x):
        calls["n"] += 1
        return x * 2 if calls["n"] <= 3 else torch.zeros_like(x)

    with pytest.raises(TimedOutputInvalid, match="input set"):
        time_function(sniffing, sets, torch.device("cpu"), warmup=2, trials=5,
                      validate=lambda out, k: [] if torch.equal(out, sets[k][0] * 2) else ["wrong"])


def test_the_in_place_probe_tells_a_kept_answer_from_a_wrong_one_and_passes_a_version_keyed_cache():
    sets = _sets()
    expected = [s[0] * 2 for s in sets]

    def validate(out, k):
        return [] if torch.allclose(out, expected[k]) else ["stale result"]

    def probe(fn):
        return time_function(fn, _sets(), torch.device("cpu"), warmup=2, trials=4, validate=validate).memo_probe

    def keyed(key):
        cache: dict = {}
        return lambda x: cache.setdefault(key(x), x * 2)

    assert probe(keyed(lambda x: (x.data_ptr(), x._version))) == "ok"  # every in-place write moves the counter
    assert probe(keyed(lambda x: x.data_ptr())).startswith("stale")  # its earlier answer, bit for bit
    kept: dict = {}

    def pointer_plan(x):  # a term kept under the pointer, applied to the values it is given: wrong, no kept answer
        first = kept.setdefault(x.data_ptr(), x.clone())
        return x * 2 + (first - x) * 0.5

    assert probe(pointer_plan).startswith("failed")


def test_a_slow_call_is_capped_by_the_shape_time_budget():
    """A call of ~60 ms with a 0.5 s budget: warmup stops after a few calls, at least 5 trials are timed."""
    import time

    def slow(x):
        time.sleep(0.06)
        return x + 1

    sets = [[torch.zeros(4)], [torch.ones(4)]]
    began = time.perf_counter()
    timing = time_function(slow, sets, torch.device("cpu"), warmup=10, trials=30, max_seconds=0.5)
    elapsed = time.perf_counter() - began
    assert 5 <= len(timing.samples_ms) < 30
    assert elapsed < 0.5 + 12 * 0.06 + 1.0  # the budget, a few warmup calls and the memo probe
    assert all(s >= 55 for s in timing.samples_ms)


def test_each_sample_is_the_device_interval_and_says_what_the_host_took():
    """The sample is the device's interval (its own events, or up to the device-wide synchronise when side-stream
    work ends later); the host's time issuing the call is kept beside it, and marks a host-bound call."""
    from kernelbench.eval.portable.timing import Sample, classify_sample

    assert classify_sample(0.50, 0.51, 0.02) == Sample(0.50, 0.02, False)   # the kernels' time
    assert classify_sample(0.05, 0.06, 0.30) == Sample(0.05, 0.30, False)   # launch overhead: kept, not counted
    assert classify_sample(0.05, 0.06, 0.30).host_bound
    assert classify_sample(0.10, 2.00, 0.02) == Sample(2.00, 0.02, True)    # work left on a side stream
    assert not classify_sample(0.10, 2.00, 0.02).host_bound


def test_a_cpu_timing_marks_no_sample_host_bound():
    sets = [[torch.randn(64, 64)] for _ in range(2)]
    timing = time_function(lambda x: x * 2, sets, torch.device("cpu"), warmup=2, trials=5)
    assert timing.host_bound_samples == 0 and len(timing.samples_ms) >= 5
