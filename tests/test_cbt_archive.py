"""The shipped CBT archive, read as CBT wrote it (issue 25): ``data/raw/cbt/cbt-2026`` is the output of the
unmodified CBT snapshot (9d6480f) run here by ``capture/cbt`` against the throttled Pacific cluster — wpq and
high_client_ops, 3 iterations each, librbdfio and radosbench — gzipped file by file, otherwise untouched.
Each run counts once (CBT writes fio's output twice), the op queue and profile are what the OSD reported
(CBT's ``ceph_settings.out``), and the wpq-vs-high_client_ops verdicts are the same from
``python -m analysis compare``, from notebook 15 on the folder of both CBT campaigns, and from scipy on the
fio JSON read straight from the archive."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from analysis.ingest.walk import ingest
from analysis.stats import abtest as ab
from conftest import FIXTURES, ROOT

CBT = ROOT / "data" / "raw" / "cbt"
CAMPAIGN = CBT / "cbt-2026"
ARMS = ("wpq", "high_client_ops")


def _run(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env)


@pytest.fixture(scope="module")
def shipped():
    return ingest(CAMPAIGN, progress=False)


def _iterations() -> int:
    """CBT's own ``cluster.iterations`` from the cbt_config.yaml it archived (the same in both arms)."""
    its = {yaml.safe_load(gzip.open(CAMPAIGN / a / "results" / "cbt_config.yaml.gz"))["cluster"]["iterations"]
           for a in ARMS}
    assert len(its) == 1
    return its.pop()


def test_each_cbt_run_counts_once_so_n_per_cell_is_cbts_iterations(shipped):
    assert shipped.failed == []
    iterations = _iterations()
    assert iterations == 3
    f = shipped.files.set_index("path")
    run = "wpq/results/00000000/id-4af10887"
    # CBT's json_output.N is its extract of output.N (fio's stdout: text, then the JSON): listed, not read
    assert f.loc[f"{run}/json_output.0.localhost.gz", "kind"] == "cbt-derived"
    assert f.loc[f"{run}/output.0.localhost.gz", "kind"] == "fio-json"
    s = shipped.summary[shipped.summary["kind"].isin(["fio-json", "rados-bench"])]
    keys = ab.workload_keys(s)
    v = ab.run_values(s.assign(osd_qos=ab.osd_qos(s)), [*keys, "osd_qos"], ["iops"])
    n = v.groupby(["osd_qos", "benchmark", "ddir"], observed=True)["run"].nunique()
    rows = v.groupby(["osd_qos", "benchmark", "ddir"], observed=True).size()
    # 2 arms × (librbdfio randwrite → write, randread → read; radosbench write, seq → read)
    assert len(n) == 8 and set(n) == {iterations} and set(rows) == {iterations}, n
    # one iops row per output file: no output counted twice
    per_file = s[s["metric"] == "iops"].groupby("source", observed=True).size()
    assert per_file.max() == 1
    assert sorted(s["repeat"].astype(str).unique()) == ["0", "1", "2"]


def test_op_queue_and_profile_come_from_cbts_ceph_settings_out(shipped):
    run = CAMPAIGN / "high_client_ops" / "results" / "00000000" / "id-4af10887"
    asked = gzip.open(run / "benchmark_config.yaml.gz", "rt").read()
    assert "osd_op_queue" not in asked and "mclock" not in asked  # CBT's benchmark YAML does not say
    told = json.load(gzip.open(run / "ceph_settings.out.localhost.gz", "rt"))
    assert (told["osd_op_queue"], told["osd_mclock_profile"]) == ("mclock_scheduler", "high_client_ops")
    kinds = shipped.files.set_index("path")["kind"]
    assert kinds["high_client_ops/results/00000000/id-4af10887/ceph_settings.out.localhost.gz"] == "cbt-settings"
    s = shipped.summary[shipped.summary["kind"] == "fio-json"]
    assert "scheduler" not in s  # one meaning per column: the op queue, never a block-layer IO scheduler
    by = s.groupby("archive", observed=True)[["op_queue", "profile"]].agg(
        lambda c: set(c.astype(object).where(c.notna(), None)))
    assert by.loc["wpq", "op_queue"] == {"wpq"} and by.loc["wpq", "profile"] == {None}
    assert by.loc["high_client_ops", "op_queue"] == {"mclock_scheduler"}
    assert s["io_scheduler"].isna().all()  # no block-layer scheduler named anywhere in a CBT archive
    assert by.loc["high_client_ops", "profile"] == {"high_client_ops"}
    # Pacific lists osd_mclock_profile under wpq too: it means nothing there and is not kept
    assert "osd_mclock_profile" in json.load(gzip.open(
        CAMPAIGN / "wpq" / "results" / "00000000" / "id-4af10887" / "ceph_settings.out.localhost.gz", "rt"))


def _fio_write_iops(arm: str) -> np.ndarray:
    """librbdfio randwrite IOPS per iteration, straight from CBT's output.0.localhost.gz (fio's text lines,
    then its JSON; the mode from CBT's benchmark_config.yaml beside it): the reference the ingest and the
    compare are checked against."""
    out = []
    for p in sorted((CAMPAIGN / arm / "results").glob("*/id-*/output.0.localhost.gz")):
        text = gzip.open(p, "rt").read()
        doc, _ = json.JSONDecoder().raw_decode(text[text.index("\n{") + 1:])  # fio may print more after it
        mode = yaml.safe_load(gzip.open(p.parent / "benchmark_config.yaml.gz"))["cluster"]["mode"]
        if mode == "randwrite":
            out.append(doc["jobs"][0]["write"]["iops"])
    return np.array(out)


def test_compare_on_the_archive_gives_scipys_welch_on_fios_own_numbers():
    r = _run("compare", CAMPAIGN, "--by", "osd_qos", "--old-value", "wpq", "--new-value", "high_client_ops",
             "--format", "json")
    a, b = _fio_write_iops("wpq"), _fio_write_iops("high_client_ops")
    assert len(a) == len(b) == _iterations()
    ref = stats.ttest_ind(np.log(b), np.log(a), equal_var=False)
    change = 100 * np.expm1(np.log(b).mean() - np.log(a).mean())
    rows = pd.DataFrame(json.loads(r.stdout)["rows"])
    row = rows[(rows["benchmark"] == "librbdfio") & (rows["mode"] == "randwrite") & (rows["metric"] == "iops")
               & (rows["kind"] == "fio-json")].iloc[0]
    assert (row["n_old"], row["n_new"]) == (3, 3)
    assert row["median_old"] == pytest.approx(np.median(a)) and row["median_new"] == pytest.approx(np.median(b))
    assert row["p"] == pytest.approx(ref.pvalue) and row["effect_pct"] == pytest.approx(change)
    # the verdict is on Benjamini–Hochberg's q over every tested row (statsmodels as the reference)
    from statsmodels.stats.multitest import multipletests
    tested = rows[rows["p"].notna()]
    q = pd.Series(multipletests(tested["p"], method="fdr_bh")[1], index=tested.index)
    assert row["q"] == pytest.approx(q[row.name])
    verdict = "~" if q[row.name] >= 0.05 else ("better" if change > 0 else "worse")
    assert row["verdict"] == verdict
    regressed = verdict == "worse" and abs(change) >= 5
    assert row["regression"] == regressed
    # exit 1 exactly when some cell regressed beyond the 5 % default
    assert r.returncode == (1 if rows["regression"].any() else 0), r.stderr
    assert set(rows["n_old"]) | set(rows["n_new"]) == {3}


def test_auto_never_pools_the_pilot_with_the_campaign_and_names_its_choice():
    s = ab.sides(CBT, by="auto", old_value="wpq", new_value="high_client_ops")
    assert s.names == ("osd_qos=wpq", "osd_qos=high_client_ops")
    assert "compared within cbt-2026 by osd_qos" in s.notes[-1]
    # 3 iterations × 3 CBT runs (librbdfio randwrite, randread; radosbench) a side, over the pilot's 2 × 3
    assert "9 runs on the smaller side" in s.notes[-1] and "cbt-2026-pilot (6 a side)" in s.notes[-1]
    assert set(s.old["archive"].astype(str)) == {"cbt-2026/wpq"}
    assert set(s.new["archive"].astype(str)) == {"cbt-2026/high_client_ops"}
    # a pair only the pilot holds is found there, and a pair the data lacks is named with what it has
    p = ab.sides(CBT, by="auto", old_value="wpq", new_value="high_recovery_ops")
    assert "within cbt-2026-pilot" in p.notes[-1]
    with pytest.raises(ab.CompareError, match=r"no set of runs has both 'wpq' and 'balanced'.*osd_qos: "
                                              r"high_client_ops, high_recovery_ops, wpq"):
        ab.sides(CBT, by="auto", old_value="wpq", new_value="balanced")


def test_osd_qos_and_run_sets_on_hand_made_keys():
    t = pd.DataFrame({"op_queue": ["wpq", "mclock_scheduler", "mclock_scheduler", None, None],
                      "io_scheduler": [None, None, None, "bfq", None],
                      "profile": [None, "balanced", None, None, None],
                      "campaign": [None, None, "c1", None, None],
                      "archive": ["x/wpq", "x/mc", None, "wpq", None]})
    assert ab.osd_qos(t).tolist() == ["wpq", "balanced", "mclock_scheduler", pd.NA, pd.NA]
    assert ab.run_set(t).tolist() == ["x", "x", "c1", ".", "."]


@pytest.fixture(scope="module")
def cbt_tables(tmp_path_factory):
    out = tmp_path_factory.mktemp("cbt-processed")
    r = _run("ingest", CBT, "--out", out, "--no-progress", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    return out


def test_notebook_15_on_the_cbt_folder_states_the_compare_verdicts(cbt_tables, tmp_path):
    """Notebook 15 with its defaults (by auto, wpq vs high_client_ops) on the folder of both CBT campaigns:
    it compares within cbt-2026 and prints the table the command line prints."""
    out = tmp_path / "15.ipynb"
    r = subprocess.run([sys.executable, "-m", "papermill", "-k", "python3", "--cwd", str(ROOT / "notebooks"),
                        str(ROOT / "notebooks" / "15-compare.ipynb"), str(out), "-p", "data_dir", str(CBT),
                        "-p", "processed_dir", str(cbt_tables), "-p", "figures_dir", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    cells = json.loads(out.read_text())["cells"]
    text = ["".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert any("compared within cbt-2026 by osd_qos" in t for t in text), text
    # the verdict table: printed text, or show_table's plain-text form (its HTML is for the report)
    cell = next(c for c in cells if "NBVAL_CHECK_OUTPUT" in "".join(c["source"]))
    verdicts = "".join("".join(o["text"]) if "text" in o else "".join(o.get("data", {}).get("text/plain", "")) + "\n"
                       for o in cell.get("outputs", []))
    cli = _run("compare", CAMPAIGN, "--by", "osd_qos", "--old-value", "wpq", "--new-value", "high_client_ops")
    # the CLI's cells and verdict counts: below its header lines (old/new, shared keys), above its
    # across-workload block
    body = cli.stdout.split("\nacross workloads")[0].split("\n")
    body = [x for x in body if not x.startswith(("old: ", "every cell (that records it): ", "also differ (not cell keys): "))]
    assert "\n".join(body).rstrip("\n") == verdicts.rstrip("\n")
    assert "librbdfio" in verdicts and "worse" in verdicts


def _make_report(data, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    return subprocess.run(["make", "--no-print-directory", "report", f"DATA={data}", f"PROC={tmp_path / 'p'}",
                           f"REPORTS={tmp_path / 'r'}", f"FIGURES={tmp_path / 'f'}"],
                          capture_output=True, text=True, cwd=ROOT, env=env)


def test_make_report_on_an_empty_folder_stops_before_any_notebook(tmp_path):
    (tmp_path / "empty").mkdir()
    r = _make_report(tmp_path / "empty", tmp_path)
    assert r.returncode != 0
    assert "nothing readable" in r.stderr and str(tmp_path / "empty") in r.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").glob("*.ipynb"))


def test_make_report_on_the_cbt_folder_states_its_verdicts(tmp_path):
    r = _make_report(CBT, tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "compared within cbt-2026 by osd_qos" in html
    assert "osd_qos=wpq" in html and "librbdfio" in html and "worse (regression)" in html
    assert not (ROOT / "reports" / "report.html").exists() or \
        "compared within cbt-2026" not in (ROOT / "reports" / "report.html").read_text()


def test_make_report_on_a_folder_with_one_bad_file_reports_the_rest_and_exits_1(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "fio" / "randread-4k-windowed", data)
    (data / "broken.json").write_text('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n')
    r = _make_report(data, tmp_path)
    assert r.returncode != 0
    assert "1 of " in r.stderr and "broken.json:4: malformed or truncated fio JSON" in r.stderr
    assert "the report is made from the rest" in r.stderr
    html = (tmp_path / "r" / "report.html").read_text()
    assert "broken.json" in html           # the ingest section lists it
    assert "Nothing to compare in" in html  # bare fio outputs hold no wpq/mClock pair: one line, no crash


def _plain(dst, runs=("00000000",)):
    """The shipped arms' iterations ``runs`` as CBT left them before capture/cbt gzipped them: every
    ``*.gz`` unpacked to its plain name (a user's archive looks like this)."""
    for arm in ARMS:
        for it in runs:
            shutil.copytree(CAMPAIGN / arm / "results" / it, dst / arm / "results" / it)
        shutil.copy(CAMPAIGN / arm / "results" / "cbt_config.yaml.gz", dst / arm / "results")
    for p in list(dst.rglob("*.gz")):
        p.with_suffix("").write_bytes(gzip.decompress(p.read_bytes()))
        p.unlink()
    return dst


def test_the_plain_archive_as_cbt_writes_it_reads_like_the_gzipped_one(tmp_path):
    from capture.cbt.__main__ import count_outputs
    plain = _plain(tmp_path / "plain")
    packed = tmp_path / "packed"
    for arm in ARMS:
        shutil.copytree(CAMPAIGN / arm / "results" / "00000000", packed / arm / "results" / "00000000")
    a, b = ingest(plain, progress=False), ingest(packed, progress=False)
    assert a.failed == [] and b.failed == []
    kinds = a.files.set_index("path")["kind"]
    run = "high_client_ops/results/00000000/id-4af10887"
    assert kinds[f"{run}/benchmark_config.yaml"] == "benchmark_config.yaml"
    assert kinds[f"{run}/json_output.0.localhost"] == "cbt-derived"
    assert kinds[f"{run}/ceph_settings.out.localhost"] == "cbt-settings"
    cols = ["run", "archive", "op_queue", "profile", "repeat", "benchmark", "mode", "metric", "ddir", "value"]
    def pick(r):
        return r.summary[r.summary["metric"].isin(["iops", "bw"])][cols].astype(str) \
        .sort_values(cols).reset_index(drop=True)
    assert len(pick(a)) > 0 and pick(a).equals(pick(b))
    # what the harness checks before it ships an archive: CBT's outputs per benchmark, not its extracts
    assert count_outputs(plain / "wpq" / "results") == {"librbdfio": 2, "radosbench": 2}
