"""A published solution set up as its authors had it (harness.rebuild): bundles split back into their files,
the CUTLASS headers put where a solution that includes them looks, and every step said."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbench.harness import rebuild

SIDECAR = "\n// a kernel\n__global__ void k() {}\n"


def _bundle(name: str = "kernels.cu", body: str = SIDECAR, size: int | None = None) -> str:
    rule = "# " + "=" * 66
    size = len(body) if size is None else size
    return (f"import torch\nSRC = open(__file__.replace('solution.py', '{name}')).read()\n\n\n{rule}\n"
            f"# ===== sidecar: {name} ({size} bytes, loaded by solution.py) =====\n{rule}\n\n{body}")


def test_a_bundle_splits_into_solution_and_sidecar():
    head, sidecars = rebuild.split_bundle(_bundle())
    assert head.endswith("read()\n") and "sidecar" not in head
    compile(head, "solution.py", "exec")
    assert sidecars == [("kernels.cu", SIDECAR)]


def test_a_plain_file_is_its_own_solution():
    assert rebuild.split_bundle("import torch\n") == ("import torch\n", [])


@pytest.mark.parametrize("name", ["solution.py", ".hidden.cu"])
def test_a_marker_naming_what_a_bundle_may_not_carry_is_refused(name):
    with pytest.raises(rebuild.RebuildError):
        rebuild.split_bundle(_bundle(name))


def test_a_sidecar_of_another_length_than_its_marker_says_is_refused():
    with pytest.raises(rebuild.RebuildError, match="the marker says 5 characters"):
        rebuild.split_bundle(_bundle(size=5))


def test_set_up_writes_the_files_and_says_what_it_did(tmp_path):
    published = tmp_path / "run_solution.py.txt"
    published.write_text(_bundle())
    folder = tmp_path / "cell"
    folder.mkdir()
    solution, adaptations, missing = rebuild.set_up(published, folder)
    assert (folder / "kernels.cu").read_text() == SIDECAR and solution.read_text().startswith("import torch")
    assert [a.what for a in adaptations] == [f"kernels.cu ({len(SIDECAR)} characters) unpacked beside solution.py "
                                             "from the published bundle"] and missing == []


def _set_up(tmp_path: Path, text: str):
    """A published file holding `text`, set up in a fresh folder: (the folder, adaptations, what is missing)."""
    published = tmp_path / "x_solution.py.txt"
    published.write_text(text)
    folder = tmp_path / "cell"
    folder.mkdir()
    _, adaptations, missing = rebuild.set_up(published, folder)
    return folder, adaptations, missing


def test_cutlass_is_put_where_the_solution_looks(tmp_path, monkeypatch):
    tree = tmp_path / "pkg" / "source"
    (tree / "include" / "cutlass").mkdir(parents=True)
    (tree / "include" / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    (tree / "tools" / "util" / "include" / "cutlass" / "util").mkdir(parents=True)
    (tree / "tools" / "util" / "include" / "cutlass" / "util" / "packed_stride.hpp").write_text("#pragma once\n")
    monkeypatch.setattr(rebuild, "cutlass_source", lambda: tree)
    folder, adaptations, missing = _set_up(tmp_path, 'SRC = r"""\n#include "cutlass/cutlass.h"\n"""\nHERE = "cutlass_src"\n')
    for name in ("cutlass", "third_party/cutlass", "cutlass_src"):
        assert (folder / name / "include" / "cutlass" / "cutlass.h").is_file()
        assert (folder / name / "tools" / "util" / "include" / "cutlass" / "util" / "packed_stride.hpp").is_file()
    assert not (folder / "cutlass_3.9").exists() and missing == []
    assert "CUTLASS headers from nvidia-cutlass==4.2.0.0" in adaptations[0].what


def test_cutlass_not_installed_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(rebuild, "cutlass_source", lambda: None)
    _, adaptations, missing = _set_up(tmp_path, 'SRC = "#include <cute/tensor.hpp>"\n')
    assert adaptations == [] and missing == ["the CUTLASS headers (nvidia-cutlass==4.2.0.0 is not installed)"]


def test_the_published_bundles_split_where_present():
    """The bundles of kernelbench.com's published board (where the fetched copy is here) split and compile."""
    runs = Path(__file__).resolve().parents[2] / ".foreign" / "kernelbench.com" / "public" / "runs" / "h100"
    if not runs.is_dir():
        pytest.skip("no fetched copy of kernelbench.com in .foreign/")
    bundles = [p for p in sorted(runs.glob("*_solution.py.txt")) if "# ===== sidecar:" in p.read_text()]
    assert bundles
    for path in bundles:
        head, sidecars = rebuild.split_bundle(path.read_text())
        compile(head, path.name, "exec")
        assert len(sidecars) == 1
