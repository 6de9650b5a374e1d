"""Every pathological file (:mod:`tests.fuzz.files`) through every kind of file option, without hypothesis luck.

The random tests draw these files too, but rarely, and another bad value often stops an input before its file is
read. Here each file is the only thing wrong: one command per kind of file option, its other values valid. Judged
as the fuzz tests judge (:func:`tests.fuzz.harness.judge_cli`): a clean exit 2 naming the option or the file, or a
clean exit 0.
"""

from __future__ import annotations

import pytest

from tests.fuzz import harness
from tests.fuzz.harness import CliCase
from tests.fuzz.strategies import COMMANDS

#: One command per kind of file option: its argv around the file (``{}``).
ROLES = {
    "schedule": ["epsilon", "--schedule", "{}", "--delta", "1e-5", "--json"],
    "dataset": ["simulate", "fedbuff", "--dataset", "{}", "--rounds", "2", "--json"],
    "test_file": ["simulate", "fedbuff", "--test-file", "{}", "--rounds", "2", "--json"],
    "config": ["sweep", "{}", "--processes", "1", "--json"],
    "out": ["dp-sgd", "--dataset-size", "1000", "--batch-size", "100", "--epochs", "1", "--noise-multiplier", "1.1",
            "--out", "{}", "--json"],
}
ANY = ("binary.bin", "folder", "folder.json", "fifo.json", "loop.json", "missing.json", "missing-folder/x.json",
       "/dev/null")
FILES = {
    "schedule": (*ANY, "oversized.json", "oversized.csv", "oversized.yaml", "deep.json", "deep-closed.json",
                 "deep.yaml", "long-field.csv", "segments-200k.json", "malformed.yaml", "bomb.yaml",
                 "python-tag.yaml", "utf16.csv", "crlf-bom.csv", "empty.json"),
    "dataset": (*ANY, "oversized.libsvm", "long-field.libsvm", "long-index.libsvm", "huge-index.libsvm", "utf16.csv",
                "empty.json"),
    "test_file": (*ANY, "oversized.libsvm", "long-field.libsvm", "long-index.libsvm", "huge-index.libsvm"),
    "config": (*ANY, "oversized.yaml", "deep.yaml", "deep.json", "malformed.yaml", "bomb.yaml", "bomb-valid.yaml",
               "python-tag.yaml", "empty.json"),
    "out": ("folder", "folder.json", "fifo.json", "loop.json", "missing-folder/x.json", "/dev/null"),
}
#: Output targets made in the input's folder: name -> content (None: a folder).
MADE_OUTPUTS = {"someone-elses.json": b"my own notes, not fedplan's\n", "outdir": None, "x" * 300 + ".json": None,
                "/dev/full": None, "out.json/": None}
CASES = [(role, name) for role, names in FILES.items() for name in names] + [("out", name) for name in MADE_OUTPUTS]


def _request_type(argv: list[str]) -> type:
    for words in (tuple(argv[:2]), tuple(argv[:1])):
        if " ".join(words) in COMMANDS:
            return COMMANDS[" ".join(words)]
    raise KeyError(argv)


@pytest.mark.parametrize("role, name", CASES, ids=[f"{role}-{name[:40]}" for role, name in CASES])
def test_a_pathological_file_is_refused_cleanly(role, name, fuzz_files, tmp_path):
    files: dict[str, bytes | None] = {}
    if name in fuzz_files.paths:
        path = str(fuzz_files.paths[name])
    elif name in MADE_OUTPUTS and MADE_OUTPUTS[name] is not None:
        path, files = name, {name: MADE_OUTPUTS[name]}
    else:
        path = name
        if name == "outdir":
            files = {name: None}
    argv = [path if word == "{}" else word for word in ROLES[role]]
    case = CliCase(argv=argv, files=files, paths=[path])
    folder = tmp_path / "input"
    folder.mkdir()
    harness.materialise(folder, case.files)
    outcome = harness.run_isolated(harness.cli_target(argv), folder)
    failures = harness.judge_cli(case, outcome, _request_type(argv))
    log = harness.FailureLog(label=f"fedplan {' '.join(argv[:2])} ({role} = {name})", seed=None)
    log.inputs = 1
    log.add(failures)
    assert not failures, log.report(f"{outcome.status} {outcome.value!r} in {outcome.seconds:.1f} s")
