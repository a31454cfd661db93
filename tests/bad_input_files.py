"""Small inputs the hostile-input tests (tests/end_to_end/test_hostile_*.py) write: bytes as
given, a line-aligned word corpus, and the flags of their in-process runs."""

FLAGS = ["--problem", "p", "--num_train_shards", "2", "--runner", "FnApiRunner"]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def corpus(directory, lines=40):
    directory.mkdir(exist_ok=True)
    en = "".join("the cat number %d sat on mat %d\n" % (i, i % 7) for i in range(lines))
    zh = "".join("\u732b %d \u5750\u5728 %d\n" % (i, i % 7) for i in range(lines))
    return write(directory / "a.en", en.encode()), write(directory / "a.zh", zh.encode())


def word_job(directory, out, lines=40):
    """The argv of a small word-vocabulary job over `corpus(directory)` into `out`."""
    src, tgt = corpus(directory, lines)
    return ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
