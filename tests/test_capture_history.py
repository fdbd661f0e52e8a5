"""capture.history's campaign file: validation errors name the file and key, the plan interleaves the
histories point by point in a seeded order, and the cap at each point is the last change at or before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from capture.history import campaign as hc

CAMPAIGN = Path(__file__).resolve().parents[1] / "capture/campaigns/history-2026.yaml"


def test_the_shipped_campaign_plans_interleaved_points():
    doc = hc.load(CAMPAIGN)
    runs = hc.plan(doc)
    assert len(runs) == 4 * 40 * 3
    first = runs[:12]
    assert {r.arm for r in first} == {"p-000"} and sorted({r.scenario for r in first}) == [
        "null", "regression", "spike", "two-changes"]
    assert [r.repeat for r in first[:3]] == [1, 2, 3]  # a history's repeats back to back
    assert runs == hc.plan(hc.load(CAMPAIGN))  # the same order in every sitting
    assert [r.order for r in runs] == list(range(len(runs)))


def test_cap_at_each_point():
    doc = hc.load(CAMPAIGN)
    assert [hc.cap_at(doc, "two-changes", p) for p in (0, 12, 13, 26, 27, 39)] == [20000, 20000, 18000, 18000, 19200, 19200]
    assert [hc.cap_at(doc, "spike", p) for p in (19, 20, 21)] == [20000, 17000, 20000]


def test_bad_campaigns_are_refused_naming_the_file(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("campaign: x\npoints: 10\nrepeats: 2\ndevice: {size_mib: 64}\n"
                   "fio: {rw: randread, bs: 4k, iodepth: 8, runtime_s: 2, size_mib: 32}\nhistories: {a: {3: 100}}\n")
    with pytest.raises(hc.CampaignError, match=rf"{bad}: histories.a must give the cap from point 0"):
        hc.load(bad)
    bad.write_text(bad.read_text().replace("{3: 100}", "{0: 100, 12: 90}"))
    with pytest.raises(hc.CampaignError, match=r"change points must be integers in \[0, 10\)"):
        hc.load(bad)
