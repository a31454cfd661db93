"""Temporary disk of a running job, broken down by directory and by pass (issue 49).

Why: bench_scale.py's "temporary disk <= 1.2x the output" check failed at 1.30x, and a single
total cannot say what to remove. Every sample here sizes each top-level work directory of the
run apart, and notes which pass the job's log says is running, so the peak comes with what
made it and when.

Labels: a run's own work directory (`.datagen-work/{problem}/{run id}/X`) is `run/X`, the
resume directory (`.datagen-work/{problem}/encode-{key}/X`) `resume/X`, anything under the
job's TMPDIR `tmp/X`, and the output's final files (everything in --output_dir outside
`.datagen-work`) `output`, which is not temporary and is not in the total.
"""

import os
import re

WORK_NAME = ".datagen-work"
PASS_LINE = re.compile(r"\bpass (\d+) of ~?\d+: (.+)$")  # a start; progress has no "of"
DONE_LINE = re.compile(r"\bpass (\d+) done in")
OUTPUT = "output"


def _label(parts):
    """The label of a file at `parts` (its path under .datagen-work, split)."""
    if len(parts) < 3:
        return "work/" + "/".join(parts[:-1] or ["."])
    kind = "resume" if parts[1].startswith("encode-") else "run"
    return "%s/%s" % (kind, parts[2] if len(parts) > 3 else ".")


def breakdown(output_dir, tmp_dir):
    """{label: bytes} of the files under the output directory and the job's TMPDIR now."""
    sizes = {}

    def add(label, path):
        try:
            sizes[label] = sizes.get(label, 0) + os.lstat(path).st_size
        except OSError:  # deleted while we walked
            sizes.setdefault(label, 0)

    work = os.path.join(output_dir, WORK_NAME)
    for root, dirs, files in os.walk(output_dir):
        if root == output_dir and WORK_NAME in dirs:
            dirs.remove(WORK_NAME)
        for name in files:
            add(OUTPUT, os.path.join(root, name))
    for root, _, files in os.walk(work):
        rel = os.path.relpath(root, work).split(os.sep)
        for name in files:
            add(_label([p for p in rel if p != "."] + [name]), os.path.join(root, name))
    for root, _, files in os.walk(tmp_dir):
        rel = os.path.relpath(root, tmp_dir).split(os.sep)
        for name in files:
            add("tmp/" + (rel[0] if rel[0] != "." else "."), os.path.join(root, name))
    return sizes


class PassTracker:
    """The pass the job's log says is running: `pass N of M: label` starts it, `pass N done`
    ends it (then "after pass N" until the next starts: the driver's own work between
    passes, the commit last). Reads the log incrementally."""

    def __init__(self, log_path):
        self._path, self._offset, self._rest = log_path, 0, b""
        self.current = "start"

    def poll(self):
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return self.current
        self._offset += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            done = DONE_LINE.search(line)
            if done:
                self.current = "after pass %s" % done.group(1)
                continue
            started = PASS_LINE.search(line)
            if started:
                self.current = "pass %s: %s" % (started.group(1), started.group(2)[:60])
        return self.current


class DiskPeaks:
    """The temporary total's peak (labels but `output`), what it was made of and during which
    pass; each pass's own peak; each label's own peak."""

    def __init__(self):
        self.total = 0
        self.at_peak = {}
        self.pass_at_peak = None
        self.output_at_peak = 0
        self.by_pass = {}  # pass -> its peak temporary total
        self.by_label = {}

    def add(self, sizes, where):
        temp = sum(n for label, n in sizes.items() if label != OUTPUT)
        for label, n in sizes.items():
            self.by_label[label] = max(self.by_label.get(label, 0), n)
        self.by_pass[where] = max(self.by_pass.get(where, 0), temp)
        if temp > self.total:
            self.total, self.at_peak, self.pass_at_peak = temp, dict(sizes), where
            self.output_at_peak = sizes.get(OUTPUT, 0)

    def report(self):
        return {"temp_peak_bytes": self.total, "pass_at_peak": self.pass_at_peak,
                "at_peak": self.at_peak, "peak_by_pass": self.by_pass,
                "peak_by_label": self.by_label}


def print_report(scale, report, output_bytes):
    """The breakdown as a few lines, MB and fractions of the final output."""
    mb, out = 2.0 ** 20, max(1, output_bytes)
    print("x%d temporary disk peak %.0f MB = %.3fx the output (%.0f MB), during %s:" % (
        scale, report["temp_peak_bytes"] / mb, report["temp_peak_bytes"] / out, out / mb,
        report["pass_at_peak"]))
    for label, n in sorted(report["at_peak"].items(), key=lambda kv: -kv[1]):
        if n:
            print("  %-28s %8.1f MB  %.3fx%s" % (label, n / mb, n / out,
                                                 "  (final, not counted)" if label == OUTPUT
                                                 else ""))
    print("  peak by pass: " + "; ".join("%s %.0f MB" % (where, n / mb)
                                          for where, n in report["peak_by_pass"].items()))
