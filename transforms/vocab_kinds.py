"""VocabKind: everything that differs between the three kinds of vocabulary, behind one interface.

- `subword`: Tensor2Tensor's SubwordTextEncoder (one file); examples end in EOS = 1.
- `byte_bpe`: GPT-2 style byte-level BPE (a directory with Hugging Face's `vocab.json` and
  `merges.txt`, or OpenAI's `encoder.json` and `vocab.bpe`); examples end in the id of the
  EOS token (`<|endoftext|>` unless `--bpe_eos_token` says otherwise).
- `word`: tensorflow/nmt word vocabulary (one word per line, `<unk>`, `<s>`, `</s>` first);
  examples carry the plain word ids, because tensorflow/nmt's input pipeline (and
  `pipeline.tools.reader` in mode "nmt") adds `<s>`/`</s>` itself.

The job looks its kind up once (`vocab_kind(flags.vocab_type)`) and asks the object: file
names and files, the tokenizer the sample is counted with, EOS ids, how a line is encoded,
and which learner runs. So adding a kind is one class here, not a string compared in six
modules (T2T's `TextEncoder` and seqio's `Vocabulary` are built the same way). A kind holds
no state: it pickles by reference into every DoFn that needs it.

Vocab files are read and written through Beam's FileSystems, so every path may be remote.
The codecs' encoders and learners (`transforms.codecs`) are imported where they are used, so
a run loads only its own kind's (the `ENDOFTEXT` constant and the varint helpers are the
exceptions).
"""

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.storage import file_io
from transforms.codecs.byte_bpe import ENDOFTEXT
from transforms.codecs.varints import count_varints, encode_varints

BPE_FILES = ("vocab.json", "merges.txt")
GPT2_BPE_FILES = ("encoder.json", "vocab.bpe")  # OpenAI's names for the same two formats


def _text(path, stores=None):
    return file_io.read_bytes(path, stores).decode("utf-8")


def _write_text(path, text, stores=None):
    file_io.write_bytes_atomically(path, text.encode("utf-8"), stores)


class VocabKind:
    """One kind of vocabulary. Subclasses fill in every method; instances hold no state."""

    name = None            # the --vocab_type value
    file_suffix = None     # vocab.{problem}.{size}.{file_suffix}[.{lang}]
    given_flag = None      # the flag naming an existing vocabulary of this kind, if any
    counts_oov = False     # whether the summary reports an out-of-vocabulary rate
    own_flags = ()         # flags that mean something for this kind only
    learning_passes = 1    # Beam passes learning takes; None: a search decides how many

    def flag_problem(self, flags):
        """What makes the flags impossible for this kind (a message), or None."""
        return None

    def tokenizer(self):
        """The function that splits sampled text into the units the vocabulary counts."""
        raise NotImplementedError

    def token_counter(self):
        """lines -> collections.Counter of their units: how the vocabulary sample is counted
        (`SampleAndCountTokens`), line by line with `tokenizer()` unless a kind does better."""
        from transforms.token_counts import count_lines_with
        return count_lines_with(self.tokenizer())

    def load(self, path, stores=None):
        """The encoder of a vocabulary file (or directory) at `path`."""
        raise NotImplementedError

    def load_for_encoding(self, path, stores=None):
        """The encoder the encode pass uses for the vocabulary at `path` (`load`'s unless a
        kind has one that encodes many lines faster: see `encode_lines_varints`)."""
        return self.load(path, stores)

    def exists(self, path, stores=None):
        """Whether a complete vocabulary of this kind is at `path` (to be reused). `stores`,
        here and in `load` and `write`: the job's or worker's ObjectStores, or None."""
        return file_io.exists(path, stores)

    def write(self, path, content, stores=None):
        """Writes `content` (what `learn` or `content_of` returned) to `path`."""
        _write_text(path, content, stores)

    def content_of(self, encoder):
        """(content to write, a note for the log or None) of a given vocabulary's encoder."""
        raise NotImplementedError

    def given_files(self, flags):
        """Paths of the existing vocabularies the flags name (one shared, or source and
        target); empty when the vocabulary is learnt."""
        return []

    def missing(self, path):
        """Why a given vocabulary at `path` cannot be there (a message), or None."""
        return None if file_io.exists(path) else "no such file"

    def eos_ids(self, encoder, eos_token):
        """The ids appended to every example (`eos_token`: --bpe_eos_token); ValueError when
        the vocabulary lacks them."""
        raise NotImplementedError

    def encode_line(self, encoder, text):
        """(ids of one stripped line without EOS, number of out-of-vocabulary words)."""
        return encoder.encode(text), 0

    def encode_line_varints(self, encoder, text):
        """(`encode_line`'s ids as concatenated varints, how many ids, OOV words): the form
        the encode pass writes into Examples (`transforms.codecs.varints`)."""
        ids, oov = self.encode_line(encoder, text)
        return encode_varints(ids), len(ids), oov

    def encode_lines_varints(self, encoder, texts):
        """`encode_line_varints` of each of `texts` (distinct stripped lines), in a list."""
        return [self.encode_line_varints(encoder, text) for text in texts]

    def learn(self, passes, work_dir, files, config, run_pass, first_pass=None):
        """Runs the vocab passes that learn `files`' vocabularies with `passes` (the
        `pipeline.driver.vocab_passes` module, handed in so this layer does not import the driver)
        and `config` (a `transforms.config.DatagenConfig`); returns ({name: content}, stats).
        By default one pass: sample, count, then `vocabs_from_counts`."""
        return passes.learn_counted_vocabs(self, work_dir, files, config, run_pass, first_pass)

    def translate(self, passes, work_dir, files, config, run_pass, first_pass=None):
        """--dry_run: builds the vocab passes `learn` would run, with the same builders and
        placeholder results, and only translates them."""
        passes.translate_counted_vocab_pass(self, work_dir, files, config, run_pass,
                                            first_pass)

    def vocabs_from_counts(self, totals, vocab):
        """(name, {token: count}) -> [name, content] of each vocabulary, as Beam stages
        (`vocab`: a `transforms.config.VocabConfig`)."""
        raise NotImplementedError

    def empty_content(self, vocab):
        """The content of a vocabulary nothing was sampled for (its special tokens only)."""
        raise NotImplementedError


class SubwordKind(VocabKind):
    name = "subword"
    file_suffix = "subwords"
    learning_passes = None  # usually one; the bisection may need more

    def tokenizer(self):
        from transforms.codecs.tokenizer import encode
        return encode

    def token_counter(self):
        # T2T's tokenizer over a batch of (stripped) sampled lines in one regex pass
        from transforms.codecs.tokenizer import count_tokens
        return count_tokens

    def load(self, path, stores=None):
        from transforms.codecs.subword import SubwordEncoder
        return SubwordEncoder.from_text(_text(path, stores))

    def eos_ids(self, encoder, eos_token):
        return [1]  # T2T's EOS_ID

    def load_for_encoding(self, path, stores=None):
        # segments the new tokens of many lines in one compiled call
        from transforms.codecs.subword_batch import BatchSubwordEncoder
        return BatchSubwordEncoder.from_text(_text(path, stores))

    def encode_lines_varints(self, encoder, texts):
        # each token's varints cached by the encoder; a batch encoder segments the new ones
        # of all the texts at once
        return [(data, count_varints(data), 0) for data in encoder.encode_varints_many(texts)]

    def learn(self, passes, work_dir, files, config, run_pass, first_pass=None):
        """T2T's bisection over min_count, several Beam passes (`learn_subword_vocabs`)."""
        from transforms.codecs.subword import vocab_file_text
        learnt, stats = passes.learn_subword_vocabs(work_dir, files, config, run_pass,
                                                    first_pass)
        return {name: vocab_file_text(v) for name, v in learnt.items()}, stats

    def translate(self, passes, work_dir, files, config, run_pass, first_pass=None):
        passes.translate_subword_vocab_passes(work_dir, files, config, run_pass, first_pass)


class ByteBpeKind(VocabKind):
    name = "byte_bpe"
    file_suffix = "bpe"
    given_flag = "--bpe_vocab"
    own_flags = ("bpe_vocab", "bpe_eos_token", "bpe_min_frequency")

    def flag_problem(self, flags):
        if flags.vocab_size < 257 and not flags.bpe_vocab:
            return ("--vocab_size for byte_bpe counts the 256 byte symbols and "
                    "%s: at least 257" % ENDOFTEXT)
        return None

    def tokenizer(self):
        from transforms.codecs.byte_bpe import pretokenize
        return pretokenize

    def load(self, path, stores=None):
        from transforms.codecs.byte_bpe import ByteBPE
        names = (BPE_FILES if file_io.exists(FileSystems.join(path, BPE_FILES[0]), stores)
                 else GPT2_BPE_FILES)
        return ByteBPE.from_texts(*(_text(FileSystems.join(path, n), stores) for n in names))

    def exists(self, path, stores=None):
        return file_io.exists(FileSystems.join(path, BPE_FILES[-1]), stores)  # written last

    def write(self, path, content, stores=None):
        """A directory of `content` ({file name: text}), emptied first (never a new
        vocab.json beside an old merges.txt); merges.txt last, so `exists` never sees half a
        vocabulary."""
        file_io.delete_tree(path, stores)
        FileSystems.mkdirs(path)
        for name in BPE_FILES:
            _write_text(FileSystems.join(path, name), content[name], stores)

    def content_of(self, encoder):
        return _bpe_files(encoder), None

    def given_files(self, flags):
        return [file_io.absolute(flags.bpe_vocab)] if flags.bpe_vocab else []

    def missing(self, path):
        if any(all(file_io.exists(FileSystems.join(path, n)) for n in names)
               for names in (BPE_FILES, GPT2_BPE_FILES)):
            return None
        return "no vocab.json + merges.txt (or GPT-2's encoder.json + vocab.bpe) there"

    def eos_ids(self, encoder, eos_token):
        eos = encoder.token_to_id(eos_token)
        if eos is None:
            raise ValueError("the BPE vocabulary has no %r token (see --bpe_eos_token)" % eos_token)
        return [eos]

    def encode_line(self, encoder, text):
        return encoder.encode_ordinary(text), 0  # "<|endoftext|>" in a corpus line is just text

    def vocabs_from_counts(self, totals, vocab):
        """Merges learnt from each vocabulary's pre-token counts on one worker
        (`transforms.codecs.byte_bpe_learner.learn_byte_bpe`)."""
        return totals | "LearnMerges" >> beam.Map(
            _learn_bpe, vocab_size=vocab.vocab_size, min_frequency=vocab.bpe_min_frequency,
            eos_token=vocab.bpe_eos_token)

    def empty_content(self, vocab):
        return _learn_bpe((None, []), vocab.vocab_size, vocab.bpe_min_frequency,
                          vocab.bpe_eos_token)[1]


class WordKind(VocabKind):
    name = "word"
    file_suffix = "words"
    given_flag = "--word_vocab"
    counts_oov = True
    own_flags = ("word_vocab",)

    def flag_problem(self, flags):
        if flags.vocab_size < 3 and not flags.word_vocab:
            return "--vocab_size for a word vocabulary counts <unk>, <s>, </s>: at least 3"
        return None

    def tokenizer(self):
        from transforms.codecs.word_vocab import tokenize
        return tokenize

    def load(self, path, stores=None):
        from transforms.codecs.word_vocab import WordVocab
        return WordVocab.from_text(_text(path, stores))

    def content_of(self, encoder):
        note = ("did not start with <unk>, <s>, </s>: moved them to the front"
                if encoder.fixed_specials else None)
        return encoder.to_text(), note

    def given_files(self, flags):
        return [file_io.absolute(w) for w in (flags.word_vocab or "").split(",") if w]

    def eos_ids(self, encoder, eos_token):
        return []  # tensorflow/nmt's reader adds </s> itself

    def encode_line(self, encoder, text):
        return encoder.encode_with_oov(text)

    def vocabs_from_counts(self, totals, vocab):
        """The `vocab_size - 3` most frequent words (`Top.PerKey`, ties broken by the word)."""
        from transforms.codecs.word_vocab import SPECIALS
        from transforms.token_counts import count_triples
        size = vocab.vocab_size
        return (totals
                | "Triples" >> beam.FlatMap(count_triples)
                | "KeyByVocab" >> beam.Map(lambda t: (t[0], (t[1], t[2])))
                | "DropSpecials" >> beam.Filter(lambda kv: kv[1][0] not in SPECIALS)
                | "MostFrequent" >> beam.combiners.Top.PerKey(max(0, size - len(SPECIALS)),
                                                              key=_word_rank)
                | "WordVocab" >> beam.Map(_word_vocab_text, vocab_size=size))

    def empty_content(self, vocab):
        return _word_vocab_text((None, []), vocab.vocab_size)[1]


def _descending(word):
    """A key that sorts words in descending code-point order (so Top keeps the smallest)."""
    return tuple(-ord(c) for c in word) + (1,)


def _word_rank(item):
    word, count = item
    return count, _descending(word)


def _word_vocab_text(name_items, vocab_size):
    from transforms.codecs.word_vocab import WordVocab
    name, items = name_items
    return [name, WordVocab.from_counts(dict(items), vocab_size).to_text()]


def _learn_bpe(name_items, vocab_size, min_frequency, eos_token):
    """A learnt BPE whose special token is `eos_token` (--bpe_eos_token), so the id that ends
    every example is in the vocabulary whatever token was chosen."""
    from transforms.codecs.byte_bpe_learner import learn_byte_bpe
    name, items = name_items
    bpe = learn_byte_bpe(dict(items), vocab_size, special_tokens=(eos_token,),
                         min_frequency=min_frequency)
    return [name, _bpe_files(bpe)]


def _bpe_files(bpe):
    """{file name: text} of a byte-level BPE's directory (`BPE_FILES`)."""
    return dict(zip(BPE_FILES, (bpe.vocab_json_text(), bpe.merges_text())))


_KINDS = (SubwordKind(), ByteBpeKind(), WordKind())
KIND_NAMES = tuple(kind.name for kind in _KINDS)  # --vocab_type's choices
DEFAULT_KIND = SubwordKind.name


def every_kind():
    return _KINDS


def vocab_kind(name):
    """The VocabKind of a --vocab_type value."""
    for kind in _KINDS:
        if kind.name == name:
            return kind
    raise ValueError("unknown vocab type %r" % name)
