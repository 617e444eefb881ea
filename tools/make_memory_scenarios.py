"""Build the memory store's adversarial scenario suite with real sentence embeddings.

Writes (small, committed):

* ``python/fieldrank/data/memory_scenarios.json`` - the memories (text, tenant, age, importance,
  valence, tier, tags, entities, storage strength, recall history), the cues with their gold
  labels, the reference time, the model name and versions, and the sha256 of the .npy;
* ``python/fieldrank/data/memory_scenarios.npy`` - float32 (rows, 384), L2-normalised: one row
  per memory (``memories[i]["row"]``) followed by one row per cue (``cues[j]["row"]``).

The cases follow the adversarial evaluation proposed in ``shared/seeds/003_*.txt`` (the
"GioiaZheng" reply): (a) low similarity, high importance: an old durable constraint that shares
no word with the cue, against recent semantically close distractors (the truncation trap; the
first scenario is the write-up's own "never deploy to production on Fridays"); (b) high
similarity, low usefulness: recent chatter against a durable rule; (c) lexical match but wrong
entity or tenant; (d) graph-near but temporally stale; (e) emotionally salient but irrelevant.
Household/work filler (written for this file) fills both tenants; its ages and importances come
from a seeded generator and are stored in the JSON, so the suite is fully fixed.

Gold labels per cue: ``relevant`` (memory keys an ideal top-k holds), ``protected`` (the subset
that must survive candidate generation), ``distractors`` (must rank below every relevant
memory) and ``forbidden`` (must never be returned: other tenant).

Regenerate (from the repository root; a few seconds on CPU)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/embedvenv/bin/python tools/make_memory_scenarios.py

(``tools/embed_texts.py`` describes the embedding environment.) Check the committed files
without it (numpy only: sha256, unit norms, cosine ranks of each cue's memories)::

    python tools/make_memory_scenarios.py --check
"""

from __future__ import annotations

import datetime
import json
import os
import sys

import numpy as np

from make_demo_data import FILLER, generate_then_check, sha256_file, write_npy  # tools/ is sys.path[0] when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIR = os.path.join(REPO, "python", "fieldrank", "data")
JSON_NAME = "memory_scenarios.json"
NPY_NAME = "memory_scenarios.npy"
SEED = 20260116
#: The cues are asked at this instant (a Friday morning, UTC).
REFERENCE_TIME = datetime.datetime(2026, 1, 16, 10, 0, tzinfo=datetime.timezone.utc).timestamp()
MAIN_TENANT = "acme"
OTHER_TENANT = "globex"


def memory(key, text, *, case, role, age, importance, tenant=MAIN_TENANT, valence=0.0, tier="episodic",
           tags=(), entities=(), storage=1.0, idle=None, recalls=0):
    """One memory record; ``age``/``idle`` in days before the reference time."""
    return {
        "key": key, "text": text, "tenant": tenant, "case": case, "role": role,
        "age_days": float(age), "idle_days": float(age if idle is None else idle), "recall_count": recalls,
        "importance": importance, "valence": valence, "tier": tier, "tags": sorted(tags),
        "entities": sorted(entities), "storage_strength": storage,
    }


def scenario_memories():
    m = []
    # (a) the truncation trap: old durable constraints, lexically distant from the cue.
    m += [
        memory("a1_rule", "Never deploy to production on Fridays.", case="a", role="protected", age=95,
               idle=60, recalls=2, importance=1.0, tier="core", tags={"policy", "deploy"},
               entities={"production"}, storage=3.0),
        memory("a1_d1", "Yesterday we shipped the staging build to the test servers.", case="a",
               role="distractor", age=1, importance=0.3, tags={"deploy"}, entities={"staging"}),
        memory("a1_d2", "The latest build passed all the checks and is ready to ship.", case="a",
               role="distractor", age=2, importance=0.4, tags={"deploy"}),
        memory("a1_d3", "Ship the hotfix build once the smoke tests are green.", case="a", role="distractor",
               age=3, importance=0.35, tags={"deploy"}),
        memory("a1_d4", "The live servers were restarted after the build finished.", case="a",
               role="distractor", age=1, importance=0.3, entities={"production"}),
        memory("a1_d5", "Remember to tag the release before shipping the new build.", case="a",
               role="distractor", age=4, importance=0.35, tags={"deploy"}),
        memory("a1_d6", "Build 4.2 is live on the staging servers now.", case="a", role="distractor", age=2,
               importance=0.3, entities={"staging"}),
        memory("a2_allergy", "I'm severely allergic to peanuts; my EpiPen is in the blue bag.", case="a",
               role="protected", age=300, idle=120, recalls=3, importance=1.0, tier="core", tags={"health"},
               entities={"peanuts"}, storage=4.0),
        memory("a2_d1", "We ordered Thai food last Friday and the pad thai was great.", case="a",
               role="distractor", age=7, importance=0.3, tags={"food"}),
        memory("a2_d2", "Dinner tonight could be Thai or sushi, your call.", case="a", role="distractor",
               age=0.2, importance=0.2, tags={"food"}),
        memory("a2_d3", "The Thai place on Main Street delivers until ten.", case="a", role="distractor",
               age=10, importance=0.3, tags={"food"}),
        memory("a2_d4", "Ordering food for dinner again, too tired to cook.", case="a", role="distractor",
               age=2, importance=0.2, tags={"food"}),
        memory("a3_stairs", "Grandma can't manage steps any more, so every venue has to be step-free.",
               case="a", role="protected", age=200, idle=200, importance=0.9, tier="semantic",
               tags={"family"}, entities={"Grandma"}, storage=2.0),
        memory("a3_d1", "The birthday party should be on a Saturday evening.", case="a", role="distractor",
               age=5, importance=0.4, tags={"family"}),
        memory("a3_d2", "Last year's family party was at an Italian restaurant.", case="a", role="distractor",
               age=20, importance=0.3, tags={"family"}),
        memory("a3_d3", "The invite list for the birthday party is almost done.", case="a", role="distractor",
               age=3, importance=0.3, tags={"family"}),
        memory("a3_d4", "Booked a table for two at the new restaurant downtown.", case="a", role="distractor",
               age=8, importance=0.2),
    ]
    # (b) high similarity, low usefulness: recent chatter vs a durable rule.
    m += [
        memory("b1_rule", "Team rule: every Python file is formatted with black and indented with four spaces.",
               case="b", role="relevant", age=120, idle=10, recalls=6, importance=0.9, tier="core",
               tags={"style", "python"}, entities={"Python"}, storage=2.5),
        memory("b1_c1", "lol the tabs versus spaces fight in the Python channel went on all afternoon",
               case="b", role="distractor", age=0.3, importance=0.1, valence=0.3, entities={"Python"}),
        memory("b1_c2", "Someone asked about tabs or spaces for the new Python service again.", case="b",
               role="distractor", age=1, importance=0.15, entities={"Python"}),
        memory("b1_c3", "I prefer tabs personally, but whatever the new service uses is fine.", case="b",
               role="distractor", age=1, importance=0.1),
        memory("b2_rule", "Always get two approvals before merging anything into main.", case="b",
               role="relevant", age=150, idle=20, recalls=4, importance=0.95, tier="core",
               tags={"policy", "git"}, entities={"main branch"}, storage=2.5),
        memory("b2_c1", "Merged a small pull request into main this morning, felt good.", case="b",
               role="distractor", age=0.2, importance=0.15, valence=0.5, entities={"main branch"}),
        memory("b2_c2", "Is anyone around to look at my pull request?", case="b", role="distractor", age=1,
               importance=0.1),
        memory("b2_c3", "The pull request queue is really long today.", case="b", role="distractor", age=0.5,
               importance=0.1, valence=-0.2),
    ]
    # (c) lexical match but wrong entity or tenant.
    m += [
        memory("c1_right", "You can reach Dana on 555-0177.", case="c", role="relevant", age=40,
               importance=0.6, tags={"contacts"}, entities={"Dana"}),
        memory("c1_wrong_entity", "Dan's phone number is 555-0199.", case="c", role="distractor", age=5,
               importance=0.6, tags={"contacts"}, entities={"Dan"}),
        memory("c1_wrong_tenant", "Dana's phone number is 555-0142.", case="c", role="other_tenant", age=2,
               importance=0.6, tenant=OTHER_TENANT, tags={"contacts"}, entities={"Dana"}),
        memory("c2_right", "Atlas has 120k for the year, signed off by finance.", case="c", role="relevant",
               age=30, importance=0.7, tags={"budget"}, entities={"Atlas"}),
        memory("c2_wrong_entity", "The budget for project Apollo is 80k.", case="c", role="distractor", age=3,
               importance=0.6, tags={"budget"}, entities={"Apollo"}),
        memory("c2_wrong_tenant", "The budget for project Atlas is 300k.", case="c", role="other_tenant",
               age=1, importance=0.7, tenant=OTHER_TENANT, tags={"budget"}, entities={"Atlas"}),
    ]
    # (d) graph-near but temporally stale.
    m += [
        memory("d1_current", "Orion moved its storage from MySQL to Postgres last week.", case="d",
               role="relevant", age=7, importance=0.7, tags={"infra"}, entities={"Orion", "Postgres"}),
        memory("d1_stale", "Orion runs on MySQL 5.7 on the old rack.", case="d", role="distractor", age=400,
               importance=0.6, tags={"infra"}, entities={"Orion", "MySQL"}),
        memory("d1_graph1", "The Orion team lunch was at the taco place.", case="d", role="graph_near",
               age=250, importance=0.2, entities={"Orion"}),
        memory("d1_graph2", "Orion kickoff slides are in the shared drive.", case="d", role="graph_near",
               age=300, importance=0.3, entities={"Orion"}),
        memory("d1_graph3", "MySQL licences renew every March.", case="d", role="graph_near", age=380,
               importance=0.4, entities={"MySQL"}),
        memory("d2_current", "Priya is on call for payments this week.", case="d", role="relevant", age=2,
               importance=0.6, tags={"oncall"}, entities={"Priya", "payments"}),
        memory("d2_stale", "Marco was on call for payments over the holidays last year.", case="d",
               role="distractor", age=380, importance=0.5, tags={"oncall"}, entities={"Marco", "payments"}),
        memory("d2_graph1", "Marco likes his coffee black.", case="d", role="graph_near", age=200,
               importance=0.1, entities={"Marco"}),
        memory("d2_graph2", "Marco's desk moved to the third floor.", case="d", role="graph_near", age=210,
               importance=0.1, entities={"Marco"}),
    ]
    # (e) emotionally salient but irrelevant.
    m += [
        memory("e1_right", "The dentist appointment moved to 3:30 pm on Thursday.", case="e", role="relevant",
               age=3, importance=0.5, tags={"health"}, entities={"dentist"}),
        memory("e1_salient", "I was heartbroken when the vet said Biscuit had to be put down.", case="e",
               role="distractor", age=10, importance=0.8, valence=-0.95, entities={"Biscuit"}),
        memory("e1_salient_lexical", "I was terrified at the dentist last year, the worst pain of my life.",
               case="e", role="distractor", age=200, importance=0.8, valence=-0.9, entities={"dentist"}),
        memory("e2_right", "The quarterly report is due on the 15th.", case="e", role="relevant", age=6,
               importance=0.6, tags={"work"}),
        memory("e2_salient", "Best day ever, I got engaged on the beach!", case="e", role="distractor", age=5,
               importance=0.8, valence=0.98),
        memory("e2_salient_lexical", "I cried after the quarterly review, my manager was brutal.", case="e",
               role="distractor", age=90, importance=0.8, valence=-0.9, tags={"work"}),
    ]
    # The other tenant holds copies of some acme memories, word for word: a leak would show.
    for key in ("a1_rule", "a1_d2", "a2_allergy", "b1_rule", "e1_right"):
        source = next(x for x in m if x["key"] == key)
        copy = dict(source, key=f"{key}_globex", tenant=OTHER_TENANT, role="other_tenant")
        m.append(copy)
    return m


# The demo's household filler, then more of the same kind.
FILLER_MAIN = FILLER + [
    'The printer on the second floor is out of toner.',
    'Our team offsite is planned for the first week of March.',
    'The coffee machine in the kitchen makes a strange noise.',
    'I started learning Spanish on my phone during the commute.',
    'The quarterly all-hands got moved to the big auditorium.',
    'The kids want to try the new climbing gym downtown.',
    'Parking at the office is free after six pm.',
    'The heating bill was much higher this winter.',
    'We switched the team chat to a new tool last spring.',
    'I need to return the library books by Tuesday.',
    'The bakery on the corner closes early on Sundays.',
    'Our landlord is replacing the windows in April.',
    'The new intern starts on Monday and needs a laptop.',
    "I keep forgetting the wifi password at my parents' place.",
    'The cat knocked a glass off the table again.',
    'The gym membership renews automatically in June.',
    'Jamie recommended a podcast about ancient history.',
    'The elevator in our building is being serviced this week.',
    'My running shoes are worn out, time for a new pair.',
    'We had pancakes for breakfast on Sunday.',
    'The conference badge pickup opens at eight.',
    'I lost my umbrella on the train yesterday.',
    'The design review slides need a new colour palette.',
    'Our internet provider raised the monthly price.',
    'The tomatoes in the garden are finally ripening.',
    'I promised to call Aunt Rosa on her birthday.',
    'The office plants need watering twice a week.',
    'The marketing team wants a new logo by spring.',
    "The bike's back tyre has a slow puncture.",
    'The school bake sale needs two dozen cupcakes.',
    'I updated my laptop and now the trackpad feels different.',
    'The museum is free on the first Sunday of the month.',
    'We need more shelves for the garage.',
    'The weekly sync moved from Tuesday to Wednesday.',
    'My sister is visiting over the spring break.',
    'The washing machine finished but smells musty.',
    'The hiking trail by the lake reopened after the storm.',
    'Someone left a lunch box in the office fridge for weeks.',
    'The invoice for the new chairs still needs approval.',
    'I signed up for the photography class on Thursdays.',
    'The smoke detector in the hallway chirps at night.',
    'Our favourite pizza place changed its recipe.',
    'The annual performance reviews start next month.',
    'The train timetable changes in December.',
    'We are out of olive oil and coffee filters.',
    'The new monitor arrived with a dead pixel.',
    'I should back up the family photos this weekend.',
    'The soccer practice was cancelled because of rain.',
    'The espresso beans from the market were too bitter.',
    'The security training has to be finished by Friday.',
]
FILLER_OTHER = [
    "Globex quarterly targets were raised by ten percent.",
    "The Globex warehouse moves to the new site in May.",
    "Our Globex office has a new badge system.",
    "The Globex support queue doubled after the release.",
    "The Globex holiday party will be on a boat.",
    "Globex legal wants all contracts reviewed twice.",
    "The Globex sales kickoff is in Lisbon this year.",
    "Globex engineering adopted a four-day on-call rotation.",
    "The Globex cafeteria now serves breakfast.",
    "Globex finance closes the books on the third business day.",
    "The Globex data centre upgrade finished early.",
    "The Globex mobile app crossed a million downloads.",
]


def filler_memories():
    rng = np.random.default_rng(SEED)
    out = []
    for tenant, texts, prefix in ((MAIN_TENANT, FILLER_MAIN, "f"), (OTHER_TENANT, FILLER_OTHER, "g")):
        for i, text in enumerate(texts):
            age = float(np.round(rng.uniform(0.5, 365.0), 1))
            out.append(memory(
                f"{prefix}{i:02d}", text, case="filler", role="filler" if tenant == MAIN_TENANT else "other_tenant",
                age=age, idle=float(np.round(rng.uniform(0.0, age), 1)),
                importance=float(np.round(rng.uniform(0.1, 0.6), 2)),
                valence=float(np.round(rng.uniform(-0.3, 0.3), 2)), tenant=tenant,
            ))
    return out


def cue(key, text, *, case, relevant, protected=(), distractors=(), forbidden=(), tenant=MAIN_TENANT,
        cue_tags=(), cue_entities=(), cue_valence=None, description=""):
    return {
        "key": key, "case": case, "text": text, "tenant": tenant, "cue_tags": sorted(cue_tags),
        "cue_entities": sorted(cue_entities), "cue_valence": cue_valence, "relevant": list(relevant),
        "protected": list(protected), "distractors": list(distractors), "forbidden": list(forbidden),
        "description": description,
    }


def scenario_cues():
    return [
        cue("a1", "Ship the latest build to the live servers now.", case="a", relevant=["a1_rule"],
            protected=["a1_rule"], distractors=[], forbidden=["a1_rule_globex", "a1_d2_globex"],
            description="The write-up's truncation trap: a 95-day-old constraint against six recent "
                        "deploy memories; the cue shares no word with the constraint."),
        cue("a2", "Order some Thai food for dinner tonight.", case="a", relevant=["a2_allergy"],
            protected=["a2_allergy"], forbidden=["a2_allergy_globex"],
            description="A 300-day-old allergy against recent food chatter."),
        cue("a3", "Find a restaurant for the family birthday party next month.", case="a",
            relevant=["a3_stairs"], protected=["a3_stairs"],
            description="An accessibility constraint against recent party planning."),
        cue("b1", "Should the new Python service use tabs or spaces?", case="b", relevant=["b1_rule"],
            distractors=["b1_c1", "b1_c2", "b1_c3"], forbidden=["b1_rule_globex"],
            description="The team rule must outrank near-verbatim chatter."),
        cue("b2", "Can I merge my pull request into main right now?", case="b", relevant=["b2_rule"],
            distractors=["b2_c1", "b2_c2", "b2_c3"],
            description="The approval rule must outrank recent pull-request chatter."),
        cue("c1", "What is Dana's phone number?", case="c", relevant=["c1_right"],
            distractors=["c1_wrong_entity"], forbidden=["c1_wrong_tenant"], cue_entities={"Dana"},
            description="Lexical twins: another person (Dan) and another tenant's Dana."),
        cue("c2", "What is the budget for project Atlas?", case="c", relevant=["c2_right"],
            distractors=["c2_wrong_entity"], forbidden=["c2_wrong_tenant"], cue_entities={"Atlas"},
            description="Lexical twins: another project (Apollo) and another tenant's Atlas."),
        cue("d1", "Which database does Orion use now?", case="d", relevant=["d1_current"],
            distractors=["d1_stale", "d1_graph1", "d1_graph2", "d1_graph3"], cue_entities={"Orion"},
            description="The stale MySQL fact and Orion trivia are graph-near; the current fact must win."),
        cue("d2", "Who is on call for payments this week?", case="d", relevant=["d2_current"],
            distractors=["d2_stale", "d2_graph1", "d2_graph2"], cue_entities={"payments"},
            description="Last year's on-call and Marco trivia are graph-near but stale."),
        cue("e1", "What time is my dentist appointment?", case="e", relevant=["e1_right"],
            distractors=["e1_salient", "e1_salient_lexical"], cue_valence=0.0,
            forbidden=["e1_right_globex"],
            description="A grief memory and a frightening dentist memory are salient but do not answer."),
        cue("e2", "When is the quarterly report due?", case="e", relevant=["e2_right"],
            distractors=["e2_salient", "e2_salient_lexical"], cue_valence=0.0,
            description="An engagement and a painful review are salient but do not answer."),
    ]


def build_suite():
    memories = scenario_memories() + filler_memories()
    keys = [x["key"] for x in memories]
    if len(set(keys)) != len(keys):
        msg = "duplicate memory keys"
        raise SystemExit(msg)
    cues = scenario_cues()
    known = set(keys)
    for c in cues:
        for field in ("relevant", "protected", "distractors", "forbidden"):
            missing = set(c[field]) - known
            if missing:
                msg = f"cue {c['key']}: unknown {field} {sorted(missing)}"
                raise SystemExit(msg)
    for row, x in enumerate(memories):
        x["row"] = row
    for j, c in enumerate(cues):
        c["row"] = len(memories) + j
    return memories, cues


def generate():
    sys.path.insert(0, HERE)
    from embed_texts import embed, model_info

    memories, cues = build_suite()
    texts = [x["text"] for x in memories] + [c["text"] for c in cues]
    E = embed(texts)  # one call, fixed order
    if E.shape != (len(texts), 384) or E.dtype != np.float32:
        msg = f"unexpected embeddings {E.shape} {E.dtype}"
        raise SystemExit(msg)
    npy_path = write_npy(DATA_DIR, NPY_NAME, E)
    manifest = {
        "description": "fieldrank memory-store adversarial scenarios (truncation trap, chatter vs rule, "
                       "lexical twins, graph-near stale, emotionally salient) with real all-MiniLM-L6-v2 "
                       "embeddings.",
        "generator": "tools/make_memory_scenarios.py",
        "embeddings_file": NPY_NAME,
        "embeddings_sha256": sha256_file(npy_path),
        "rows": int(E.shape[0]),
        "layout": "one row per memory (memories[i].row), then one row per cue (cues[j].row)",
        "reference_time": REFERENCE_TIME,
        "reference_time_iso": datetime.datetime.fromtimestamp(REFERENCE_TIME, datetime.timezone.utc).isoformat(),
        "main_tenant": MAIN_TENANT,
        "cases": {
            "a": "low similarity, high importance: an old durable constraint sharing no word with the cue",
            "b": "high similarity, low usefulness: recent chatter must not outrank a durable rule",
            "c": "lexical match but wrong entity or tenant",
            "d": "graph-near but temporally stale",
            "e": "emotionally salient but irrelevant",
        },
        **model_info(),
        "memories": memories,
        "cues": cues,
    }
    with open(os.path.join(DATA_DIR, JSON_NAME), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")


def check_and_report():
    """Verify the committed files and print each cue's cosine ranks of its labelled memories."""
    with open(os.path.join(DATA_DIR, JSON_NAME), encoding="utf-8") as f:
        manifest = json.load(f)
    npy_path = os.path.join(DATA_DIR, manifest["embeddings_file"])
    sha = sha256_file(npy_path)
    if sha != manifest["embeddings_sha256"]:
        msg = f"sha256 mismatch: {sha} != {manifest['embeddings_sha256']}"
        raise SystemExit(msg)
    E = np.load(npy_path)
    if E.dtype != np.float32 or E.shape != (manifest["rows"], manifest["dim"]):
        msg = f"unexpected array {E.dtype} {E.shape}"
        raise SystemExit(msg)
    err = float(np.abs(np.linalg.norm(E.astype(np.float64), axis=1) - 1.0).max())
    print(f"{manifest['model']}: {E.shape[0]} x {E.shape[1]} float32, max |norm-1| = {err:.1e}, sha256 {sha[:12]}...")
    memories = manifest["memories"]
    by_key = {x["key"]: x for x in memories}
    for c in manifest["cues"]:
        own = [x for x in memories if x["tenant"] == c["tenant"]]
        cos = E[[x["row"] for x in own]].astype(np.float64) @ E[c["row"]].astype(np.float64)
        order = np.argsort(-cos, kind="stable")
        rank = {own[i]["key"]: r + 1 for r, i in enumerate(order)}
        labelled = c["relevant"] + c["distractors"]
        shown = ", ".join(f"{key} #{rank[key]} ({cos[own.index(by_key[key])]:.3f})" for key in labelled)
        print(f"[{c['key']}] {c['text']}\n    cosine rank among {len(own)}: {shown}")
    return manifest


def main(argv=None):
    return generate_then_check(__doc__.split("\n")[0], generate, check_and_report,
                               "only verify the committed files (numpy only)", argv)


if __name__ == "__main__":
    sys.exit(main())
