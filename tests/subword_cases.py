"""Cases shared by the SubwordEncoder tests (test_subword.py) and the BatchSubwordEncoder
tests (test_subword_batch.py): the real T2T vocabularies in tests/data/t2t_vocab, the
hypothesis settings, and text built from the pieces escaping and tokenizing get wrong first."""

import os
import string

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from repo_paths import DATA_DIR

VOCAB_DIR = os.path.join(DATA_DIR, "t2t_vocab")
REAL_VOCABS = (
    "vocab.translate_enzh_wmt8k.8192.subwords.en",  # reserved tokens written '<pad>_'
    "vocab.translate_enzh_wmt8k.8192.subwords.zh",
    "vocab.translate_ende_wmt8k.8192.subwords",  # older layout: '<pad>', '<EOS>'
)
HYPOTHESIS = settings(max_examples=300, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture])

SPECIAL_PIECES = (
    " ", "  ", "\n", "\t", "\r", "_", "__", "\\", "\\\\", "\\u", "\\84;", ";", "0", "1", "9",
    "12;", "u", "_u", "\\_", "'", "<pad>", "<EOS>", "<pad>_", "中文", "。", "\u3013",
    "\U0001F638", "\u2764\ufe0f", "e\u0301", "\x00", "\ud800", "\U0010FFFF", "\u2028", "\x85",
)
piece = st.one_of(st.characters(codec=None, exclude_categories=()),
                  st.sampled_from(SPECIAL_PIECES),
                  st.sampled_from(string.ascii_letters + string.digits))
broad_text = st.lists(piece, max_size=40).map("".join)
