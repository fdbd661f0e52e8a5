"""One CBT invocation per arm (CBT: ../shared/tools/cbt, unmodified), as :mod:`capture.cbt` and
:mod:`capture.rgw.cbt` run it: CBT's presence and Debian packages, where an arm is staged
(``<root>/_inprogress/<arm>/{archive,harness}``, CBT's ``tmp_dir`` beside it), how its archive is checked
and gzipped, and how a finished arm moves into place (``<root>/<arm>/`` and ``<root>/harness/<arm>/``,
``done`` written last)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from capture.ceph.cluster import ClusterError
from capture.common.campaign import INPROGRESS

ROOT = Path(__file__).resolve().parents[2]
#: the CBT snapshot (../shared/tools/README.md); CEPHQOS_CBT overrides
CBT_DIR = Path(os.environ.get("CEPHQOS_CBT", ROOT.parent / "shared" / "tools" / "cbt"))
CBT_PACKAGES = ["pdsh", "python3-yaml", "python3-lxml"]
HARNESS = "harness"
DONE = "done"


@dataclass(frozen=True)
class ArmRun:
    """One CBT invocation: an arm, with all its iterations."""
    campaign: str
    arm: str
    order: int

    @property
    def relpath(self) -> str:
        return self.arm


def ensure_cbt(log) -> str:
    """CBT's Python modules and tools present; returns the snapshot's git commit if recorded."""
    if not (CBT_DIR / "cbt.py").is_file():
        raise ClusterError(f"no CBT at {CBT_DIR} (../shared/tools/cbt, or set CEPHQOS_CBT)")
    ok = subprocess.run(["/usr/bin/python3", "-c", "import yaml, lxml"], capture_output=True).returncode == 0
    if not ok or not shutil.which("pdsh"):
        log(f"installing Debian packages for CBT ({', '.join(CBT_PACKAGES)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "-o", "DPkg::Lock::Timeout=600"] + CBT_PACKAGES, check=True, env=env)
    readme = (CBT_DIR.parent / "README.md")
    text = readme.read_text() if readme.is_file() else ""
    m = re.search(r"commit\s+([0-9a-f]{40})", text)
    return m.group(1) if m else "unknown"


def is_done(root: Path, arm: str) -> bool:
    return (root / HARNESS / arm / DONE).is_file()


def gzip_tree(top: Path) -> int:
    """gzip every non-empty file below ``top`` in place (``f`` → ``f.gz``, no name or time in the header, so
    the same bytes give the same file; an empty file stays as CBT left it); returns the count."""
    n = 0
    for f in sorted(p for p in top.rglob("*") if p.is_file() and not p.name.endswith(".gz")
                    and p.stat().st_size > 0):
        with open(f, "rb") as src, open(str(f) + ".gz", "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as g:
                shutil.copyfileobj(src, g)
        f.unlink()
        n += 1
    return n


def count_outputs(results: Path) -> dict[str, int]:
    """Tool outputs per benchmark in a CBT archive's ``results/`` (``output.N.<node>``, not the
    ``json_output`` copies CBT derives from them), read from each id folder's benchmark_config.yaml."""
    out: dict[str, int] = {}
    for cfg in results.glob("*/id-*/benchmark_config.yaml"):
        bench = (yaml.safe_load(cfg.read_text()) or {}).get("cluster", {}).get("benchmark", "?")
        # output.N.<node>, not fio's logs (output.N_iops.1.log.<node>, …) nor CBT's json_output copies
        n = sum(1 for p in cfg.parent.rglob("output.*") if p.is_file() and re.fullmatch(r"output\.\d+\..+", p.name))
        out[bench] = out.get(bench, 0) + n
    return out


class ArmStaging:
    """Where one CBT invocation per arm is staged (``<root>/_inprogress/<arm>/{archive,harness}``, CBT's
    ``tmp_dir`` beside it) and how a finished arm moves into place; ``root`` is the campaign's folder.  Shared by
    :class:`capture.cbt.__main__.CbtRunner` and :class:`capture.rgw.cbt.RgwCbtRunner`."""
    root: Path

    def stage(self, run: ArmRun) -> Path:
        return self.root / INPROGRESS / run.arm

    def cbt_tmp(self, run: ArmRun) -> Path:
        return self.root / INPROGRESS / f"cbt-tmp-{run.arm}"

    def finish(self, run: ArmRun, info: dict[str, Any]) -> Path:
        """run.json and ``done`` (last) into the harness record; the archive, then the record, into place."""
        stage = self.stage(run)
        h = stage / HARNESS
        (h / "run.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
        (h / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z") + "\n")
        dest, hdest = self.root / run.arm, self.root / HARNESS / run.arm
        for d in (dest, hdest):
            if d.exists():  # an archive without its done record: an earlier sitting died between the moves
                aside = self.root / "_superseded" / f"{d.name}-{time.strftime('%Y%m%dT%H%M%S')}"
                aside.parent.mkdir(parents=True, exist_ok=True)
                os.replace(d, aside)
        hdest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / "archive", dest)
        os.replace(h, hdest)
        shutil.rmtree(stage, ignore_errors=True)
        return dest

    def discard(self, run: ArmRun) -> None:
        shutil.rmtree(self.stage(run), ignore_errors=True)
        shutil.rmtree(self.cbt_tmp(run), ignore_errors=True)


def stage_arms(campaign: str, campaign_file: Path, root: Path, arms: list[str]) -> list[ArmRun]:
    """Start a sitting's folder: ``root`` made, the campaign file copied beside the data
    (``campaign.yaml``), an earlier sitting's ``_inprogress`` cleared; → the arms not yet done, in order."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(campaign_file, root / "campaign.yaml")
    shutil.rmtree(root / INPROGRESS, ignore_errors=True)
    return [ArmRun(campaign, a, i) for i, a in enumerate(arms) if not is_done(root, a)]
