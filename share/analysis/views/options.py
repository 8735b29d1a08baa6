"""A view's options: parsed from a request's query (or the CLI's flags), checked, and made
canonical, so that equivalent requests (`?si=cpu`, `?si=1`, `?si=`) share one cached entry.

Options are a plain dict of JSON values: they cross to the compute processes and name cache
entries. Only values that differ from a view's defaults are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..flame.flame import FLAME_NODE_BUDGET
from ..model.tables import SampleTypeError, sample_index
from ..refine import query

Options = dict[str, Any]


class OptionError(ValueError):
    """A query value a view cannot use; the message names the parameter (a 400)."""


def _int_arg(args: Mapping[str, str], name: str, default: int) -> int:
    return _checked(query.whole, args, name, default)


def _fraction_arg(args: Mapping[str, str], name: str, default: float) -> float:
    return _checked(query.fraction, args, name, default)


def _checked(read: Any, args: Mapping[str, str], name: str, default: Any) -> Any:
    """query's reading of a number, its refusal an OptionError (a 400)."""
    try:
        return read(args, name, default)
    except query.QueryError as exc:
        raise OptionError(str(exc)) from None


def resolve_sample(
    args: Mapping[str, str], types: list[tuple[str, str]], default: str | None
) -> int | None:
    """The sample type ?si= (or pprof's ?sample_index=) names, else the profile's default."""
    try:
        return sample_index(types, default, args.get("si") or args.get("sample_index"))
    except SampleTypeError as exc:
        raise OptionError(str(exc)) from None


# Views of pprof's options beyond the flame graph and top (query.py parses them all).
PPROF_VIEWS = ("peek", "peektext", "tags", "tagstext", "dot", "svg", "warnings", "search", "folded")


def parse(
    view: str,
    args: Mapping[str, str],
    types: list[tuple[str, str]],
    default_type: str | None,
) -> Options:
    """The canonical options of one view from a query; raises OptionError."""
    options: Options = {}
    if view != "warnings":  # pprof's warnings do not depend on the sample type
        options["sample_index"] = resolve_sample(args, types, default_type)
    if view == "flamegraph":
        nf = "nf" if args.get("nf", "") != "" else "nodefraction"
        options["node_fraction"] = _fraction_arg(args, nf, 0.0)
        # The node budget is the default limit; ?nf= alone replaces it, and both may be given.
        default = FLAME_NODE_BUDGET if args.get(nf, "") == "" else 0
        options["budget"] = _int_arg(args, "budget", default)
    elif view in ("top", "toptext"):
        options["node_count"] = _int_arg(args, "n" if args.get("n") else "nodecount", 0)
    elif view == "peek":
        budget = _int_arg(args, "budget", FLAME_NODE_BUDGET)
        if budget != FLAME_NODE_BUDGET:
            options["budget"] = budget
    if view in ("flamegraph", "top", "toptext") or view in PPROF_VIEWS:
        try:
            options.update(query.view_options(view, args))
        except query.QueryError as exc:
            raise OptionError(str(exc)) from None
    diff = _diff_args(args) if view in DIFF_VIEWS else {}
    if diff and not args.get("si"):
        # A diff's default type is the combination's (the first default among the profile and
        # its bases, as Merge keeps it): the view resolves None once it has combined them.
        options["sample_index"] = None
    options.update(diff)
    return options


# --- diffs: the views of DIFF_VIEWS take diff_base= or base= (pprof's -diff_base, -base) --
DIFF_MODES = ("diff_base", "base")
DIFF_VIEWS = ("flamegraph", "top", "toptext", *PPROF_VIEWS)
# A profile id as links carry it (share.core.ID_LENGTH base64url characters).
PROFILE_ID = re.compile(r"[A-Za-z0-9_-]{16}")
_TRUE = ("", "1", "t", "true", "yes", "on")
_FALSE = ("0", "f", "false", "no", "off")


def profile_ref(text: str) -> str:
    """The id a reference names: an id, or a link holding one (HOST/ID, HOST/ID/raw, ...)."""
    text = text.strip()
    if PROFILE_ID.fullmatch(text):
        return text
    path = urlsplit(text).path if "://" in text else text.split("?")[0].split("#")[0]
    for segment in path.split("/"):
        if PROFILE_ID.fullmatch(segment):
            return segment
    raise OptionError(f"{text[:100]!r} is neither a profile id nor a link to one")


def _diff_args(args: Mapping[str, str]) -> Options:
    """diff_base / base (one id or link, or several separated by commas, merged as pprof
    merges several bases) and normalize, canonical: {} when there is no base."""
    given = {m: args.get(m, "").strip() for m in DIFF_MODES}
    if all(given.values()):
        raise OptionError("-base and -diff_base flags cannot both be specified")
    normalize = args.get("normalize")
    if normalize is not None and normalize.lower() not in _TRUE + _FALSE:
        raise OptionError(f"?normalize={normalize!r}: expected 1 or 0 (true or false)")
    for mode, value in given.items():
        if value:
            refs = [profile_ref(v) for v in value.split(",") if v.strip()]
            if not refs:
                raise OptionError(f"?{mode}={value!r} names no profile")
            out: Options = {mode: refs}
            if normalize is not None and normalize.lower() in _TRUE:
                out["normalize"] = True
            return out
    if normalize is not None and normalize.lower() in _TRUE:
        raise OptionError("normalize: must have base profile to normalize by (diff_base= or base=)")
    return {}


def diff_of(options: Mapping[str, Any]) -> tuple[str, list[str], bool]:
    """(mode, base ids, normalize) of canonical options; ("", [], False) for no diff."""
    for mode in DIFF_MODES:
        if options.get(mode):
            return mode, list(options[mode]), bool(options.get("normalize"))
    return "", [], False


def bases(options: Mapping[str, Any]) -> list[str]:
    """The ids of the profiles a view's options subtract (for the core to load)."""
    return diff_of(options)[1]


def key(view: str, options: Options) -> str:
    """The cache key of a view with these options (stable: keys sorted, compact)."""
    return view + ":" + json.dumps(options, sort_keys=True, separators=(",", ":"))
