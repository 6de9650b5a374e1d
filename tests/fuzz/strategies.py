"""Hypothesis strategies: command lines and request arguments for every fedplan command, with random files.

Values are a mix of: values in the declared range (counts small to moderate most of the time, so that valid
runs finish), boundary values (the declared ends and just outside them, 0, -1, subnormals, 1e308, 1e400, NaN,
±inf, 10**20, 2**53 + 1, "1e23", 5000 digits), random text (any Unicode but NUL, which argv cannot hold) and,
for the options that name files, random files: plain segment lists, real fedplan exports (intact, mutated or
cut short), LIBSVM data, sweep configs, random bytes and the pathological files of :mod:`tests.fuzz.files`.
Output options get new names, folders, missing folders, a file fedplan did not write, /dev/null and /dev/full.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import yaml

from fedplan.planner.simulate.sweep import RUNNERS, sweep_options
from fedplan.planner.tasks.base import Option, flag_name, options
from fedplan.planner.tasks.registry import TASKS
from tests.fuzz.files import SharedFiles
from tests.fuzz.harness import ApiCase, CliCase

#: Every command but ``app``: its words -> its request class.
COMMANDS = {" ".join(request_type.command): request_type for request_type in TASKS}
#: Commands whose valid runs simulate or validate: their counts stay smaller.
HEAVY = ("simulate", "validate", "sweep", "plan")
#: Text options that name an input file, and the kind of file.
FILE_ROLES = {"schedule": "schedule", "dataset": "dataset", "test_file": "dataset", "config": "config"}
DATASETS = ("synthetic", "synthetic-softmax", "synthetic-linear", "breast_cancer", "iris", "wine", "digits",
            "diabetes")
R0_VALUES = ("r0(sigma)", "1/e", "0.1", "0.36787944117144233", "0.3678794411714424", "0.37", "0", "-1", "nan",
             "inf", "1/0", "e", "1/e/0", "1e400", "r0(sigma)*2", "(1/e)", "1 / e", "__import__('os').getcwd()",
             "1/3", "2**-1000", "1e-320", "R0(SIGMA)", "r0(σ)", "1/e ", "exp(-1)")
#: Dask schedulers that never leave this machine (a random host name would be looked up).
SCHEDULERS = ("tcp://127.0.0.1:9", "127.0.0.1:9", "", " ", "tcp://", "tcp://127.0.0.1:99999", "tcp://[::1]:9",
              "ftp://127.0.0.1:9", "tcp://127.0.0.1:notaport", "inproc://nothing")
#: Counts bounded here for the machine's sake (a sweep's helper processes are real processes).
SAFE_CLI = {"processes": ("1", "2", "0", "-1", "nan", "2.5", "1e400", "x", "inf", "", "1e0")}
SAFE_API: dict[str, tuple] = {"processes": (1, 2, 0, -1, math.nan, 2.5, None, "2", True, 1e400, [2])}

BOUNDARY_TOKENS = ("0", "-0", "-1", "1", "1e-320", "5e-324", "4.9e-324", "1e308", "1.7976931348623157e308", "1e400",
                   "-1e400", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", str(10**20), str(2**53 + 1), "1e23",
                   "9" * 5000, "1e4", "2.5", "0.5", "1_000", "0x10", " 7 ", "", " ", "1e-10", "-1e-10", "+3", "1e",
                   "١٢", "²", "1,5", "0.1.2")
CHARACTERS = st.characters(codec="utf-8", exclude_characters="\x00")
RANDOM_TEXT = st.text(CHARACTERS, max_size=30)
NAME_CHARACTERS = st.characters(codec="utf-8", exclude_characters="\x00/")
#: Random text that stays a relative path (an output must land in the input's folder).
RELATIVE_TEXT = RANDOM_TEXT.map(lambda text: text.replace("/", "_").lstrip("~"))

JUNK_PLAIN = (None, [], {}, "", " ", "abc", [1, 2], {"a": 1}, True, False, 10**400, -(10**400), math.nan, math.inf,
              -math.inf, -0.0, 5e-324, 1e308, 2**53 + 1, 10**20, "1e4", "nan", [[1]], [None])
JUNK = (*JUNK_PLAIN, (), b"1", 1j, np.float64("nan"), np.int64(3), np.float32(1e-45), np.array([1.0, 2.0]),
        np.array(5), Fraction(1, 3), Decimal("1e400"), Decimal("nan"), Decimal("sNaN"), range(3), {1, 2}, Path("."),
        float, "🙂")


def weighted(*pairs: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """``one_of`` with each strategy repeated as often as its weight."""
    return st.one_of([strategy for weight, strategy in pairs for _ in range(weight)])


@dataclass
class Arg:
    """A drawn value: its argv words (or Python value), the files it needs and the paths it names."""

    words: list[str] = field(default_factory=list)
    value: Any = None
    files: dict[str, bytes | None] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)


# -- numbers ---------------------------------------------------------------------------------------------------


def _bounds(option: Option) -> tuple[int | None, int | None]:
    return (None if option.low is None else int(option.low)), (None if option.high is None else int(option.high))


def count_values(option: Option, heavy: bool) -> st.SearchStrategy[int]:
    """Whole numbers in the declared range: mostly small, sometimes moderate."""
    low, high = _bounds(option)
    low = 0 if low is None else low

    def up_to(size: int) -> st.SearchStrategy[int]:
        return st.integers(low, low + size if high is None else min(high, low + size))

    return weighted((5, up_to(10)), (2, up_to(100 if heavy else 1000)), (1, up_to(2000 if heavy else 10**6)))


def real_values(option: Option, good: bool = False) -> st.SearchStrategy[float]:
    """Finite floats in the declared range: near its low end and log-uniform, and (``good`` False) anywhere in it."""
    low, high = option.low, option.high
    base = 0.0 if low is None else low
    top = base + 10 if high is None else min(high, base + 10)
    near = st.floats(min_value=base, max_value=top, exclude_min=option.low_open and low is not None,
                     exclude_max=option.high_open and high is not None and top == high, allow_nan=False,
                     allow_infinity=False, allow_subnormal=False if good else None)
    exponent_top = math.log10(high) if high is not None and high > 0 else 3.0
    logs = st.floats(min_value=-8, max_value=exponent_top).map(lambda exponent: 10.0**exponent)
    logs = logs.filter(lambda value: _inside(option, value))
    if good:
        return weighted((1, near), (1, logs))
    anywhere = st.floats(min_value=low, max_value=high, exclude_min=option.low_open and low is not None,
                         exclude_max=option.high_open and high is not None, allow_nan=False, allow_infinity=False)
    return weighted((2, anywhere), (3, near), (2, logs))


def _inside(option: Option, value: float) -> bool:
    if option.low is not None and (value < option.low or (option.low_open and value == option.low)):
        return False
    return not (option.high is not None and (value > option.high or (option.high_open and value == option.high)))


def edge_numbers(option: Option) -> list[float | int]:
    """The declared ends and their neighbours just inside and outside."""
    found: list[float | int] = []
    for bound in (option.low, option.high):
        if bound is None:
            continue
        if option.kind == "count":
            found += [int(bound), int(bound) - 1, int(bound) + 1, int(bound) + 0.5]
        else:
            found += [float(bound), math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf), bound - 1,
                      bound + 1]
    return found


def edge_tokens(option: Option) -> list[str]:
    return [str(value) if isinstance(value, int) else repr(value) for value in edge_numbers(option)]


def _log_uniform(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(low), math.log10(high)).map(lambda exponent: 10.0**exponent)


#: Values that valid inputs usually have, by field name (drawn, within the declared range, by valid inputs).
TYPICAL = {
    "noise_multiplier": st.floats(1.2, 5.0), "noise_to_sensitivity": st.floats(0.5, 5.0),
    "target_epsilon": st.floats(0.5, 10.0), "epsilon": st.floats(0.1, 10.0), "upload_epsilon": st.floats(0.1, 5.0),
    "delta": _log_uniform(1e-8, 1e-3), "target_delta": _log_uniform(1e-8, 1e-3),
    "delta_slack": _log_uniform(1e-8, 1e-3),
    "sample_rate": _log_uniform(1e-3, 0.5), "client_sample_rate": st.floats(0.1, 1.0),
    "steps": st.integers(1, 2000), "rounds": st.integers(1, 40), "iterations": st.integers(10, 300),
    "n_samples": st.integers(60, 800), "n_features": st.integers(2, 20), "clients": st.integers(2, 12),
    "initial_size": st.integers(1, 16), "client_size": st.integers(100, 5000), "batch_size": st.integers(1, 32),
    "examples_per_worker": st.integers(100, 10_000), "examples": st.integers(100, 10_000),
    "dataset_size": st.integers(100, 100_000), "workers": st.integers(1, 10), "epochs": st.floats(0.5, 3.0),
    "grad_computations": st.integers(100, 5000), "learning_rate": _log_uniform(1e-3, 1.0),
    "time_budget": st.floats(1.0, 10.0), "clipping_norm": st.floats(0.1, 5.0), "clients_per_round": st.integers(1, 10),
    "edges": st.integers(1, 5), "test_fraction": st.floats(0.1, 0.5), "seeds": st.integers(0, 5),
    "seed": st.integers(0, 100), "max_rounds": st.integers(1, 200), "eval_every": st.integers(1, 20),
    "faults": st.integers(0, 3),
}


def good_number(name: str, option: Option, heavy: bool) -> st.SearchStrategy[int | float]:
    """A valid number for a field: its typical values mostly, else anywhere sensible in its declared range."""
    declared = count_values(option, heavy) if option.kind == "count" else real_values(option, good=True)
    if name not in TYPICAL:
        return declared
    typical = TYPICAL[name].map(lambda value: int(value) if option.kind == "count" else float(value))
    return weighted((3, typical.filter(lambda value: _inside(option, value))), (1, declared))


def count_token(name: str, option: Option, heavy: bool, good: bool) -> st.SearchStrategy[str]:
    if good:
        return good_number(name, option, heavy).map(str)
    formatted = count_values(option, heavy).flatmap(
        lambda value: st.sampled_from([str(value), str(value), f"{value}.0", f"{float(value):g}"]))
    return weighted((2, formatted), (2, st.sampled_from(edge_tokens(option) or ["0"])),
                    (2, st.sampled_from(BOUNDARY_TOKENS)), (1, RANDOM_TEXT))


def real_token(name: str, option: Option, good: bool) -> st.SearchStrategy[str]:
    if good:
        return good_number(name, option, False).flatmap(lambda value: st.sampled_from([repr(value), f"{value:g}"]))
    formatted = real_values(option).flatmap(lambda value: st.sampled_from([repr(value), f"{value:g}", f"{value:.3e}"]))
    return weighted((2, formatted), (2, st.sampled_from(edge_tokens(option) or ["0"])),
                    (2, st.sampled_from(BOUNDARY_TOKENS)), (1, RANDOM_TEXT))


def choice_token(option: Option, good: bool) -> st.SearchStrategy[str]:
    valid = st.sampled_from(option.choices)
    if good:
        return valid
    variants = valid.flatmap(lambda choice: st.sampled_from(
        [choice.upper(), f" {choice}", choice.replace("_", "-"), choice.replace("-", "_"), choice[:-1] or "x"]))
    return weighted((1, valid), (2, variants), (2, RANDOM_TEXT))


# -- files -----------------------------------------------------------------------------------------------------


def file_name(suffixes: tuple[str, ...], good: bool = False) -> st.SearchStrategy[str]:
    """A file name in the input's folder: plain, with spaces or Unicode, or (``good`` False) with a leading dash,
    very long or random."""
    plain = ["input", "data", "my input", "ünïcödé"]
    if good:
        return st.tuples(st.sampled_from(plain), st.sampled_from(suffixes)).map("".join)
    odd = st.sampled_from([*plain, "-dash", "a" * 200, "x;y", "$HOME", "*", "~", "line\nbreak", "tab\there", "'"])
    random = st.text(NAME_CHARACTERS, min_size=1, max_size=16)
    names = st.tuples(weighted((4, odd), (1, random)), st.sampled_from(suffixes)).map("".join)
    return names.filter(lambda name: name not in (".", "..") and len(name.encode()) <= 240)


def _json_number() -> st.SearchStrategy:
    return st.one_of(st.floats(), st.integers(-(10**30), 10**30), st.sampled_from([0.01, 1.1, 100, 1, 0.5, 1e-5]),
                     st.sampled_from(JUNK_PLAIN), RANDOM_TEXT)


def _csv_cell() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(["0.01", "1.1", "100", "1", "0.5", "1e4"]), st.sampled_from(BOUNDARY_TOKENS),
                     st.floats().map(repr), RANDOM_TEXT.map(lambda text: text.replace("\n", " ")))


REALISTIC_SEGMENT = st.tuples(st.floats(1e-4, 1.0), st.floats(0.3, 5.0), st.integers(1, 10**5))


@st.composite
def segment_files(draw, good: bool) -> tuple[str, bytes]:
    """A plain list of segments, CSV or JSON: realistic (``good``), else with random header and values."""
    columns = ["sample_rate", "noise_multiplier", "steps"]
    if good:
        rows = draw(st.lists(REALISTIC_SEGMENT, min_size=1, max_size=4))
        if draw(st.booleans()):
            header = draw(st.permutations(columns))
            lines = [",".join(header)] + [",".join(repr(dict(zip(columns, row, strict=True))[name])
                                                   for name in header) for row in rows]
            return draw(file_name((".csv",), good)), ("\n".join(lines) + "\n").encode()
        items = [dict(zip(columns, row, strict=True)) for row in rows]
        data = {"segments": items} if draw(st.booleans()) else items
        return draw(file_name((".json",), good)), json.dumps(data).encode()
    rows = draw(st.lists(st.tuples(_json_number(), _json_number(), _json_number()), max_size=5))
    if draw(st.booleans()):
        header = draw(st.permutations(columns))
        header = draw(st.sampled_from([header, header[:2], [*header, "extra"], ["SAMPLE_RATE", *header[1:]]]))
        body = [[draw(_csv_cell()) for _ in header] for _ in rows]
        lines = [",".join(header)] + [",".join(row) for row in body]
        return draw(file_name((".csv", ".CSV", ".txt"))), ("\n".join(lines) + "\n").encode()
    items = [list(row) for row in rows] if draw(st.booleans()) else [dict(zip(columns, row, strict=True))
                                                                      for row in rows]
    data = {"segments": items} if draw(st.booleans()) else items
    return draw(file_name((".json", ".JSON", ".txt"))), json.dumps(data).encode()


NUMBER = re.compile(rb"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?")


@st.composite
def mutated(draw, content: bytes) -> bytes:
    """``content`` with one number replaced, cut short or a line dropped."""
    how = draw(st.sampled_from(["number", "number", "cut", "line"]))
    if how == "number":
        matches = list(NUMBER.finditer(content))
        if matches:
            match = draw(st.sampled_from(matches))
            token = draw(st.one_of(st.sampled_from(BOUNDARY_TOKENS), st.sampled_from(["null", '"x"', "[]", "true"])))
            return content[:match.start()] + token.encode() + content[match.end():]
    if how == "cut" and content:
        return content[:draw(st.integers(0, len(content) - 1))]
    lines = content.split(b"\n")
    index = draw(st.integers(0, max(len(lines) - 1, 0)))
    return b"\n".join(lines[:index] + lines[index + 1:])


@st.composite
def libsvm_files(draw, good: bool) -> tuple[str, bytes]:
    """LIBSVM text: clean (labels ±1, sorted indices) when ``good``, else any token anywhere."""
    if good:
        rows = draw(st.lists(st.tuples(st.sampled_from(["1", "-1", "+1", "0"]),
                                       st.lists(st.integers(1, 12), unique=True, max_size=6),
                                       st.lists(st.floats(-5, 5), min_size=6, max_size=6)), min_size=1, max_size=80))
        lines = [" ".join([label, *(f"{index}:{value:.4g}" for index, value in zip(sorted(indices), values,
                                                                                      strict=False))])
                 for label, indices, values in rows]
        return draw(file_name((".libsvm", ".txt", ".svm", ""), good)), ("\n".join(lines) + "\n").encode()
    label = st.one_of(st.sampled_from(["1", "-1", "0", "2", "nan", "inf", "1e400", "x", "", "3.5"]), RANDOM_TEXT)
    index = st.one_of(st.integers(1, 30).map(str), st.sampled_from(["0", "-1", "99999999999", "1.5", "x",
                                                                     "2147483648", "", "٣"]))
    value = st.one_of(st.floats().map(repr), st.sampled_from(["nan", "inf", "x", "", "1e400", "-0"]))
    token = st.one_of(st.tuples(index, value).map(":".join), RANDOM_TEXT.map(lambda text: text.replace("\n", "")))
    rows = draw(st.lists(st.tuples(label, st.lists(token, max_size=6)), max_size=20))
    lines = [" ".join([row_label, *tokens]) for row_label, tokens in rows]
    return draw(file_name((".libsvm", ".txt", ".svm", "", ".csv"))), ("\n".join(lines) + "\n").encode()


SMALL_RUN = {"n_samples": 200, "n_features": 5, "rounds": 5, "steps": 50, "iterations": 50, "clients": 4,
             "workers": 4, "edges": 2, "epochs": 0.5}


def plain_value(option: Option | None, good: bool) -> st.SearchStrategy:
    """A value a YAML or JSON file can hold, for ``option`` (``good``: in range) or for no option."""
    if option is None:
        return st.sampled_from(JUNK_PLAIN)
    return api_value("", option, heavy=True, good=good, plain=True)


@st.composite
def sweep_configs(draw, good: bool) -> tuple[str, bytes]:
    """A sweep config: an algorithm, small-run options, a grid or a random block, and seeds; valid values when
    ``good``, else anything may be wrong."""
    if good:
        algorithm = draw(st.sampled_from(sorted(RUNNERS)))
    else:
        algorithm = draw(weighted((6, st.sampled_from(sorted(RUNNERS))), (1, RANDOM_TEXT),
                                  (1, st.sampled_from(JUNK_PLAIN))))
    fields = sweep_options(RUNNERS[algorithm]) if isinstance(algorithm, str) and algorithm in RUNNERS else {}
    names = st.sampled_from(sorted(fields)) if fields else RANDOM_TEXT
    if not good:
        names = weighted((6, names), (1, RANDOM_TEXT), (1, st.sampled_from(["seed", "seeds", "validate"])))
    config: dict[str, Any] = {"algorithm": algorithm}
    chosen = draw(st.lists(names, unique=True, max_size=3))
    config["options"] = {name: draw(plain_value(fields.get(name), good)) for name in chosen}
    if good or draw(st.integers(0, 3)) > 0:  # keep the runs small
        config["options"] = {**{name: value for name, value in SMALL_RUN.items() if name in fields},
                             **config["options"]}
    mode = draw(st.sampled_from(["grid", "grid", "random", "none"] + ([] if good else ["both"])))
    if mode in ("grid", "both"):
        swept = draw(st.lists(names, unique=True, min_size=1 if good else 0, max_size=2))
        for name in swept:
            config["options"].pop(name, None)
        config["grid"] = {name: draw(st.lists(plain_value(fields.get(name), good), min_size=1 if good else 0,
                                              max_size=3)) for name in swept}
    if mode in ("random", "both"):
        kinds = ["uniform", "log_uniform", "integers", "choice"] + ([] if good else ["normal"])
        parameters = {}
        for name in draw(st.lists(names, unique=True, min_size=1 if good else 0, max_size=2)):
            config["options"].pop(name, None)
            parameters[name] = {draw(st.sampled_from(kinds)): draw(st.lists(plain_value(fields.get(name), good),
                                                                            min_size=1, max_size=3))}
        config["random"] = {"samples": draw(st.integers(1, 4) if good else st.one_of(st.integers(1, 4),
                                                                                      st.sampled_from(JUNK_PLAIN))),
                            "seed": draw(st.integers(0, 10)), "parameters": parameters}
    if good:
        seeds = draw(st.one_of(st.integers(1, 3), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)))
    else:
        seeds = draw(st.one_of(st.integers(1, 3), st.lists(st.integers(0, 5), max_size=3),
                               st.sampled_from(JUNK_PLAIN), st.sampled_from([10**9, 10**20, 100_001, "2"])))
    if draw(st.booleans()):
        config["seeds"] = seeds
    if not good and draw(st.integers(0, 5)) == 0:
        config[draw(RANDOM_TEXT)] = draw(st.sampled_from(JUNK_PLAIN))
    text = yaml.safe_dump(config, allow_unicode=True) if draw(st.booleans()) else json.dumps(config)
    return draw(file_name((".yaml", ".yml") if good else (".yaml", ".yml", ".json", ".txt", ""), good)), text.encode()


def junk_files(suffixes: tuple[str, ...]) -> st.SearchStrategy[tuple[str, bytes]]:
    contents = st.one_of(st.sampled_from([b"", b"{}", b"[]", b"null", b'{"segments": 5}', b'"x"', b"\xef\xbb\xbf",
                                          b"a,b\n1,2\n", b"\xff\xfe\x00", b"- - -\n", b"\n\n\n"]),
                         st.binary(max_size=300), RANDOM_TEXT.map(str.encode))
    return st.tuples(file_name(suffixes), contents)


def _written(pair: tuple[str, bytes | None]) -> Arg:
    name, content = pair
    return Arg(words=[name], value=name, files={name: content}, paths=[name])


def input_file(role: str, shared: SharedFiles, good: bool) -> st.SearchStrategy[Arg]:
    """A file for an input option of kind ``role`` (schedule, dataset, config): made, an export (intact when
    ``good``, else mutated), or (not ``good``) junk or one of the shared pathological files."""
    suffixes = {"schedule": (".csv", ".json", ".yaml", ".yml", ".txt", ""),
                "dataset": (".libsvm", ".txt", ".svm", "", ".csv"),
                "config": (".yaml", ".yml", ".json", ".txt", "")}[role]
    made = {"schedule": segment_files, "dataset": libsvm_files, "config": sweep_configs}[role](good)
    strategies = [(6, made.map(_written))]
    if shared.exports and role == "schedule":
        names = st.sampled_from(sorted(shared.exports))
        if good:
            strategies.append((4, names.map(lambda name: _written((name, shared.exports[name])))))
        else:
            strategies.append((3, names.flatmap(lambda name: st.tuples(st.just(name), mutated(shared.exports[name])))
                               .map(_written)))
    if not good:
        def static(name: str) -> Arg:
            path = str(shared.paths[name])
            return Arg(words=[path], value=path, paths=[path])

        strategies += [(2, junk_files(suffixes).map(_written)), (3, st.sampled_from(sorted(shared.paths)).map(static))]
    return weighted(*strategies)


OUT_SUFFIXES = (".csv", ".json", ".yaml", ".yml")


def output_file(shared: SharedFiles, good: bool) -> st.SearchStrategy[Arg]:
    """Where ``--out`` may point: a new name (``good``), or a folder, a missing folder, someone else's file, an
    export to replace, a device, an odd or random name."""

    def new(name: str) -> Arg:
        return Arg(words=[name], value=name, paths=[name])

    fresh = file_name(OUT_SUFFIXES, good=True).map(new)
    if good:
        return fresh
    foreign = st.tuples(file_name(OUT_SUFFIXES), st.just(b"my own notes, not fedplan's\n"))
    folders = st.sampled_from(["outdir", "outdir/", "."]).map(lambda name: _written((name.rstrip("/") or ".", None)))
    odd = st.sampled_from(["nofolder/out.json", "/dev/null", "/dev/full", "", " ", "-", "x" * 300 + ".json",
                           "out.json/", "nofolder/"]).map(new)
    strategies = [(2, fresh), (2, file_name((*OUT_SUFFIXES, ".txt", ".parquet", "", ".CSV", ".py")).map(new)),
                  (1, foreign.map(_written)), (1, folders), (2, odd),
                  (1, RELATIVE_TEXT.map(lambda text: Arg(words=[text], value=text, paths=[text])))]
    if shared.exports:
        strategies.append((1, st.sampled_from(sorted(shared.exports)).map(
            lambda name: _written((name, shared.exports[name])))))
    return weighted(*strategies)


# -- the command line ------------------------------------------------------------------------------------------


def text_arg(name: str, shared: SharedFiles, good: bool) -> st.SearchStrategy[Arg]:
    """A value of a text option, by what the option means."""
    if name == "out":
        return output_file(shared, good)
    if name == "scheduler":
        near = st.text(alphabet="0123456789:-+. ", max_size=8).map(lambda text: "tcp://127.0.0.1:" + text)
        return weighted((3, st.sampled_from(SCHEDULERS)), (1, near), (1, st.just("local"))).map(
            lambda text: Arg(words=[text], value=text))
    words = RANDOM_TEXT.map(lambda text: Arg(words=[text], value=text))
    if name in FILE_ROLES:  # whatever the value, it is the file name a message may name
        strategies = [(6, input_file(FILE_ROLES[name], shared, good))]
        if name == "dataset":
            strategies.append((4, st.sampled_from(DATASETS).map(lambda text: Arg(words=[text], value=text,
                                                                                 paths=[text]))))
        if not good:
            strategies.append((1, RANDOM_TEXT.map(lambda text: Arg(words=[text], value=text, paths=[text]))))
        return weighted(*strategies)
    if name == "r0":
        valid = st.sampled_from(R0_VALUES[:5]).map(lambda text: Arg(words=[text], value=text))
        return valid if good else weighted((4, st.sampled_from(R0_VALUES).map(
            lambda text: Arg(words=[text], value=text))), (1, words))
    return words


def cli_arg(name: str, option: Option, heavy: bool, shared: SharedFiles, good: bool) -> st.SearchStrategy[Arg]:
    """The argv words of one option's value (one or more for a multiple option)."""
    if name in SAFE_CLI:
        return st.sampled_from(SAFE_CLI[name][:2] if good else SAFE_CLI[name]).map(lambda text: Arg(words=[text]))
    if option.kind == "text":
        return text_arg(name, shared, good)
    token = {"count": lambda: count_token(name, option, heavy, good), "real": lambda: real_token(name, option, good),
             "choice": lambda: choice_token(option, good)}[option.kind]()
    if option.multiple:
        lists = st.lists(token, min_size=1, max_size=4)
        return (lists if good else weighted((4, lists), (1, st.just([])))).map(lambda words: Arg(words=list(words)))
    return token.map(lambda text: Arg(words=[text]))


#: Fields a valid input of a command gives together (one of the alternatives), beyond the required ones.
GOOD_GROUPS = {
    "epsilon": (("sample_rate", "noise_multiplier", "steps", "delta"), ("schedule",)),
    "delta": (("sample_rate", "noise_multiplier", "steps"), ("schedule",)),
    "fedsgd-dpc optimum": (("strong_convexity", "smoothness", "gradient_bound", "heterogeneity", "initial_distance",
                            "client_size", "model_dim", "clipping_norm"), ("dataset",)),
    "simulate fedsgd-dpc": (("target_epsilon",), ("noise_multiplier",)),
}
#: Options a mostly-valid input leaves out (every value of theirs is an error or a heavy cluster).
GOOD_SKIPS = frozenset({"scheduler"})


def _chosen(draw, request_type: type, names: list[str], *, always_required: bool, good: bool) -> list[str]:
    """Which fields an input gives: the required ones (nearly always), one of each exclusive group (mostly) and a
    random few of the rest."""
    defaults = {item.name: item.default for item in dataclasses.fields(request_type)}
    required = [name for name in names if defaults[name] is MISSING]
    grouped = {name for group in request_type.one_of for name in group.names}
    chosen = [name for name in required if always_required or good or draw(st.integers(0, 9)) > 0]
    for group in request_type.one_of:
        members = [name for name in group.names if name in names and name not in chosen]
        if not members:
            continue
        mode = "one" if good else draw(st.sampled_from(["one"] * 5 + ["none", "two"]))
        if mode == "one" or (mode == "two" and len(members) < 2):
            chosen.append(draw(st.sampled_from(members)))
        elif mode == "two":
            chosen += draw(st.permutations(members))[:2]
    if good and " ".join(request_type.command) in GOOD_GROUPS:
        together = draw(st.sampled_from(GOOD_GROUPS[" ".join(request_type.command)]))
        chosen += [name for name in together if name in names and name not in chosen]
    rest = [name for name in names if name not in required and name not in grouped and name not in chosen
            and not (good and name in GOOD_SKIPS)]
    if rest:
        chosen += draw(st.lists(st.sampled_from(rest), unique=True, max_size=min(len(rest), 6)))
    return draw(st.permutations(chosen))


#: How many of an input's values are drawn valid: all (4 in 9 inputs), all but one (3 in 9) or none (2 in 9).
MODES = ("good",) * 4 + ("one bad",) * 3 + ("chaos",) * 2


def _goodness(draw, mode: str, chosen: list[str]) -> Callable[[str], bool]:
    """Whether each chosen field's value is drawn valid, in ``mode``."""
    if mode == "one bad" and chosen:
        bad = draw(st.sampled_from(chosen))
        return lambda name: name != bad
    return lambda name: mode == "good"


@st.composite
def cli_cases(draw, request_type: type, shared: SharedFiles) -> CliCase:
    """``fedplan <command> …`` with a random set of options and values."""
    heavy = request_type.command[0] in HEAVY
    cli_options = {name: option for name, option in options(request_type).items() if option.cli}
    mode = draw(st.sampled_from(MODES))
    chosen = _chosen(draw, request_type, list(cli_options), always_required=False, good=mode != "chaos")
    good = _goodness(draw, mode, chosen)
    argv, positional, files, paths = list(request_type.command), [], {}, []
    for name in chosen:
        option = cli_options[name]
        spellings = [flag_name(name)] if good(name) else [flag_name(name)] * 3 + [*option.flags, *option.deprecated]
        spelling = draw(st.sampled_from(spellings))
        if option.kind == "flag":
            argv.append(spelling if good(name) or draw(st.integers(0, 4)) else f"{spelling}=yes")
            continue
        arg = draw(cli_arg(name, option, heavy, shared, good(name)))
        files.update(arg.files)
        paths += arg.paths
        if option.positional:
            positional += arg.words
            continue
        if len(arg.words) == 1 and spelling.startswith("--") and draw(st.booleans()):
            argv.append(f"{spelling}={arg.words[0]}")
        else:
            argv += [spelling, *arg.words]
    if positional:
        at = draw(st.sampled_from([len(request_type.command), len(argv)]))
        argv[at:at] = positional
    if draw(st.integers(0, 9)) < 7:
        argv.append("--json")
    if mode == "chaos" and draw(st.integers(0, 9)) == 0:
        argv.append(draw(st.sampled_from(["--no-such-option", "stray", "--json=1", "-x", "--"])))
    return CliCase(argv=argv, files=files, paths=paths)


# -- the API ---------------------------------------------------------------------------------------------------


def api_value(name: str, option: Option, heavy: bool, good: bool = False, plain: bool = False) -> st.SearchStrategy:
    """A Python value for a field: in range (``good``), else also boundary values and wrong types (``plain``:
    only what YAML can hold)."""
    junk = st.sampled_from(JUNK_PLAIN if plain else JUNK)
    if name in SAFE_API:
        return st.sampled_from(SAFE_API[name][:2] if good else SAFE_API[name])
    if name == "scheduler":
        return st.sampled_from(SCHEDULERS)
    if option.kind == "count":
        valid = good_number(name, option, heavy) if good else count_values(option, heavy)
        one = valid if good else weighted((2, valid), (2, st.sampled_from(edge_numbers(option) or [0])),
                                          (1, valid.map(float)), (2, junk), (1, st.sampled_from(BOUNDARY_TOKENS)))
    elif option.kind == "real":
        valid = good_number(name, option, heavy) if good else real_values(option)
        one = valid if good else weighted((2, valid), (2, st.sampled_from(edge_numbers(option) or [0.0])),
                                          (1, st.integers(-3, 10**6)), (2, junk), (1, st.sampled_from(BOUNDARY_TOKENS)))
    elif option.kind == "choice":
        valid = st.sampled_from(option.choices)
        one = valid if good else weighted((1, valid), (1, RANDOM_TEXT), (2, junk), (1, valid.map(str.upper)))
    elif option.kind == "flag":
        one = st.booleans() if good else weighted((1, st.booleans()), (2, junk),
                                                  (1, st.sampled_from([0, 1, "true", "false"])))
    else:
        one = RELATIVE_TEXT.filter(str.strip) if good else weighted((3, RELATIVE_TEXT), (1, junk))
    if not option.multiple:
        return one
    if good:
        return weighted((3, st.lists(one, min_size=1, max_size=4)), (1, st.lists(one, min_size=1, max_size=3)
                                                                        .map(tuple)))
    return weighted((3, st.lists(one, min_size=1, max_size=4)), (1, st.lists(one, max_size=3).map(tuple)),
                    (1, st.just([])), (1, one), (1, st.lists(one, max_size=2).map(lambda items: [items])))


def _arrays(elements: st.SearchStrategy, shape=None) -> st.SearchStrategy:
    from hypothesis.extra import numpy as hnp

    shapes = shape if shape is not None else hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=30)
    return hnp.arrays(np.float64, shapes, elements=elements)


#: Rows of the features and labels a valid API input gives (the two must agree).
ROWS = 40


def object_value(name: str, good: bool) -> st.SearchStrategy:
    """API-only values: segments, features, labels (valid ones when ``good``)."""
    junk = st.sampled_from(JUNK)
    number = st.one_of(st.floats(), st.integers(-3, 10**6), st.sampled_from([0.01, 1.1, 100]), junk)
    if name == "segments":
        realistic = st.lists(REALISTIC_SEGMENT, min_size=1, max_size=4)
        if good:
            return realistic
        tuples = st.tuples(number, number, number)
        dicts = st.fixed_dictionaries({"sample_rate": number, "noise_multiplier": number, "steps": number})
        return weighted((1, realistic), (3, st.lists(st.one_of(tuples, dicts), max_size=4)), (1, junk),
                        (1, st.lists(number, max_size=4)))
    if name == "features":
        valid = _arrays(st.floats(-5, 5), (ROWS, 3))
        if good:
            return valid
        return weighted((1, valid), (2, _arrays(st.floats(-5, 5))), (1, _arrays(st.floats())), (1, junk),
                        (1, st.lists(st.lists(st.floats(-5, 5), min_size=3, max_size=3), max_size=ROWS)))
    if name == "labels":
        valid = _arrays(st.sampled_from([0.0, 1.0]), (ROWS,))
        if good:
            return valid
        return weighted((1, valid), (2, _arrays(st.sampled_from([0.0, 1.0]))), (1, _arrays(st.floats())), (1, junk),
                        (1, st.lists(st.sampled_from([0, 1, -1, 2, "a"]), max_size=ROWS)))
    return number


def api_file_value(arg: Arg, good: bool) -> st.SearchStrategy:
    """The path a text option gives, as ``str``, ``Path`` or (not ``good``) ``bytes``."""
    path = arg.value if arg.value is not None else (arg.words[0] if arg.words else "")
    if good:
        return st.sampled_from([path, Path(path)])
    return st.sampled_from([path, path, Path(path) if path else path, path.encode(errors="surrogateescape")])


@st.composite
def api_cases(draw, request_type: type, shared: SharedFiles) -> ApiCase:
    """``RequestType(**kwargs)`` with the required fields, one of each exclusive group (mostly) and a random few
    of the rest; valid values, one wrong value, or values of any type."""
    heavy = request_type.command[0] in HEAVY
    fields = options(request_type)
    mode = draw(st.sampled_from(MODES))
    chosen = _chosen(draw, request_type, list(fields), always_required=True, good=mode != "chaos")
    good = _goodness(draw, mode, chosen)
    kwargs, files, paths = {}, {}, []
    for name in chosen:
        option = fields[name]
        if option.kind == "object":
            kwargs[name] = draw(object_value(name, good(name)))
        elif option.kind == "text" and name not in SAFE_API and (good(name) or draw(st.integers(0, 5)) > 0):
            arg = draw(text_arg(name, shared, good(name)))
            files.update(arg.files)
            paths += arg.paths
            kwargs[name] = draw(api_file_value(arg, good(name)))
        else:
            kwargs[name] = draw(api_value(name, option, heavy, good(name)))
    return ApiCase(request_type=request_type, kwargs=kwargs, files=files, paths=paths)
