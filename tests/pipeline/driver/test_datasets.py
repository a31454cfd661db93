"""pipeline/driver/datasets: which files form which dataset of a split, in a fixed order, from
the input flags; and every bad pattern as one DatagenError line naming the flag or file."""

import logging
import os

import pytest

from driver_fixtures import config, corpus, write
from pipeline.driver import datasets
from pipeline.runtime.errors import DatagenError


def plan(tmp_path, *flags, split="train", train=None):
    return datasets.plan_datasets(config(tmp_path, *flags, train=train), split)


def error_of(fn, *args, **kwargs):
    with pytest.raises(DatagenError) as raised:
        fn(*args, **kwargs)
    assert "\n" not in str(raised.value)
    return str(raised.value)


# -- patterns ----------------------------------------------------------------------------

def test_split_patterns_takes_commas_as_separators_unless_a_file_has_that_name(tmp_path):
    assert datasets.split_patterns(" a.en , b*.en,,") == ["a.en", "b*.en"]
    assert datasets.split_patterns(None) == []
    odd = write(tmp_path / "a,b[1].en", "x\n")
    assert datasets.split_patterns(odd) == [odd]


def test_literal_patterns_ask_no_file_system():
    assert datasets.literal_patterns("gs://b/x.en, /no/such/*.en") == [
        "gs://b/x.en", "/no/such/*.en"]


def test_expand_listing_globs_in_order_and_takes_odd_file_names_as_they_are(tmp_path):
    b, a = write(tmp_path / "b.en", "x\n"), write(tmp_path / "a.en", "x\n")
    odd = write(tmp_path / "c[1].en", "x\n")
    assert datasets.expand_listing(str(tmp_path / "*.en")) == [a, b, odd]
    assert datasets.expand_listing(odd) == [odd]


def test_a_pattern_matching_nothing_is_one_line(tmp_path):
    assert error_of(datasets.expand_listing, str(tmp_path / "none*.en"), "train_source") == (
        "no file matches %r" % str(tmp_path / "none*.en"))


def test_a_directory_named_as_an_input_is_one_line(tmp_path):
    (tmp_path / "d").mkdir()
    assert error_of(datasets.expand_listing, str(tmp_path / "d")).startswith(
        "%s is a directory, not a file" % (tmp_path / "d"))


# -- entries a pattern matches that are not readable files (issue 42, item 2) --------------

@pytest.mark.parametrize("pattern", ["*.en", "**.en", "[ab].en", "?.en"])
def test_a_dangling_link_a_pattern_matches_is_one_line_naming_it(tmp_path, pattern):
    """Beam's local listing drops an entry whose size cannot be read: the pattern would
    lose b.en's pairs without a word (and pair the files after it with the wrong ones)."""
    write(tmp_path / "a.en", "x\n")
    os.symlink("/nonexistent/mount/b.en", str(tmp_path / "b.en"))
    assert error_of(datasets.expand_listing, str(tmp_path / pattern), "train_source") == (
        "--train_source %s is a dangling symbolic link (to /nonexistent/mount/b.en, which "
        "does not exist): fix or remove it" % (tmp_path / "b.en"))


def test_dangling_links_below_the_patterns_directory_and_loops_are_named(tmp_path):
    (tmp_path / "d").mkdir()
    write(tmp_path / "d" / "a.en", "x\n")
    os.symlink("gone.en", str(tmp_path / "d" / "b.en"))
    os.symlink("c.en", str(tmp_path / "d" / "c.en"))  # a link to itself
    message = error_of(datasets.expand_listing, str(tmp_path / "*" / "*.en"), "dev_source")
    assert message == ("--dev_source %s is a dangling symbolic link (to gone.en, which does "
                       "not exist), and 1 more: c.en: fix or remove them" % (
                           tmp_path / "d" / "b.en"))
    assert error_of(datasets.expand_listing, str(tmp_path / "d" / "c*"), "dev_source") == (
        "--dev_source %s is a loop of symbolic links: fix or remove it" % (
            tmp_path / "d" / "c.en"))


def test_a_dangling_link_named_in_full_is_not_no_file_matches(tmp_path):
    os.symlink("/nonexistent/b.en", str(tmp_path / "b.en"))
    assert error_of(datasets.expand_listing, str(tmp_path / "b.en"), "train_source") == (
        "--train_source %s is a dangling symbolic link (to /nonexistent/b.en, which does not "
        "exist): fix or remove it" % (tmp_path / "b.en"))


def test_a_side_that_lost_a_file_is_never_paired(tmp_path):
    """b.zh and c.en dangling: 2 sources and 2 targets still, which paired a.en with a.zh
    and b.en with c.zh (misaligned, exit 0)."""
    for name in ("a.en", "a.zh", "b.en", "c.zh"):
        write(tmp_path / name, "x\n")
    for name in ("b.zh", "c.en"):
        os.symlink("/nonexistent/" + name, str(tmp_path / name))
    message = error_of(plan, tmp_path, "--train_source", str(tmp_path / "*.en"),
                       "--train_target", str(tmp_path / "*.zh"))
    assert message.startswith("--train_source %s is a dangling symbolic link" % (
        tmp_path / "c.en"))


@pytest.fixture
def unreadable(tmp_path_factory):
    """(directory, a.en readable, b.en that this process cannot open). As root (CI), the
    listing runs as `nobody` (os.seteuid): root reads any file whatever its mode."""
    base = tmp_path_factory.mktemp("perm")
    os.chmod(base, 0o755)  # nobody must reach it
    for parent in base.parents:  # pytest's base directory is the user's own (0700)
        if str(parent).startswith("/tmp/pytest-of-"):
            os.chmod(parent, 0o755)
    a, b = write(base / "a.en", "x\n"), write(base / "b.en", "x\n")
    os.chmod(a, 0o644)
    os.chmod(b, 0o000)
    yield base, a, b
    os.chmod(b, 0o644)


def _as_nobody(fn, *args):
    if os.geteuid() != 0:
        return fn(*args)
    import pwd
    os.seteuid(pwd.getpwnam("nobody").pw_uid)
    try:
        return fn(*args)
    finally:
        os.seteuid(0)


def test_an_unreadable_file_a_pattern_matches_is_one_line(unreadable):
    base, a, b = unreadable

    def listing():
        with pytest.raises(DatagenError) as raised:
            datasets.expand_listing(str(base / "*.en"), "train_source")
        return str(raised.value)
    assert _as_nobody(listing) == "--train_source %s cannot be read: Permission denied" % b
    assert _as_nobody(datasets.expand_listing, a, "train_source") == [a]


def test_a_file_matched_twice_is_read_once_with_a_warning(tmp_path, caplog):
    a = write(tmp_path / "a.en", "x\n")
    os.symlink(a, str(tmp_path / "link.en"))
    with caplog.at_level(logging.WARNING, logger="datagen"):
        listed = datasets.expand_listing("%s,%s" % (a, tmp_path / "*.en"), "train_source")
    assert listed == [a]
    assert caplog.messages == ["--train_source: 2 files matched more than once, read once: "
                               "a.en, link.en"]


def test_the_jobs_own_outputs_are_left_out_with_a_warning(tmp_path, caplog):
    out = tmp_path / "out"
    mine = write(out / "notes.en", "x\n")
    write(out / "vocab.p.8192.subwords.en", "'a_'\n")
    with caplog.at_level(logging.WARNING, logger="datagen"):
        assert datasets.expand_listing(str(out / "*.en"), "train_source", str(out)) == [mine]
    assert caplog.messages == ["--train_source: 1 file of this job's own output in "
                               "--output_dir left out (a job never reads its outputs): "
                               "vocab.p.8192.subwords.en"]


def test_a_pattern_matching_only_own_outputs_says_so(tmp_path):
    out = tmp_path / "out"
    write(out / "p-train-00000-of-00001", "x")
    message = error_of(datasets.expand_listing, str(out / "p-*"), "train_source", str(out))
    assert message.endswith("it matches only files this job writes in --output_dir "
                            "(p-train-00000-of-00001)")


def test_an_archive_member_needs_its_archive(tmp_path):
    archive = write(tmp_path / "c.tgz", "x")
    assert datasets.expand_listing(archive + "!in/a.tsv") == [archive + "!in/a.tsv"]
    assert error_of(datasets.expand_listing, str(tmp_path / "none.tgz") + "!a.tsv") == (
        "no archive %s (for %s!a.tsv)" % (tmp_path / "none.tgz", tmp_path / "none.tgz"))
    (tmp_path / "d.tgz").mkdir()
    assert error_of(datasets.expand_listing, str(tmp_path / "d.tgz") + "!a.tsv") == (
        "%s is a directory, not an archive (for %s!a.tsv)" % ((tmp_path / "d.tgz",) * 2))


def test_a_pipe_is_refused_before_it_is_read(tmp_path):
    fifo = str(tmp_path / "fifo.en")
    os.mkfifo(fifo)
    assert error_of(datasets.expand_listing, fifo, "train_source") == (
        "--train_source %s is not a regular file (a pipe or FIFO): the job reads each input "
        "more than once; copy it to a file and name that" % fifo)


def test_a_file_name_that_is_not_utf8_is_refused(tmp_path):
    name = os.path.join(os.fsencode(str(tmp_path)), b"caf\xe9.en")
    with open(name, "wb") as f:
        f.write(b"x\n")
    message = error_of(datasets.expand_listing, str(tmp_path / "*.en"), "train_source")
    assert message == ("--train_source %s/caf\\xe9.en: the file name is not valid UTF-8; "
                       "rename the file (e.g. convmv -f latin1 -t utf-8)" % tmp_path)


# -- datasets of a split ---------------------------------------------------------------------

def test_line_pairs_then_tsv_then_tmx_numbered_in_order(tmp_path):
    s1, t1 = corpus(tmp_path, name="b")
    s2, t2 = corpus(tmp_path, name="a")
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    tmx = write(tmp_path / "in" / "y.tmx", "<tmx/>")
    planned = plan(tmp_path, "--train_source", str(tmp_path / "in" / "*.en"),
                   "--train_target", str(tmp_path / "in" / "*.de"), "--train_tsv", tsv,
                   "--train_tmx", tmx, "--source_lang", "en", "--target_lang", "de")
    assert [(d.index, d.name, d.format, d.source, d.target) for d in planned] == [
        (0, "a.en", "lines", s2, t2), (1, "b.en", "lines", s1, t1),
        (2, "x.tsv", "tsv", tsv, None), (3, "y.tmx", "tmx", tmx, None)]
    assert [d.read_in_place for d in planned] == [True, True, False, False]
    assert planned[2].spec() == {"split": "train", "index": 2, "name": "x.tsv",
                                 "format": "tsv", "source": tsv, "target": None}


def test_sgm_and_iwslt_are_told_by_their_names_or_by_the_format_flag(tmp_path):
    sgm = (write(tmp_path / "in" / "n.en.sgm", ""), write(tmp_path / "in" / "n.de.sgm", ""))
    assert [d.format for d in plan(tmp_path, train=sgm)] == ["sgm"]
    xml = (write(tmp_path / "in" / "t.en.xml", ""), write(tmp_path / "in" / "t.de.xml", ""))
    planned = plan(tmp_path, train=xml)
    assert [(d.format, d.read_in_place) for d in planned] == [("iwslt", False)]
    assert [d.format for d in plan(tmp_path, "--train_format", "lines", train=xml)] == ["lines"]


def test_an_archive_member_is_converted_not_read_in_place(tmp_path):
    archive = write(tmp_path / "c.tgz", "x")
    planned = plan(tmp_path, train=(archive + "!a.en", archive + "!a.de"))
    assert [(d.name, d.format, d.read_in_place) for d in planned] == [("a.en", "lines", False)]


def test_the_dev_split_is_planned_from_its_own_flags(tmp_path):
    dev = corpus(tmp_path, name="dev")
    planned = plan(tmp_path, "--dev_source", dev[0], "--dev_target", dev[1], split="dev")
    assert [(d.split, d.index, d.source) for d in planned] == [("dev", 0, dev[0])]


def test_unequal_numbers_of_source_and_target_files_is_one_line(tmp_path):
    corpus(tmp_path, name="a")
    corpus(tmp_path, name="b")
    message = error_of(plan, tmp_path, "--train_source", str(tmp_path / "in" / "*.en"),
                       "--train_target", str(tmp_path / "in" / "a.de"))
    assert message == "train: 2 source files but 1 target files (a.en, b.en vs a.de)"


def test_a_tsv_named_as_source_points_to_its_own_flag(tmp_path):
    pair = (write(tmp_path / "in" / "a.tsv", ""), write(tmp_path / "in" / "b.tsv", ""))
    assert error_of(plan, tmp_path, train=pair) == (
        "%s: --train_source/--train_target take line-aligned, SGM or IWSLT XML files, not "
        "tsv (use --train_tsv)" % pair[0])


def test_datasets_of_the_same_name_are_told_apart_by_their_number(tmp_path):
    one = (write(tmp_path / "x" / "c.en", ""), write(tmp_path / "x" / "c.de", ""))
    two = (write(tmp_path / "y" / "c.en", ""), write(tmp_path / "y" / "c.de", ""))
    planned = plan(tmp_path, "--train_source", "%s,%s" % (one[0], two[0]),
                   "--train_target", "%s,%s" % (one[1], two[1]))
    assert [d.name for d in planned] == ["c.en#0", "c.en#1"]


def test_a_custom_lister_is_used_for_every_flag(tmp_path):
    """The dry run lists nothing: its patterns are taken as file names."""
    cfg = config(tmp_path, "--train_source", "gs://b/x.en", "--train_target", "gs://b/x.de")
    planned = datasets.plan_datasets(cfg, "train", expand=datasets.literal_patterns)
    assert [(d.source, d.target) for d in planned] == [("gs://b/x.en", "gs://b/x.de")]


def test_a_corpora_entry_naming_no_file_is_named_with_its_file_entry_and_key(tmp_path):
    """A missing file of a corpora entry was `no file matches '...'`, without the entry or
    the key; every other corpora message names them."""
    source, target = corpus(tmp_path)
    corpora = write(tmp_path / "c.yaml", (
        "corpora:\n"
        "  - {name: a, source_lang: en, target_lang: de, train: {source: %s, target: %s}}\n"
        "  - {name: b, source_lang: en, target_lang: fr, train: {source: %s, target: nf.fr}}\n"
        % (source, target, source)))
    message = error_of(plan, tmp_path, "--corpora", corpora)
    assert message == "--corpora %s: corpora[1] (b): train.target: no file matches %r" % (
        corpora, str(tmp_path / "nf.fr"))
