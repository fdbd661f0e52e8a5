"""``analysis.figures.save`` and ``tight_layout``: files written once per format, two draws a figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.figures import save, tight_layout  # noqa: E402


def _figure(label: str) -> Figure:
    fig, axes = plt.subplots(2, 2, figsize=(6, 4))
    for i, ax in enumerate(axes.flat):
        ax.plot([0, 1, 2], [i, 10 ** i, 3])
        ax.set_ylabel(f"a long label {i} (MiB/s)")
        ax.set_title(f"panel {i}")
    fig.set_label(label)
    return fig


@pytest.fixture
def draws(monkeypatch):
    n = [0]
    real = Figure.draw

    def counted(self, renderer):
        n[0] += 1
        return real(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    return n


def test_tight_layout_places_the_axes_as_figure_tight_layout_and_leaves_no_engine(tmp_path, draws):
    theirs, ours = _figure("t"), _figure("t")
    theirs.tight_layout()
    tight_layout(ours)
    assert ours.get_layout_engine() is None and theirs.get_layout_engine() is not None
    for a, b in zip(theirs.axes, ours.axes):
        assert a.get_position().bounds == b.get_position().bounds
    assert ours.axes[0].get_position().x0 > 0.1          # the label's room was made: not the default 0.125 grid
    draws[0] = 0
    png_theirs = save(theirs, tmp_path / "theirs")
    assert draws[0] == 4                                 # a layout draw before each of PNG and SVG
    draws[0] = 0
    png_ours = save(ours, tmp_path / "ours")
    assert draws[0] == 2
    assert png_ours.read_bytes() == png_theirs.read_bytes()
    assert (tmp_path / "ours" / "t.svg").read_text().count("<text") == \
        (tmp_path / "theirs" / "t.svg").read_text().count("<text") > 10
    plt.close("all")


def test_plotly_figures_keep_jsonschemas_iri_grammar_out_and_importing_analysis_changes_nothing():
    """plotly's fig.show() in a kernel imports nbformat → jsonschema, which would build rfc3987_syntax's
    grammar (lark, ~1 s): draw_plotly and the command line skip it by an explicit call
    (analysis.speedups), while importing ``analysis`` alone leaves sys.modules as it was (issue 50)."""
    code = ("import sys, analysis; print('rfc3987_syntax' in sys.modules); "
            "from analysis.published import qos as pq; from analysis.figures import qos_studies as q; "
            "spec = q.BY_ID['qos-part1-fig01']; f = q.draw_plotly(spec, 'published', pq.load(pq.FILES[spec.seed])); "
            "print(type(f).__name__); "
            "import nbformat.validator; print('lark' in sys.modules, 'jsonschema' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert r.stdout.split() == ["False", "Figure", "False", "True"], r.stderr[-2000:]


def test_strip_plots_are_the_same_on_every_run_and_leave_numpys_generator_alone(tmp_path):
    import numpy as np
    import pandas as pd

    from analysis.figures.qos import by_arm
    runs = pd.DataFrame({"scenario": ["baseline"] * 6, "arm": ["wpq"] * 3 + ["balanced"] * 3,
                         "iops": [900.0, 910.0, 905.0, 800.0, 812.0, 790.0]})
    pngs = []
    for seed in (1, 2):                                   # whatever state the caller's generator is in
        np.random.seed(seed)
        want = np.random.random()
        np.random.seed(seed)
        pngs.append(save(by_arm(runs, "iops", "client IOPS", "t-strip"), tmp_path / str(seed)).read_bytes())
        assert np.random.random() == want                 # ... it is left there
    assert pngs[0] == pngs[1]
    plt.close("all")
