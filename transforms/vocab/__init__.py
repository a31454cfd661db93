"""The vocab pass(es)' Beam stages: `token_counts` (T2T's byte-budget sample, tokenized and
counted by a combine); `learners` (what a learner is: its passes stated as data, the shared
sample stage) and one learner a module: `subword_learning` (with `subword_refine`, T2T's
subtoken-count refinement as Beam stages), `sentencepiece_learning`, `word_learning`,
`byte_bpe_learning`.

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts, transforms.pairs, transforms.storage, transforms.shards, transforms.reporting, transforms.errors.
"""
