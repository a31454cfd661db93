"""The packer alone (`transforms.formats.packed_examples.pack_records`) on synthetic pair
records, one language pair or several interleaved (each record then carries `lang_pair`, as
a many-pairs job's --mix_shards shards do): CPU µs per pair and a hash of the packed records.

Run it from two checkouts (PYTHONPATH set to each) alternating, on a quiet machine:

    PYTHONPATH=. .venv/bin/python benchmarks/bench_packing_pairs.py --pairs 1
    PYTHONPATH=. .venv/bin/python benchmarks/bench_packing_pairs.py --pairs 3
"""

import argparse
import hashlib
import random
import time

from transforms.codecs.varints import encode_varints
from transforms.formats.example_proto import PairExampleWriter
from transforms.formats.packed_examples import PackingTally, pack_records


def records(n: int, pairs: int, seed: int = 1) -> list:
    """`n` pair records with 5-59 ids a side; with `pairs` > 1 each carries one of them."""
    rng = random.Random(seed)
    writer = PairExampleWriter("inputs", "targets")
    names = [("en-x%d" % i).encode() for i in range(pairs)]
    out = []
    for _ in range(n):
        sides = [encode_varints([rng.randrange(1, 8000) for _ in range(rng.randrange(5, 60))])
                 for _ in range(2)]
        entries = [writer.entry_from_varints(0, sides[0]), writer.entry_from_varints(1, sides[1])]
        if pairs > 1:  # the lang_pair entry between the sides (a checkout before issue 44: 1 only)
            entries.append(writer.bytes_entry("lang_pair", rng.choice(names)))
        out.append(writer.join(*entries))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1, help="language pairs interleaved")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--packed_length", type=int, default=256)
    args = parser.parse_args()
    data = records(args.records, args.pairs)
    start = time.process_time()
    digest = hashlib.sha256()
    for record in pack_records(data, args.packed_length, PackingTally()):
        digest.update(record)
    seconds = time.process_time() - start
    print("%d pair(s): %.2f us/pair CPU, packed records sha256 %s" % (
        args.pairs, seconds / len(data) * 1e6, digest.hexdigest()[:16]))


if __name__ == "__main__":
    main()
