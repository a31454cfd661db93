"""--dedup minhash / normalized and --decontaminate through CleanPairs
(transforms/clean/near_dedup.py) on pairs from tests/data/ende-opennmt, with planted near
duplicates and test-set lines, against datasketch 2.0.0's MinHashLSH and references written
here."""

import os
import random
import re
import unicodedata

import pytest

from cleaning_helpers import near_duplicate_drops, run_clean_pairs
from repo_paths import DATA_DIR
from transforms.cleaning.config import parse_cleaning_config
from transforms.cleaning.near_duplicates import MinhashOptions

pytestmark = pytest.mark.slow  # Beam pipelines of several joins, ~10 s each on 2 cores
datasketch = pytest.importorskip("datasketch")
CORPUS = os.path.join(DATA_DIR, "ende-opennmt")


def _lines(name, n=None):
    with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
        lines = f.read().splitlines()
    return lines[:n] if n else lines


def _write(directory, name, pairs):
    src, tgt = directory / (name + ".en"), directory / (name + ".de")
    src.write_text("".join(p[0] + "\n" for p in pairs), encoding="utf-8")
    tgt.write_text("".join(p[1] + "\n" for p in pairs), encoding="utf-8")
    return str(src), str(tgt)


def _mutate(line, rng, fraction):
    """`line` with about `fraction` of its words replaced: a near duplicate at a Jaccard
    that falls with `fraction`."""
    words = line.split()
    for i in rng.sample(range(len(words)), max(1, int(len(words) * fraction))):
        words[i] = "zq%d" % rng.randrange(10 ** 6)
    return " ".join(words)


def _planted(n_bases=120, seed=5):
    """Real pairs and near duplicates of half of them, at several similarities (a fraction
    of the words replaced, or only punctuation added), some of those again, shuffled."""
    rng = random.Random(seed)
    sources, targets = _lines("train.en", 600), _lines("train.de", 600)
    bases = [(s, t) for s, t in zip(sources, targets) if len(s.split()) >= 12][:n_bases]
    pairs = list(bases)
    for i, (s, t) in enumerate(bases[:60]):
        fraction = rng.choice([0.0, 0.05, 0.1, 0.2, 0.35, 0.6])
        pairs.append((_mutate(s, rng, fraction) if fraction else s + " !",
                      _mutate(t, rng, fraction) if fraction else t))
        if i < 20:  # a near duplicate of the near duplicate: chains, groups of three
            pairs.append((_mutate(pairs[-1][0], rng, 0.05), _mutate(pairs[-1][1], rng, 0.05)))
    rng.shuffle(pairs)
    return pairs


def _norm(text):
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in text if unicodedata.category(c).startswith("L"))


def _shingles(pair, sides, size):
    out = []
    for side in sides:
        text = _norm(pair[side])
        tag = "%d:" % side if len(sides) > 1 else ""
        grams = [text] if len(text) <= size else [text[i:i + size]
                                                   for i in range(len(text) - size + 1)]
        out += [(tag + g).encode() for g in grams if g]
    return out


def datasketch_groups(pairs, options):
    """Groups (sets of 1-based lines, more than one) of `pairs` as datasketch finds them:
    every MinHashLSH candidate whose MinHash.jaccard reaches the threshold is an edge, the
    groups are the connected components."""
    hashes = {}
    lsh = datasketch.MinHashLSH(threshold=options.threshold, num_perm=options.permutations,
                                params=options.layout())
    for number, pair in enumerate(pairs, 1):
        grams = _shingles(pair, options.scope_sides, options.shingle)
        if grams:
            m = datasketch.MinHash(num_perm=options.permutations, seed=options.seed)
            m.update_batch(grams)
            hashes[number] = m
            lsh.insert(number, m)
    parent = {n: n for n in hashes}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for number, m in hashes.items():
        for other in lsh.query(m):
            if other != number and m.jaccard(hashes[other]) >= options.threshold:
                a, b = find(number), find(other)
                parent[max(a, b)] = min(a, b)
    groups = {}
    for n in hashes:
        groups.setdefault(find(n), set()).add(n)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def _groups_of(drops, where=("train", 0)):
    groups = {}
    for number, record in drops.get(where, {}).items():
        assert record["reason"] == "near_duplicate"
        first = record["duplicate_of"]["line"]
        groups.setdefault(first, {first}).add(number)
    return sorted(sorted(g) for g in groups.values())


@pytest.mark.parametrize("scope,threshold,shingle", [("pair", 0.8, 5), ("source", 0.5, 3),
                                                     ("target", 0.9, 5)])
def test_minhash_groups_equal_datasketch(tmp_path, scope, threshold, shingle):
    pairs = _planted()
    options = MinhashOptions(threshold=threshold, shingle=shingle, permutations=128)
    cleaning = parse_cleaning_config(None, None, "minhash", scope=scope, minhash=options)
    expected = datasketch_groups(pairs, cleaning.minhash)
    assert len(expected) > 10 and any(len(g) > 2 for g in expected) or scope != "pair"
    drops, _ = run_clean_pairs(tmp_path / "work", [("train",) + _write(tmp_path, "a", pairs)],
                               cleaning, chunk_lines=40)
    assert _groups_of(drops) == expected
    # every group keeps its first pair in input order
    assert all(min(g) not in drops[("train", 0)] for g in expected)


def test_minhash_is_the_same_for_any_chunking(tmp_path):
    pairs = _planted(80, seed=9)
    files = _write(tmp_path, "a", pairs)
    cleaning = parse_cleaning_config(None, None, "minhash", minhash=MinhashOptions(
        threshold=0.7, permutations=64, seed=3))
    one, _ = run_clean_pairs(tmp_path / "w1", [("train",) + files], cleaning, chunk_lines=7)
    other, _ = run_clean_pairs(tmp_path / "w2", [("train",) + files], cleaning, chunk_lines=500)
    assert one == other and _groups_of(one) == datasketch_groups(pairs, cleaning.minhash)


def test_minhash_in_bounded_rounds_equals_one_round_and_datasketch(tmp_path, monkeypatch):
    """The bands grouped in rounds of 100 entries (pair scope: 9 bands of ~260 pairs over
    chunks of 30 lines: tens of rounds) drop what one round of every band drops, and what
    datasketch finds; each chunk left one band run (and its signatures file). Two
    signature files open at most: the rounds reopen them (the pipeline runs in this
    process)."""
    from transforms.clean import near_dedup
    monkeypatch.setattr(near_dedup._Signatures, "OPEN_FILES", 2)
    pairs = _planted(100, seed=11)
    files = _write(tmp_path, "a", pairs)
    options = MinhashOptions(threshold=0.8, permutations=128)
    bounded, runs = near_duplicate_drops(tmp_path / "w1", [("train",) + files], options,
                                         round_entries=100, chunk_lines=30)
    whole, _ = near_duplicate_drops(tmp_path / "w2", [("train",) + files], options,
                                    round_entries=10 ** 9, chunk_lines=30)
    chunks = -(-len(pairs) // 30)
    assert bounded == whole and [name.rsplit(".", 1)[1] for name in runs].count("bands") == chunks
    groups = {}
    for split, index, number, reason, first in bounded:
        assert (split, index, reason, first[:2]) == ("train", 0, "near_duplicate", ["train", 0])
        groups.setdefault(first[2], {first[2]}).add(number)
    assert sorted(sorted(g) for g in groups.values()) == datasketch_groups(pairs, options)


def reference_normalized_dedup(pairs, sides):
    """What --dedup normalized drops, written plainly: a pair whose compared sides, each
    NFKC-lowercased with only its letters kept, equal an earlier pair's."""
    seen, dropped = {}, {}
    for number, pair in enumerate(pairs, 1):
        key = tuple(_norm(pair[side]) for side in sides)
        if key in seen:
            dropped[number] = seen[key]
        else:
            seen[key] = number
    return dropped


@pytest.mark.parametrize("scope,sides", [("pair", (0, 1)), ("source", (0,)),
                                         ("target", (1,))])
def test_normalized_dedup_equals_the_reference(tmp_path, scope, sides):
    rng = random.Random(3)
    pairs = list(zip(_lines("train.en", 200), _lines("train.de", 200)))
    for s, t in rng.sample(pairs, 40):
        pairs.append((rng.choice([s.upper(), s + " .", s.replace(" ", "  "), s + " 7"]),
                      rng.choice([t, t.lower(), "Ａ" + t, t + "!"])))
    rng.shuffle(pairs)
    cleaning = parse_cleaning_config(None, None, "normalized", scope=scope)
    drops, _ = run_clean_pairs(tmp_path / "work", [("train",) + _write(tmp_path, "a", pairs)],
                               cleaning, chunk_lines=50)
    expected = reference_normalized_dedup(pairs, sides)
    assert len(expected) >= 20
    assert {n: r["duplicate_of"]["line"] for n, r in drops[("train", 0)].items()} == expected
    assert {r["reason"] for r in drops[("train", 0)].values()} == {"duplicate"}


def test_decontamination_drops_the_planted_pairs_and_no_others(tmp_path):
    rng = random.Random(11)
    test_en, test_de = _lines("dev.en"), _lines("dev.de")
    (tmp_path / "flores.en").write_text("\n".join(test_en[:20]) + "\n", encoding="utf-8")
    (tmp_path / "wmt.de").write_text("\n".join(test_de[20:]) + "\n", encoding="utf-8")
    pairs = list(zip(_lines("train.en", 400), _lines("train.de", 400)))
    planted = {}  # position in pairs -> test file
    long_de = [line for line in test_de[20:] if len(re.findall(r"\w+", line)) >= 16]
    for i in range(12):  # a test line as a side, changed in case and punctuation
        pairs.insert(rng.randrange(len(pairs)), (test_en[i].upper() + " .", "x%d" % i))
    for i in range(6):  # 14 words of a test line (not its punctuation) in a train line
        words = re.findall(r"\w+", long_de[i])
        pairs.insert(rng.randrange(len(pairs)), ("y%d" % i, "Vorher " + " ".join(words[1:15])
                                                 + " nachher"))
    for number, (s, t) in enumerate(pairs, 1):
        if re.fullmatch(r"x\d+", t):
            planted[number] = "test_overlap:flores.en"
        if re.fullmatch(r"y\d+", s):
            planted[number] = "test_overlap:wmt.de"
    cleaning = parse_cleaning_config(
        None, None, decontaminate=(str(tmp_path / "flores.en"), str(tmp_path / "wmt.de")))
    dev = _write(tmp_path, "dev", list(zip(test_en[:5], test_de[:5])))
    drops, reports = run_clean_pairs(tmp_path / "work", [
        ("train",) + _write(tmp_path, "a", pairs), ("dev",) + dev], cleaning)
    assert len(planted) == 18
    assert {n: r["reason"] for n, r in drops[("train", 0)].items()} == planted
    assert ("dev", 0) not in drops  # only train pairs are decontaminated
    assert dict(reports[("train", 0)]["reasons"]) == {"test_overlap:flores.en": 12,
                                                      "test_overlap:wmt.de": 6}
