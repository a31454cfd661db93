"""Builds tests/data/noisy-enzh/ from real pairs with the noise web-crawled corpora carry.

Run from the repository root: `python tests/data/noisy-enzh/make_noisy.py`. Deterministic
(seeded); the files it writes are committed, this script says how they were made.

Clean pairs: tests/data/enzh-mlqe-pe (English-Chinese Wikipedia, CC0-1.0). Wrong-language
lines: tests/data/ende-opennmt's German side (MIT). Mixed in, each at a few per cent: exact
duplicate pairs (within a file, across the two train files, and dev pairs copied into train),
pairs sharing only the source, case and punctuation variants, trailing-space variants, German
or English on the wrong side, HTML markup (and text with `<` that is no tag), changed
numerals, very long words (URLs, glued words), repeated strings, length-mismatched pairs,
an odd empty side.
"""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def noisy(rng, pairs, german, pool, dev_pairs=()):
    """`pairs` with noise mixed in; `pool`: earlier pairs duplicates may copy."""
    out = []
    for en, zh in pairs:
        roll = rng.random()
        if roll < 0.05 and pool:
            out.append(rng.choice(pool))  # an exact duplicate
        elif roll < 0.07 and pool:
            out.append((rng.choice(pool)[0], zh))  # same source, another target
        elif roll < 0.09 and pool:
            src, tgt = rng.choice(pool)
            out.append((src.lower() if rng.random() < 0.5 else src.upper(), tgt))
        elif roll < 0.10 and pool:
            src, tgt = rng.choice(pool)
            out.append((src.rstrip(".") + " .", tgt))  # punctuation variant
        elif roll < 0.11 and pool:
            src, tgt = rng.choice(pool)
            out.append((src + " ", tgt))  # trailing space: not the same line as read
        elif roll < 0.12 and dev_pairs:
            out.append(rng.choice(dev_pairs))  # a dev pair leaked into train
        elif roll < 0.15:
            out.append((rng.choice(german), zh))  # German on the English side
        elif roll < 0.17:
            out.append((en, en))  # English on the Chinese side
        elif roll < 0.19:
            tag = rng.choice(["<b>%s</b>", "<p class=\"x\">%s", "%s<br/>", "<a href=\"/w\">%s</a>"])
            out.append((tag % en, zh) if rng.random() < 0.5 else (en, tag % zh))
        elif roll < 0.20:
            out.append((en + " if a < b and c > d", zh))  # angle brackets, no tag
        elif roll < 0.23:
            out.append((en + " %d" % rng.randint(1, 99999), zh + str(rng.randint(1, 99999))))
        elif roll < 0.25:
            word = "https://example.org/" + "".join(rng.choice("abcdefghij/") for _ in range(45))
            out.append((en + " " + word, zh))
        elif roll < 0.26:
            out.append((en.replace(" ", "", 12), zh))  # glued words
        elif roll < 0.28:
            bit = rng.choice(["ha ", "no no ", "!!!", "very "])
            out.append((en + " " + bit * rng.randint(3, 6), zh + bit.strip() * 4))
        elif roll < 0.30:
            out.append((en, zh[: max(1, len(zh) // 8)]))  # target cut short
        elif roll < 0.31:
            out.append((" ".join([en] * 4), zh))  # source far too long
        elif roll < 0.312:
            out.append((en, "") if rng.random() < 0.5 else ("", zh))
        else:
            out.append((en, zh))
        pool.append(out[-1])
    return out


def write(name, pairs):
    for side, ext in ((0, "en"), (1, "zh")):
        with open(os.path.join(HERE, "%s.%s" % (name, ext)), "w", encoding="utf-8") as f:
            f.writelines(pair[side] + "\n" for pair in pairs)


def main():
    rng = random.Random(25)
    train = list(zip(read(os.path.join(DATA, "enzh-mlqe-pe", "train.en")),
                     read(os.path.join(DATA, "enzh-mlqe-pe", "train.zh"))))
    dev = list(zip(read(os.path.join(DATA, "enzh-mlqe-pe", "dev.en")),
                   read(os.path.join(DATA, "enzh-mlqe-pe", "dev.zh"))))
    german = read(os.path.join(DATA, "ende-opennmt", "train.de"))[:400]
    dev_part = noisy(rng, dev[:150], german, [])
    pool = []
    write("train-a", noisy(rng, train[:700], german, pool, dev_part))
    write("train-b", noisy(rng, train[700:1100], german, pool, dev_part))
    write("dev", dev_part)


if __name__ == "__main__":
    main()
