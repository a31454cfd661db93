"""`python -m pipeline.datagen`: Tensor2Tensor's t2t-datagen for translation, on Apache Beam.

One command turns parallel text (line-aligned files, TSV, TMX, SGM, IWSLT XML, members of
archives) into T2T subword vocabularies and sharded, globally shuffled TFRecord files of
`tf.train.Example`s (`inputs`, `targets`: ids + EOS). The job runs as several Beam pipelines
(passes), each on the runner given by the Beam options:

1. plan (`pipeline.driver.datasets`, `VocabStep.plan`): which files form which dataset, which
   vocabularies are needed; nothing is read yet;
2. prepare (`pipeline.driver.prepare`): line counts, sizes and UTF-8 validity of every line-aligned
   file, and every other dataset converted into line pairs; misaligned or invalid input
   stops the job here, before anything is written (unless told to reject it). When every
   dataset is read in place and a vocabulary is learnt, this scan rides along in the first
   vocab pass (one pipeline fewer: a pipeline's fixed cost is much of a small job's time);
3. vocab (`pipeline.driver.vocabularies`, `pipeline.driver.vocab_passes`): each vocabulary
   given, reused or learnt, as its kind says (`pipeline.driver.kinds`: its learner's passes;
   `transforms.codecs.kinds`: its Vocabulary class);
4. encode (`pipeline.driver.encode`): encode every pair in parallel, shuffle deterministically and
   write the shards under the work directory;
5. commit (`pipeline.output.books`, `pipeline.output.commit`): check that pairs read = written + rejected
   for every dataset, move shards and rejects into place, write the JSON summary and, last,
   the completion marker.

`pipeline.driver.job.DatagenJob` orders these steps; this module is the command (`main`,
`--help`). Every pass runs through one `PassRunner` (`pipeline.driver.passes`); `--dry_run`
builds the same passes with the same builders and only translates them.

Example:
  python -m pipeline.datagen --train_source 'data/train.en' --train_target 'data/train.zh' \\
      --output_dir /tmp/t2t_data --runner DirectRunner
"""

import signal

if __name__ == "__main__":
    # Before any import starts a thread: every thread must block these for the driver to
    # hear them while its worker processes ignore them (see pipeline.runtime.interrupts).
    signal.pthread_sigmask(  # pipeline.runtime.interrupts.SIGNALS
        signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    from pipeline.runtime import console
    console.set_up()  # before Beam's import, and before the fork server inherits the environment
    # The worker processes' fork server imports Beam beside the driver's own imports.
    import sys
    from pipeline.runtime import local_worker_pool
    local_worker_pool.start_early(sys.argv[1:])

import argparse  # noqa: E402 (after the signal mask, on purpose)
import logging
import sys
from typing import Callable, NoReturn, Optional, Sequence

from pipeline.driver.job import DatagenJob
from pipeline.driver.options import job_flag_parser, parse_command_line
from pipeline.driver.passes import PassFailed, WorkerDied
from pipeline.output.summary import format_summary
from pipeline.runtime import console, local_worker_pool
from pipeline.runtime.interrupts import InterruptWatcher, Interrupted
from pipeline.runtime.errors import DatagenError, one_line
from pipeline.runtime.storage_errors import StoreLost

LOG = logging.getLogger("datagen")


WORKER_DIED_STATUS = 1  # as any other failure, but with one line and no traceback


def run(argv: Optional[Sequence[str]] = None,
        interrupted: Callable[[], Optional[int]] = lambda: None) -> dict:
    """Runs the job; returns the summary dict. Raises DatagenError on bad input or flags,
    Interrupted when `interrupted()` reports a signal (`InterruptWatcher.claim`: the job
    raises Interrupted itself once it returns a number)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = parse_command_line(argv)  # the flags, parsed once (unknown ones refused)
    with console.library_logging(command.config.job.log_level):
        return DatagenJob(command, interrupted).run()


class _HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, 0 included (`off` for a switch, `none` for
    a flag unset by default), unless the help says it already."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (not action.option_strings or "%(default)" in text
                or default is argparse.SUPPRESS):
            return text
        if default is False and action.nargs == 0:
            return text + " (default: off)"
        if default is None:
            # a flag with a value and no default; not -v (a shorthand), nor a flag whose
            # help says what happens without it
            if action.nargs == 0 or "default" in text or text.startswith("Required"):
                return text
            return text + " (default: none)"
        return text + " (default: %(default)s)"


USAGE = ("%(prog)s --output_dir DIR (--train_source FILES --train_target FILES | "
         "--train_tsv FILES | --train_tmx FILES) [flags] [Beam pipeline options]")


def print_help() -> None:
    parser = job_flag_parser(
        prog="python -m pipeline.datagen", formatter_class=_HelpFormatter,
        usage=USAGE,
        description="Tensor2Tensor-compatible translation datagen on Apache Beam. Required: "
                    "--output_dir and training data (--train_source with --train_target, "
                    "--train_tsv or --train_tmx).",
        epilog="Every Apache Beam pipeline option is accepted too (--runner, "
               "--direct_num_workers, --project, --setup_file, ...), and the job's own "
               "runner options: --local_worker_pool auto|off (DirectRunner's worker "
               "processes kept for every pass), --execution_mode_for_batch, "
               "--number_of_execution_retries, --execution_retry_delay (Flink; "
               "docs/runners.md).")
    parser.print_help()


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    if "-h" in argv or "--help" in argv:
        print_help()
        return 0
    if not argv:
        print("usage: " + USAGE % {"prog": "python -m pipeline.datagen"}, file=sys.stderr)
        print("python -m pipeline.datagen --help lists every flag", file=sys.stderr)
        return 2
    console.install()
    try:
        with InterruptWatcher() as watcher:
            summary = run(argv, watcher.claim)
    except DatagenError as e:
        LOG.error("%s", one_line(e))
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        stopped = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        LOG.error("interrupted (%s)", stopped)
        return stopped.exit_status
    except (WorkerDied, PassFailed, StoreLost) as e:
        LOG.error("%s", one_line(e))
        return WORKER_DIED_STATUS
    if summary["status"] == "dry_run":
        print("dry run: %d passes translated for runner %s; nothing was run or written"
              % (summary["passes"], summary["runner"]))
        return 0
    print(format_summary(summary))
    return 0


def _leave(status: int) -> NoReturn:
    """Ends the process without the interpreter's teardown (`local_worker_pool.leave`).
    After a run, the exit handlers still run first; after an interrupt or a dead worker
    they do not: Beam's threads waiting on killed workers would delay or garble the exit,
    or block it, and the run has cleaned up what it had to."""
    local_worker_pool.leave(status, status <= 128 and status != WORKER_DIED_STATUS)


if __name__ == "__main__":
    _leave(main())
