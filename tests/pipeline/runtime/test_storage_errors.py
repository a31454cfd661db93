"""pipeline/runtime/storage_errors: a full disk and a store that stopped answering, found in
every shape an error reaches the driver in (the store client's own error, one raised from
it, a pass's error text holding a worker's traceback)."""

from pipeline.runtime.storage_errors import store_lost_message, unreachable_store

UNANSWERED = 'Could not connect to the endpoint URL: "http://10.0.0.2:5000/b/k"'


def test_a_store_that_did_not_answer_is_found_in_every_shape():
    assert unreachable_store(OSError(UNANSWERED)) == UNANSWERED
    try:
        try:
            raise OSError(UNANSWERED)
        except OSError as e:
            raise RuntimeError("pass 2 failed") from e
    except RuntimeError as e:
        assert unreachable_store(e) == UNANSWERED
    worker = RuntimeError("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                          "OSError: Read timeout on endpoint URL: \"http://h/b/k\"\n")
    assert unreachable_store(worker) == 'OSError: Read timeout on endpoint URL: "http://h/b/k"'


def test_other_errors_are_not_a_store_that_did_not_answer():
    assert unreachable_store(OSError("An error occurred (NoSuchBucket)")) is None
    assert unreachable_store(ValueError("misaligned")) is None
    assert unreachable_store(None) is None


def test_the_line_says_nothing_was_marked_complete_and_to_rerun():
    line = store_lost_message(UNANSWERED, "s3://b/out")
    assert UNANSWERED in line and "s3://b/out" in line and "marked nothing complete" in line
    assert "\n" not in line
