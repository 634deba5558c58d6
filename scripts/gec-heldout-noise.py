#!/usr/bin/env python3
"""gec-heldout-noise.py: the held-out error generator of the GEC evaluation.

Written separately from the training noise (app/gec/noise.c, `mtpe gec
noise`), with kinds the model never saw in training and other rates, so the
evaluation measures errors the model was not fitted to:

  transpose   two neighbouring letters of a word swapped ("Datei" -> "Daiet")
  dass        dass <-> das confused
  verbend     a verb ending changed: -t <-> -st, -en <-> -t ("wird" -> "wirst")
  dupword     a word written twice ("die die Datei")
  capverb     a lower-case word after the first capitalised ("wurde" -> "Wurde")
  ieei        "ie" written "ei" or the other way round ("wieder" -> "weider")
  hyphen      the hyphen of a compound dropped ("E-Mail" -> "EMail")
  sie         "sie" <-> "Sie" in the middle of a sentence

Protected tokens are never touched: anything with a digit or one of
% { } $ < > & @ / \\ = _ | # (placeholders, tags, entities, URLs, numbers).
A fraction --clean of lines (0.4) is copied; the others get 1 error, or 2
with probability 0.3.  Deterministic for a --seed.

Usage: gec-heldout-noise.py [--seed N] [--clean F] < clean.de > noisy.de
"""
import argparse
import random
import re
import sys

PROTECT = re.compile(r"[0-9%{}$<>&@/\\=_|#]")
EDGE = re.compile(r"^([\(\[\"'„“”‚‘’»«]*)(.*?)([\)\]\"'„“”‚‘’»«,.;:!?]*)$", re.S)
LETTERS = re.compile(r"^[A-Za-zÄÖÜäöüß]+(-[A-Za-zÄÖÜäöüß]+)*$")


def split_word(tok):
    """(lead, core, trail), or None when the token must not change."""
    if PROTECT.search(tok):
        return None
    m = EDGE.match(tok)
    lead, core, trail = m.group(1), m.group(2), m.group(3)
    if not core or not LETTERS.match(core):
        return None
    return lead, core, trail


def words(toks):
    return [i for i, t in enumerate(toks) if split_word(t)]


def e_transpose(rng, toks):
    cand = [i for i in words(toks) if len(split_word(toks[i])[1]) >= 4]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    pos = [j for j in range(1, len(core) - 2) if core[j] != core[j + 1] and
           core[j].isalpha() and core[j + 1].isalpha()]
    if not pos:
        return False
    j = rng.choice(pos)
    core = core[:j] + core[j + 1] + core[j] + core[j + 2:]
    toks[i] = lead + core + trail
    return True


def e_dass(rng, toks):
    cand = [i for i in words(toks) if split_word(toks[i])[1] in ("dass", "das")]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    toks[i] = lead + ("das" if core == "dass" else "dass") + trail
    return True


VERB_SWAP = {"wird": "wirst", "ist": "sind", "kann": "können", "konnte": "konnten",
             "wurde": "wurden", "hat": "haben", "muss": "müssen", "werden": "wird",
             "sind": "ist", "haben": "hat", "wurden": "wurde", "können": "kann"}


def e_verbend(rng, toks):
    cand = []
    for i in words(toks):
        core = split_word(toks[i])[1]
        if core in VERB_SWAP or (core.islower() and len(core) >= 5 and
                                 (core.endswith("t") or core.endswith("en"))):
            cand.append(i)
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    if core in VERB_SWAP:
        core = VERB_SWAP[core]
    elif core.endswith("en"):
        core = core[:-2] + "t"
    elif core.endswith("st"):
        core = core[:-2] + "t"
    else:
        core = core[:-1] + "st"
    toks[i] = lead + core + trail
    return True


def e_dupword(rng, toks):
    cand = [i for i in words(toks) if split_word(toks[i])[2] == "" and
            split_word(toks[i])[0] == ""]
    if not cand:
        return False
    i = rng.choice(cand)
    toks.insert(i + 1, toks[i])
    return True


def e_capverb(rng, toks):
    cand = [i for i in words(toks)[1:] if split_word(toks[i])[1][0].islower()]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    toks[i] = lead + core[0].upper() + core[1:] + trail
    return True


def e_ieei(rng, toks):
    cand = [i for i in words(toks) if "ie" in split_word(toks[i])[1][1:] or
            "ei" in split_word(toks[i])[1][1:]]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    j = max(core.find("ie", 1), core.find("ei", 1))
    core = core[:j] + core[j + 1] + core[j] + core[j + 2:]
    toks[i] = lead + core + trail
    return True


def e_hyphen(rng, toks):
    cand = [i for i in words(toks) if "-" in split_word(toks[i])[1]]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    toks[i] = lead + core.replace("-", "", 1) + trail
    return True


def e_sie(rng, toks):
    cand = [i for i in words(toks)[1:] if split_word(toks[i])[1] in ("sie", "Sie")]
    if not cand:
        return False
    i = rng.choice(cand)
    lead, core, trail = split_word(toks[i])
    toks[i] = lead + ("Sie" if core == "sie" else "sie") + trail
    return True


KINDS = [(e_transpose, 4), (e_dass, 1), (e_verbend, 2), (e_dupword, 2), (e_capverb, 2),
         (e_ieei, 2), (e_hyphen, 1), (e_sie, 1)]


def noisy(rng, line, clean):
    if rng.random() < clean:
        return line
    toks = line.split(" ")
    n = 2 if rng.random() < 0.3 else 1
    done = tries = 0
    while done < n and tries < 20:
        tries += 1
        fn = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
        if fn(rng, toks):
            done += 1
    return " ".join(toks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--clean", type=float, default=0.4)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8").rstrip("\n")
        sys.stdout.write(noisy(rng, line, a.clean) + "\n")


if __name__ == "__main__":
    main()
