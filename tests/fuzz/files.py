"""Files the fuzz inputs name: pathological ones made once per session, and real fedplan exports to mutate."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

#: One over the default input-file limit (64 MiB): a sparse file, so it costs no disk.
OVERSIZED = 70 * 2**20

#: Commands that write a real export (its name in ``SharedFiles.exports`` is the ``--out`` name).
EXPORT_COMMANDS = {
    "dp-sgd.json": ["dp-sgd", "--dataset-size", "60000", "--batch-size", "256", "--epochs", "2",
                    "--target-epsilon", "3", "--out", "dp-sgd.json"],
    "dp-sgd.yaml": ["dp-sgd", "--dataset-size", "60000", "--batch-size", "256", "--epochs", "2",
                    "--noise-multiplier", "1.1", "--out", "dp-sgd.yaml"],
    "dp-sgd.csv": ["dp-sgd", "--dataset-size", "1000", "--batch-size", "100", "--epochs", "1",
                   "--noise-multiplier", "1.1", "--out", "dp-sgd.csv"],
    "per-round.csv": ["dp-sgd", "--dataset-size", "1000", "--batch-size", "100", "--epochs", "1",
                      "--noise-multiplier", "1.1", "--per-round", "--out", "per-round.csv"],
    "federated.json": ["federated", "--clients", "100", "--clients-per-round", "10", "--rounds", "50",
                       "--noise-multiplier", "1.0", "--out", "federated.json"],
    "vandijk.json": ["vandijk", "schedule", "--initial-size", "16", "--client-size", "1000", "--epochs", "2",
                     "--target-epsilon", "2", "--noise-multiplier", "1.5", "--out", "vandijk.json"],
    "mapa.json": ["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--initial-sensitivity", "0.1",
                  "--out", "mapa.json"],
    "dpscd.json": ["dpscd", "calibrate", "--target-epsilon", "1", "--target-delta", "1e-5", "--batch-size", "10",
                   "--examples", "1000", "--epochs", "1", "--out", "dpscd.json"],
    "adp2sgd.json": ["adp2sgd", "schedule", "--workers", "4", "--examples-per-worker", "1000", "--batch-size", "10",
                     "--steps", "100", "--target-delta", "1e-5", "--noise-to-sensitivity", "2",
                     "--out", "adp2sgd.json"],
}

SEGMENT = {"sample_rate": 0.01, "noise_multiplier": 1.1, "steps": 1}


@dataclass(frozen=True)
class SharedFiles:
    """``paths``: pathological inputs by name (absolute); ``exports``: real fedplan exports, name -> bytes."""

    root: Path
    paths: dict[str, Path] = field(default_factory=dict)
    exports: dict[str, bytes] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"SharedFiles({str(self.root)!r}, {len(self.paths)} files, exports {sorted(self.exports)})"


def _yaml_bomb(levels: int = 9, *, valid: bool = False) -> str:
    """Billion laughs: each anchor a list of nine aliases of the one before (9**levels leaves if expanded), all
    inside the config's free-text ``description`` so that no unknown key stops it early; the grid and the seeds
    alias the largest, or (``valid``) the rest of the config is a small valid sweep."""
    anchors = ['&l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        anchors.append(f"&l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    head = f"algorithm: fedbuff\ndescription: [{', '.join(anchors)}]\n"
    if valid:
        return head + ("options: {n_samples: 200, n_features: 5, rounds: 3, clients: 4, clipping_norm: 1.0}\n"
                       "grid: {noise_multiplier: [0.5, 1.0]}\nseeds: 1\n")
    return head + f"grid: {{noise_multiplier: *l{levels - 1}}}\nseeds: *l{levels - 1}\n"


def make_static(root: Path) -> dict[str, Path]:
    """The pathological files (and folders, pipes, links) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}

    def write(name: str, content: bytes | str) -> None:
        path = root / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        made[name] = path

    for suffix in (".json", ".csv", ".yaml", ".libsvm"):  # over the file-size limit, sparse
        path = root / f"oversized{suffix}"
        with path.open("wb") as handle:
            handle.truncate(OVERSIZED)
        made[path.name] = path
    write("deep.json", "[" * 100_000)
    write("deep-closed.json", "[" * 100_000 + "]" * 100_000)
    write("deep.yaml", "[" * 100_000)
    write("long-field.csv", "sample_rate,noise_multiplier,steps\n0.01,1.1," + "1" * 140_000 + "\n")
    write("long-field.libsvm", "1 1:" + "1" * 140_000 + "\n")
    write("long-index.libsvm", "1 " + "9" * 5000 + ":1\n")
    write("segments-200k.json", json.dumps([SEGMENT] * 200_000))
    write("malformed.yaml", "algorithm: [fedbuff\noptions: {rounds: 3\n\t- x: : y\n")
    write("bomb.yaml", _yaml_bomb())
    write("bomb-valid.yaml", _yaml_bomb(valid=True))
    write("python-tag.yaml", "algorithm: !!python/object/apply:os.system ['true']\n")
    write("huge-index.libsvm", "1 99999999999:1\n")
    write("binary.bin", random.Random(0).randbytes(4096))
    write("utf16.csv", "sample_rate,noise_multiplier,steps\n0.01,1.1,100\n".encode("utf-16"))
    write("crlf-bom.csv", "\ufeffsample_rate,noise_multiplier,steps\r\n0.01,1.1,100\r\n")
    write("empty.json", "")
    (root / "folder").mkdir(exist_ok=True)
    made["folder"] = root / "folder"
    (root / "folder.json").mkdir(exist_ok=True)
    made["folder.json"] = root / "folder.json"
    fifo = root / "fifo.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    made["fifo.json"] = fifo
    loop = root / "loop.json"
    if not loop.is_symlink():
        loop.symlink_to(loop.name)
    made["loop.json"] = loop
    made["missing.json"] = root / "missing.json"
    made["missing-folder/x.json"] = root / "missing-folder" / "x.json"
    made["/dev/null"] = Path("/dev/null")
    return made


def make_shared_files(root: Path) -> SharedFiles:
    """The static files and the exports that the commands of :data:`EXPORT_COMMANDS` write (each in a forked
    child; an export that fails is left out, the fuzz tests report such a command themselves)."""
    from tests.fuzz import harness

    paths = make_static(root / "static")
    exports_dir = root / "exports"
    exports_dir.mkdir(exist_ok=True)
    exports = {}
    for name, argv in EXPORT_COMMANDS.items():
        outcome = harness.run_isolated(harness.cli_target(argv), exports_dir, cap=harness.TIME_CAP)
        path = exports_dir / name
        if outcome.status == "returned" and outcome.value == 0 and path.is_file():
            exports[name] = path.read_bytes()
    return SharedFiles(root=root, paths=paths, exports=exports)
