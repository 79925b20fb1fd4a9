"""The resumable part store of a corpus run (``OUT.parts/`` beside the output).

Finished documents are written in durable part files (one per flush, each written to a
temporary name, fsynced and renamed), with a manifest of the settings.  A run killed at
any moment leaves only whole parts; the same command continues with the documents no
part holds.  At the end the parts are consolidated, in input order, into ``OUT`` (also
atomically) and the folder is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from typing import Any

from ...core.corpus import FORMAT_VERSION, META_KEY, file_metadata, results_table, write_table
from ...core.result import ScoreResult

MANIFEST = "manifest.json"
#: Test hook: the process kills itself (SIGKILL) after writing this many parts.
KILL_AFTER_PARTS_ENV = "PPL_WIDGET_CORPUS_KILL_AFTER_PARTS"
#: Settings that must match for a run to resume another's parts.
_RESUME_KEYS = ("model", "max_length", "stride", "prefix", "add_eos", "top_k", "dtype",
                "words", "n_documents", "ids_digest")


def parts_dir(out: str) -> str:
    return f"{out}.parts"


class PartStore:
    """The parts of the run writing ``out`` with ``settings``, as this ``rank`` sees them."""

    def __init__(self, out: str, settings: dict[str, Any], rank: int = 0):
        self.out, self.settings, self.rank = out, settings, rank
        self.dir = parts_dir(out)
        self.parts_written = 0

    @property
    def complete(self) -> bool:
        """The output is whole and no parts are left (found so by ``prepare``)."""
        return not os.path.isdir(self.dir)

    def prepare(self) -> None:
        """Rank 0: start, resume, or find the output already complete."""
        manifest = os.path.join(self.dir, MANIFEST)
        if os.path.isfile(self.out) and not os.path.isdir(self.dir):
            old = file_metadata(self.out).get("settings", {})
            check_same(old, self.settings, f"{self.out} already exists and")
            return  # complete: nothing to do
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as f:
                old = json.load(f)
            check_same(old, self.settings, f"{self.dir} holds a run that")
            for name in os.listdir(self.dir):  # a part half-written when killed
                if ".tmp-" in name:
                    os.remove(os.path.join(self.dir, name))
            return
        os.makedirs(self.dir, exist_ok=True)
        tmp = f"{manifest}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.settings, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, manifest)

    def part_files(self) -> list[str]:
        """The finished parts, every rank's."""
        return sorted(os.path.join(self.dir, n) for n in os.listdir(self.dir)
                      if n.startswith("part-") and n.endswith(".parquet"))

    def done_ids(self) -> set[str]:
        """Ids of the documents some part holds: those a resumed run skips."""
        import pyarrow.parquet as pq

        done: set[str] = set()
        for path in self.part_files():
            done.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
        return done

    def write_part(self, rows: list[tuple[int, str, ScoreResult]]) -> None:
        """One durable part of ``(index, id, result)`` rows (written atomically)."""
        if not rows:
            return
        name = f"part-{rows[0][0]:010d}-r{self.rank}.parquet"
        write_table(results_table(rows, self.file_settings()), os.path.join(self.dir, name))
        self.parts_written += 1
        kill_after = os.environ.get(KILL_AFTER_PARTS_ENV)
        if kill_after and self.parts_written >= int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)  # test hook: an interrupted run

    def file_settings(self) -> dict[str, Any]:
        """The settings written into every file (without the ids' digest)."""
        return {k: v for k, v in self.settings.items() if k != "ids_digest"}

    def consolidate(self, doc_ids: list[str]) -> None:
        """Rank 0, every rank done: the parts, in input order, into ``out``; the folder goes."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = self.part_files()
        tables = [pq.read_table(p) for p in files]
        table = pa.concat_tables(tables) if tables else None
        ids = set(table.column("id").to_pylist()) if table is not None else set()
        missing = [d for d in doc_ids if d not in ids]
        if missing:
            raise ValueError(
                f"{len(missing)} of {len(doc_ids)} documents have no part in {self.dir} "
                f"(first: {missing[:3]}); under torchrun on several nodes the output must be "
                "on storage every node sees. Run the same command again to score them.")
        table = table.sort_by("index")
        meta = {META_KEY: json.dumps({"format": FORMAT_VERSION,
                                      "settings": self.file_settings(),
                                      "widths": _widths_of(tables)}, sort_keys=True)}
        write_table(table.replace_schema_metadata(meta), self.out)
        shutil.rmtree(self.dir, ignore_errors=True)


def _widths_of(tables: list[Any]) -> dict[str, int]:
    for t in tables:
        meta = (t.schema.metadata or {}).get(META_KEY)
        if meta:
            return json.loads(meta)["widths"]
    return {}


def check_same(old: dict[str, Any], new: dict[str, Any], what: str) -> None:
    """A resumed or finished run's settings against this one's: a ValueError naming
    what differs."""
    diff = [k for k in _RESUME_KEYS if k in old and old.get(k) != new.get(k)]
    if diff:
        shown = ", ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now"
                          for k in diff if k != "ids_digest")
        if "ids_digest" in diff:
            shown = (shown + "; " if shown else "") + "the documents differ"
        raise ValueError(f"{what} was scored with other settings ({shown}); a run resumes "
                         "only with the same model, settings and documents: pass another "
                         "--out, or delete it to start again")


def ids_digest(ids: list[str]) -> str:
    """A short digest of the documents' ids, in order (which documents a run scored)."""
    import hashlib

    h = hashlib.sha256()
    for doc_id in ids:
        h.update(doc_id.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]
