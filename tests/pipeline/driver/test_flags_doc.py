"""docs/flags.md is generated from the flags' declarations (`pipeline.driver.flags_doc`):
the committed page must be what the generator writes now, so a new, renamed or changed flag
fails here until `python -m pipeline.driver.flags_doc > docs/flags.md` is run again."""

import pathlib
import re

from pipeline.driver import flags_doc
from pipeline.driver.options import flag_defaults
from repo_paths import REPO_ROOT

PAGE = pathlib.Path(REPO_ROOT) / "docs" / "flags.md"


def test_the_committed_page_is_current():
    assert PAGE.read_text(encoding="utf-8") == flags_doc.flags_markdown(), (
        "docs/flags.md is not current: run python -m pipeline.driver.flags_doc > docs/flags.md")


def test_every_flag_has_one_row_with_its_default():
    rows = {}
    for line in flags_doc.flags_markdown().splitlines():
        found = re.match(r"\| `--(\w+)`[^|]*\| (.*?) \| (.*?) \| ", line)
        if found:
            assert found.group(1) not in rows, found.group(1)
            rows[found.group(1)] = found.group(3)
    defaults = flag_defaults()
    assert sorted(rows) == sorted(defaults)
    assert rows["vocab_size"] == "`8192`" and rows["overwrite"] == "off"
    assert rows["output_format"] == "`tfrecord`" and rows["output_dir"] == ""


def test_markup_in_a_help_text_shows_as_written():
    """`<s>` in a help text would be HTML (strike-through) on GitHub: escaped, but not inside
    a code span."""
    page = flags_doc.flags_markdown()
    assert "misplaced &lt;unk&gt;, &lt;s&gt;, &lt;/s&gt; are moved" in page
    assert "<s>" not in page.replace("`<", "")
    assert flags_doc._cell("a `<b>` <c> | d") == "a `<b>` &lt;c&gt; \\| d"


def test_a_numbers_range_comes_from_its_type():
    page = flags_doc.flags_markdown()
    assert "| `--num_train_shards` | an integer from 1 to 99999 | `10` |" in page
    assert "| `--log_level` (`-v`: info) | `debug` \\| `info` \\| `warning` \\| `error` |" in page
