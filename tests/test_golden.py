"""The golden recordings of ``tests/golden/`` (``tools/golden.py``) reproduced bit for bit.

The suite runs the tool's ``--quick`` subset (every preset and every way of querying it on two
LoCoMo conversations per embedding set; the store records at 1k memories): about 20 s of CPU.
``python tools/golden.py compare`` runs everything (see ``tests/golden/README.md``).
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import LOCOMO_DIR, load_tool

golden = load_tool("golden")


def _recorded(part: str) -> dict:
    recorded = json.loads((golden.GOLDEN_DIR / f"{part}.json").read_text(encoding="utf-8"))
    variant = golden.header()["kernel_variant"]
    if recorded["header"]["kernel_variant"] != variant:
        pytest.skip(f"{part} recorded with kernel variant {recorded['header']['kernel_variant']!r}, this build "
                    f"runs {variant!r} (float bits may differ)")
    return recorded


def test_locomo_rankings_equal_the_recording(locomo_dir):
    lines = golden.compare_locomo(_recorded("locomo"), locomo_dir, golden.QUICK_CONVERSATIONS, verbose=False)
    assert not lines, "rankings moved (python tools/golden.py compare says more):\n" + "\n".join(lines)


def test_store_records_equal_the_recording():
    data_dir = LOCOMO_DIR if (LOCOMO_DIR / "turns.jsonl").exists() else None  # adversarial sections need it
    lines = golden.compare_store(_recorded("store"), golden.QUICK_STORE_SIZES, data_dir, verbose=False)
    assert not lines, "store records moved (python tools/golden.py compare says more):\n" + "\n".join(lines)


def test_a_moved_bit_is_reported_with_its_question_and_what_moved():
    a, b = 1.0, float.fromhex("0x1.0000000000001p+0")  # one ulp apart
    assert golden._sha(a) != golden._sha(b)
    before = {"digest": "x", "questions": ["aaaaaa" "bbbbbb" "cccccc"] * 3}
    after = {"digest": "y", "questions": [*before["questions"][:2], "aaaaaa" "bbbbbf" "cccccc"]}
    recorded = {"records": {"cosine/batch@10": {"conversations": {"4": before}}}}
    now = {"records": {"cosine/batch@10": {"conversations": {"4": after}}}}
    (line,) = golden._locomo_differences(recorded, now)
    assert line == "cosine/batch@10: conversation 4: question 2 of the conversation (in question order) differs in scores"


def test_store_digests_label_records_and_change_with_any_field():
    records = [("recall", "hybrid", "[]", ("float", (0.5).hex())), ("why_not", "full", 7, ("reason", "outranked"))]
    digests = golden.store_digests(records)
    assert list(digests["records"]) == ["00000 recall hybrid []", "00001 why_not full 7"]
    moved = golden.store_digests([records[0], ("why_not", "full", 7, ("reason", "returned"))])
    assert moved["digest"] != digests["digest"]
    assert list(moved["records"].values())[0] == list(digests["records"].values())[0]


def test_another_kernel_variant_is_refused():
    with pytest.raises(golden.GoldenMismatch, match="kernel variant"):
        golden._check_header({**golden.header(), "kernel_variant": "no-such-variant"}, "locomo")
