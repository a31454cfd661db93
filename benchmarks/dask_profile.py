"""Where a job's time goes on a Dask cluster, from the scheduler's own records, for
`bench_runners.py --dask_profile`.

`TaskStream` registers Dask's task-stream plugin on the scheduler before the job runs (a
client of the benchmark's own; the job's client submits the work), then reads every task the
job ran: its key, worker, compute time, and the time and bytes of the transfers of its inputs.
Tasks are assigned to passes by their start time, against the wall time the job logged each
pass's start. Per pass: tasks, compute seconds (summed over tasks), transfer seconds and bytes,
the share of the pass's wall time the workers computed, and the stages costing most.

`--dask_report FILE` also writes Dask's `performance_report` HTML (needs bokeh; skipped with
a line when it is not installed).
"""

import ast
import collections
import time


def stage_of(key):
    """The stage a task key names: `t2t-PASS-3-Encode/Encode` -> `3-Encode/Encode`; the job's
    helper tasks (`-out-`, `-side`, `-spec`) by kind; other keys by dask's prefix."""
    from dask.utils import key_split
    if isinstance(key, str) and key.startswith("("):
        try:
            key = ast.literal_eval(key)
        except (ValueError, SyntaxError):
            pass
    name = key[0] if isinstance(key, tuple) else key
    if isinstance(name, str) and name.startswith("t2t-"):
        rest = name.split("-", 2)[2]
        return rest.split("-", 1)[0] if rest[:1].isalpha() else rest
    return key_split(key)


class TaskStream:
    """The scheduler's task stream, read back per pass."""

    def __init__(self, address):
        from distributed import Client
        self.client = Client(address, timeout=60)
        self.client.get_task_stream(start=time.time())  # installs the plugin

    def passes(self, since, pass_starts, pass_ends):
        """{pass number: figures} of the tasks that started after `since`; `pass_starts`,
        `pass_ends`: {number: unix time} from the job's log."""
        stream = self.client.get_task_stream(start=since)
        numbers = sorted(pass_starts)
        per = collections.defaultdict(lambda: {"tasks": 0, "compute_s": 0.0, "transfer_s": 0.0,
                                               "spec_bytes": 0, "first": None,
                                               "stages": collections.Counter()})
        for task in stream:
            compute = [s for s in task["startstops"] if s["action"] == "compute"]
            if not compute:
                continue
            start = compute[0]["start"]
            number = max([n for n in numbers if pass_starts[n] <= start] or [0])
            figures = per[number]
            seconds = sum(s["stop"] - s["start"] for s in compute)
            figures["tasks"] += 1
            figures["compute_s"] += seconds
            figures["first"] = min(start, figures["first"] or start)
            stage = stage_of(task["key"])
            figures["stages"][stage] += seconds
            if stage == "spec":  # a stage's pickled DoFns, once a pass
                figures["spec_bytes"] += task.get("nbytes") or 0
            for s in task["startstops"]:
                if s["action"] == "transfer":
                    figures["transfer_s"] += s["stop"] - s["start"]
        for number, figures in per.items():
            wall = pass_ends.get(number, 0) - pass_starts.get(number, 0)
            figures["busy"] = figures["compute_s"] / wall if wall > 0 else None
            # the driver's share: building, translating and submitting the pass
            figures["first_task_after_s"] = round(figures.pop("first") - pass_starts[number], 2) \
                if number in pass_starts else None
            figures["compute_s"] = round(figures["compute_s"], 2)
            figures["transfer_s"] = round(figures["transfer_s"], 2)
            figures["stages"] = [(name, round(s, 2))
                                 for name, s in figures["stages"].most_common(5)]
        return dict(per)

    def bytes_moved(self):
        """Bytes the workers sent each other so far (each worker's outgoing transfers)."""
        def sent(dask_worker=None):
            return sum(t["total"] for t in dask_worker.transfer_outgoing_log)
        return sum(self.client.run(sent).values())

    def report(self, path, run):
        """Runs `run()` inside Dask's performance_report (written to `path`)."""
        try:
            import bokeh  # noqa: F401  (performance_report renders with it)
        except ImportError:
            print("--dask_report: bokeh is not installed; no report written", flush=True)
            return run()
        from distributed import performance_report
        with performance_report(filename=path):
            return run()

    def close(self):
        self.client.close()
