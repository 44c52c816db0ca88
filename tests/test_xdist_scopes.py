"""The order and the scopes in which `make test`'s workers take the tests (tests/conftest.py):
the FrameNet test, golden 07 and golden 06 as one scope in that order, the book's three files
as one, the heaviest scopes first, every other file a scope of its own in collection order."""

from __future__ import annotations

from conftest import FIRST_SCOPES, scheduled_order, scope_of

IDS = [
    "tests/golden/01_surface_patterns.ipynb::Cell 0",
    "tests/golden/06_finetuning_drift.ipynb::Cell 0",
    "tests/golden/06_finetuning_drift.ipynb::Cell 1",
    "tests/golden/07_head_disabling.ipynb::Cell 0",
    "tests/golden/07_head_disabling.ipynb::Cell 1",
    "tests/test_atlas.py::test_a",
    "tests/test_book.py::test_b",
    "tests/test_book_browser.py::test_c[390px]",
    "tests/test_framenet_data.py::test_real",
    "tests/test_frontpage.py::test_d",
    "tests/test_ledger_stage.py::test_e",
    "tests/test_params.py::test_f",
]


def test_scopes_group_the_files_that_share_work():
    assert scope_of(IDS[1]) == ("framenet-goldens", 2)
    assert scope_of(IDS[3]) == ("framenet-goldens", 1)
    assert scope_of("tests/test_framenet_data.py::test_x") == ("framenet-goldens", 0)
    assert scope_of(IDS[7])[0] == scope_of(IDS[9])[0] == "book"
    assert scope_of(IDS[5]) == ("tests/test_atlas.py", 0)


def test_heaviest_scopes_first_and_each_group_in_its_order():
    order = scheduled_order(IDS)
    assert sorted(order) == sorted(IDS)
    assert order[:5] == ["tests/test_framenet_data.py::test_real",
                         "tests/golden/07_head_disabling.ipynb::Cell 0",
                         "tests/golden/07_head_disabling.ipynb::Cell 1",
                         "tests/golden/06_finetuning_drift.ipynb::Cell 0",
                         "tests/golden/06_finetuning_drift.ipynb::Cell 1"]
    assert order[5] == "tests/test_ledger_stage.py::test_e"
    assert order[6:9] == ["tests/test_book.py::test_b", "tests/test_book_browser.py::test_c[390px]",
                          "tests/test_frontpage.py::test_d"]
    # the rest keep collection order
    assert order[9:] == ["tests/golden/01_surface_patterns.ipynb::Cell 0",
                         "tests/test_atlas.py::test_a", "tests/test_params.py::test_f"]
    # every scope a group or a file; every scope of FIRST_SCOPES a real one
    assert all(s.startswith("tests/") or s in ("framenet-goldens", "book") for s in FIRST_SCOPES)
