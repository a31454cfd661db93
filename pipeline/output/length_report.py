"""The length report, `{problem}.lengths.html`: the summary's `lengths` as a page.

`render_length_report(summary) -> str` is a pure function of the summary dict (its `problem`
and `lengths`, see `transforms.encode.length_stats`), so it is tested without a run and the page
of a rerun is byte-identical (no times in it). The page stands alone: inline CSS and SVG, no
script, no network, so it opens from any copy of the output directory. Per split, a table of
the percentiles, maxima and characters per token of each side, a table of the pairs T2T's
length filter drops at candidate `max_length`s, and a histogram per side (lengths binned so a
chart has at most `MAX_BINS` bars) with the p50/p90/p99 lengths marked. With --max_length, a
note says how many train pairs it dropped (the figures "before max_length" predict the same
number); with --packed_length, each split's packing (records, pairs per record, how full).
"""

import html
import math
from typing import Any, Dict, List, Tuple, Union

from transforms.formats.rejects import OVER_MAX_LENGTH

MAX_BINS = 60
SIDE_COLORS = {"inputs": "#3b6fb6", "targets": "#d9822b"}  # tests look for them in a screenshot
SIDE_NAMES = {"inputs": "inputs (source)", "targets": "targets (target)",
              "pair": "pair: max of both"}
WIDTH, HEIGHT = 460, 230
LEFT, RIGHT, TOP, BOTTOM = 54, 14, 28, 40

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px;
       color: #222; background: #fff; max-width: 1000px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
p.note { font-size: 13px; color: #555; margin: 4px 0; }
table { border-collapse: collapse; margin: 8px 16px 8px 0; font-size: 13px;
        display: inline-table; vertical-align: top; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; }
td.name { text-align: left; }
.charts svg { margin: 6px 12px 6px 0; border: 1px solid #ddd; }
"""


def _fmt(value: Union[int, float, str, None]) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.2f" % value
    return "{:,}".format(value)


def _nice_step(span: int, target: int) -> int:
    """The smallest step of 1, 2 or 5 times a power of ten cutting `span` into at most `target`
    parts."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if math.ceil(span / (step * m)) <= target:
                return step * m
        step *= 10


def _bins(histogram: List[List[int]]) -> Tuple[int, List[Tuple[int, int, int]]]:
    """[(first length, last length, pairs)] of `histogram` ([[length, pairs]]) in equal bins
    from 0 (or 1) to the largest length."""
    top = histogram[-1][0]
    width = _nice_step(top + 1, MAX_BINS)
    counts = [0] * (top // width + 1)
    for length, n in histogram:
        counts[length // width] += n
    return width, [(i * width, i * width + width - 1, n) for i, n in enumerate(counts)]


def _histogram_svg(side: str, figures: Dict[str, Any]) -> str:
    """An SVG bar chart of one side's length histogram, p50/p90/p99 marked."""
    title = "%s: %s pairs" % (SIDE_NAMES[side], _fmt(sum(n for _, n in figures["histogram"])))
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" role="img" aria-label="%s">' % (
                 WIDTH, HEIGHT, WIDTH, HEIGHT, html.escape(title)),
             '<text x="%d" y="17" font-size="13" font-weight="bold">%s</text>'
             % (LEFT, html.escape(title))]
    if not figures["histogram"]:
        parts.append('<text x="%d" y="%d" font-size="13" fill="#777">no pairs</text></svg>'
                     % (WIDTH // 2 - 30, HEIGHT // 2))
        return "".join(parts)
    width, bins = _bins(figures["histogram"])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_max = len(bins) * width
    y_max = max(n for _, _, n in bins)
    y_step = _nice_step(y_max, 4)
    y_top = math.ceil(y_max / y_step) * y_step

    def x(length: float) -> float:
        return LEFT + plot_w * length / x_max

    def y(n: float) -> float:
        return TOP + plot_h * (1 - n / y_top)

    for tick in range(0, y_top + 1, y_step):  # grid and y labels
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>'
                     '<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>'
                     % (LEFT, WIDTH - RIGHT, y(tick), y(tick), LEFT - 4, y(tick) + 4, _fmt(tick)))
    bar = plot_w / len(bins)
    for first, last, n in bins:
        if n:
            parts.append('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s">'
                         '<title>%s: %s pairs</title></rect>' % (
                             x(first), y(n), max(bar - (1 if bar > 3 else 0), 0.5),
                             TOP + plot_h - y(n), SIDE_COLORS.get(side, "#666"),
                             first if width == 1 else "%d-%d" % (first, last), _fmt(n)))
    x_step = _nice_step(x_max, 8)
    for tick in range(0, x_max + 1, x_step):
        parts.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#444"/>'
                     '<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%s'
                     '</text>' % (x(tick), x(tick), TOP + plot_h, TOP + plot_h + 4, x(tick),
                                  TOP + plot_h + 16, _fmt(tick)))
    parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444"/>'
                 % (LEFT, WIDTH - RIGHT, TOP + plot_h, TOP + plot_h))
    parts.append('<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#333">'
                 'length in ids, EOS included (bins of %d)</text>'
                 % (LEFT + plot_w // 2, HEIGHT - 6, width))
    for i, q in enumerate(("p50", "p90", "p99")):
        at = x(figures[q] + 0.5)
        parts.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222" '
                     'stroke-dasharray="4,3"/><text x="%.1f" y="%d" font-size="11" fill="#222">'
                     '%s %d</text>' % (at, at, TOP, TOP + plot_h, at + 3, TOP + 11 + 12 * i, q,
                                       figures[q]))
    parts.append("</svg>")
    return "".join(parts)


def _percentile_table(report: Dict[str, Any]) -> str:
    rows = ["<table><tr><th>side</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>"
            "<th>tokens (no EOS)</th><th>characters</th><th>chars / token</th></tr>"]
    for side in ("inputs", "targets", "pair"):
        f = report[side]
        rows.append("<tr><td class=\"name\">%s</td>%s%s</tr>" % (
            SIDE_NAMES[side], "".join("<td>%s</td>" % _fmt(f[k])
                                      for k in ("p50", "p90", "p99", "max")),
            "".join("<td>%s</td>" % _fmt(f.get(k))
                    for k in ("tokens", "chars", "chars_per_token"))))
    rows.append("</table>")
    return "".join(rows)


def _drops_table(report: Dict[str, Any]) -> str:
    rows = ["<table><tr><th>max_length</th><th>pairs dropped</th><th>% of pairs</th></tr>"]
    for d in report["drops"]:
        rows.append("<tr><td class=\"name\">%s%s</td><td>%s</td><td>%.2f %%</td></tr>" % (
            _fmt(d["max_length"]), " (p99)" if d.get("p99") else "", _fmt(d["dropped"]),
            100 * d["dropped_fraction"]))
    rows.append("</table>")
    return "".join(rows)


def _packing_table(packing: Dict[str, Any]) -> str:
    rows = ["<table><tr><th>packed into</th><th>records</th><th>pairs</th>"
            "<th>pairs / record</th><th>inputs full</th><th>targets full</th>"
            "<th>records over length</th></tr>",
            "<tr><td class=\"name\">%s ids</td><td>%s</td><td>%s</td><td>%.2f</td>"
            "<td>%.1f %%</td><td>%.1f %%</td><td>%s</td></tr></table>" % (
                _fmt(packing["packed_length"]), _fmt(packing["records"]),
                _fmt(packing["pairs"]), packing["pairs_per_record"],
                100 * packing["fill"]["inputs"], 100 * packing["fill"]["targets"],
                _fmt(packing["over_length"])),
            "<table><tr><th>pairs in a record</th><th>records</th></tr>"]
    rows += ["<tr><td class=\"name\">%d</td><td>%s</td></tr>" % (k, _fmt(n))
             for k, n in packing["histogram"]]
    rows.append("</table>")
    return "".join(rows)


def _notes(summary: Dict[str, Any]) -> List[str]:
    """What --max_length and --packed_length did, for the page's head."""
    notes = []
    max_length = summary["lengths"].get("max_length")
    if max_length:
        dropped = sum(s.get("rejected_by_reason", {}).get(OVER_MAX_LENGTH, 0)
                      for s in summary.get("splits", {}).values())
        notes.append("--max_length %d dropped %s train pairs (rejects reason %s); "
                     "<code>train before max_length</code> (or <code>before cleaning</code>) "
                     "holds them too: its drops at %d are the same pairs. Dev is kept whole, as "
                     "T2T evaluates it." % (max_length, _fmt(dropped), OVER_MAX_LENGTH,
                                            max_length))
    packed = [s["packing"]["packed_length"] for s in summary.get("splits", {}).values()
              if s.get("packing")]
    if packed:
        notes.append("--packed_length %d: the lengths are of the pairs; the records pack them "
                     "as T2T's pack_examples does (figures per split below)." % packed[0])
    return ['<p class="note">%s</p>' % note for note in notes]


def render_length_report(summary: Dict[str, Any]) -> str:
    """The HTML page of `summary`'s length figures (a complete summary dict)."""
    lengths = summary["lengths"]
    problem = html.escape(str(summary["problem"]))
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           "<title>%s: length report</title><style>%s</style></head><body>" % (problem, CSS),
           "<h1>Length report: %s</h1>" % problem,
           '<p class="note">Lengths are ids per example with EOS, as stored in the records\' '
           "<code>inputs</code> and <code>targets</code>; the pair length is the longer side. "
           "Percentiles are %s. Characters per token: characters of the stripped lines over "
           "their ids without EOS.</p>" % html.escape(lengths["percentiles"]),
           '<p class="note">Drop rule: %s.</p>' % html.escape(lengths["drop_rule"])]
    out += _notes(summary)
    splits = lengths["splits"]
    for split in sorted(splits, key=lambda s: (not s.startswith("train"), s)):  # train first
        # ("train before cleaning", with --filters/--dedup, right after "train")
        report = splits[split]
        out.append("<h2>%s: %s pairs</h2>" % (html.escape(split), _fmt(report["pairs"])))
        out.append(_percentile_table(report))
        out.append(_drops_table(report))
        packing = summary.get("splits", {}).get(split, {}).get("packing")
        if packing:
            out.append(_packing_table(packing))
        out.append('<div class="charts">%s%s</div>' % (
            _histogram_svg("inputs", report["inputs"]),
            _histogram_svg("targets", report["targets"])))
    if lengths.get("pairs"):
        out.append(_pairs_table(lengths["pairs"]))
    out.append("</body></html>\n")
    return "".join(out)


def _pairs_table(pairs: Dict[str, Dict[str, Any]]) -> str:
    """One row per language pair and split: its pairs, percentiles of both sides and what
    T2T drops at the candidate lengths (several corpora; the histograms above are the
    splits')."""
    candidates = [c["max_length"] for c in next(iter(
        next(iter(pairs.values())).values()))["drops"] if not c.get("p99")]
    rows = ["<h2>Per language pair</h2><table><tr><th>pair</th><th>split</th><th>pairs</th>"
            "<th>inputs p50 / p90 / p99 / max</th><th>targets p50 / p90 / p99 / max</th>%s"
            "</tr>" % "".join("<th>dropped at %s</th>" % _fmt(m) for m in candidates)]
    for pair in sorted(pairs):
        for split in sorted(pairs[pair], key=lambda s: (s != "train", s)):
            report = pairs[pair][split]
            sides = ["<td>%s</td>" % " / ".join(_fmt(report[side][k])
                                                 for k in ("p50", "p90", "p99", "max"))
                     for side in ("inputs", "targets")]
            drops = {d["max_length"]: d for d in report["drops"] if not d.get("p99")}
            rows.append('<tr><td class="name">%s</td><td class="name">%s</td><td>%s</td>%s%s'
                        "</tr>" % (html.escape(pair), html.escape(split), _fmt(report["pairs"]),
                                   "".join(sides), "".join(
                                       "<td>%s</td>" % _fmt(drops[m]["dropped"])
                                       for m in candidates)))
    rows.append("</table>")
    return "".join(rows)
