"""JobOptions: Beam's PipelineOptions with each view made once, not on every `view_as`.

`PipelineOptions.view_as(cls)` builds an argparse parser of `cls`'s options and parses the
command line again on every call (about 1 ms), and Beam calls it for nearly every transform
it applies, infers a type for or type-checks: ~700 times a pass here, ~0.5 s of a pass's
construction. A view holds nothing of its own (its values live in the options' shared
`_all_options` dict, which `view_as` fills with the class's defaults the first time), so
one view per class serves every later call; `view_as` here keeps them.

Why not a plain attribute: `PipelineOptions.__getattr__` and `__setattr__` look the name up
in the parsed options (`self._visible_options`), which an object that copy or pickle has
just made with `__new__` does not have yet, so any attribute lookup on it recurses until
RecursionError (`tests/pipeline/runtime/test_options_views.py` shows it on Beam's class).
`beam.Pipeline` deep-copies its options, so a cache set or read as an attribute while the
copy is being made breaks every pass. The views are therefore kept in the instance's
`__dict__` directly, are left out of its copied and pickled state (a copy makes its own:
its views must write to the copy's values, not the original's), and a view whose values
dict was replaced (`_all_options` set anew) is made again. When Beam's own `view_as` keeps
its views, the test of the defect fails and this class can go.
"""

from typing import Any, Dict, Type, TypeVar

from apache_beam.options.pipeline_options import PipelineOptions

_VIEWS = "_datagen_views"
T = TypeVar("T", bound=PipelineOptions)


class JobOptions(PipelineOptions):
    """The job's PipelineOptions: declares no option of its own; `view_as` keeps its views."""

    def view_as(self, cls: Type[T]) -> T:
        state = self.__dict__  # never an attribute lookup: see the module's docstring
        views = state.get(_VIEWS)
        if views is None:
            views = state[_VIEWS] = {}
        view = views.get(cls)
        if view is None or view.__dict__.get("_all_options") is not state.get("_all_options"):
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(super().__getstate__())
        state.pop(_VIEWS, None)
        return state
