"""The chapters' widgets with a live kernel: the Python callbacks recompute what is shown.

Each chapter is read with Jupytext (as JupyterLab opens it), executed in a real kernel, and
then a cell changes a secondary input the way a reader would; the test checks the widget
model that the page shows changed to the hand-computed value. (The static page's behaviour
without a kernel is covered by test_browser.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BOOK = Path(__file__).resolve().parents[2] / "book"


def _run_chapter_with(chapter: str, extra: str) -> None:
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = jupytext.read(BOOK / chapter)
    nb.cells.append(nbformat.v4.new_code_cell(extra))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(BOOK)}})
    client.execute()  # raises CellExecutionError (with the traceback) if an assert fails


def test_ch01_calculator_recomputes_every_state_on_new_price():
    # Default state 30 %: 200 GPUs x 8760 h x 0.7 idle x $4.00 = $4,905,600.
    # Price $8.00: 200 x 8760 x 0.7 x 8 = $9,811,200; at 10 % (state 0): 200 x 8760 x 0.9 x 8 = $12,614,400.
    _run_chapter_with("ch01_sharing_problem.md", """
summary = lambda i: view.stack.children[i].children[1].value
assert "$4,905,600" in summary(2), summary(2)
price_box.value = 8.0
assert "$9,811,200" in summary(2), summary(2)
assert "$12,614,400" in summary(0), summary(0)
assert view.stack.selected_index == 2
""")


def test_ch05_decision_widget_answers_for_ticked_requirements():
    # The form starts at the slider's default case: another tenant, half an H100, 30 GB ->
    # MIG, 3g.40gb (the smallest profile whose 40 GB cover 30 GB). On an L40S (no MIG): a
    # whole GPU. Trusted (no other tenant) inference on an A100: MPS, configured as
    # sharing.mps with replicas: 2 (floor(1 / 0.5)), which the plugin turns into 50 %; the
    # form's 30 GB fit the 80 GB / 2 = 40 GB limit per client. The text joins numbers and
    # "%" with a no-break space (U+00A0).
    _run_chapter_with("ch05_choosing.md", """
assert answer.value.startswith("<b>MIG</b>"), answer.value
assert "mig-3g.40gb" in answer.value, answer.value
model.value = "l40s"
assert answer.value.startswith("<b>exclusive</b>"), answer.value
flags["other_tenants"].value = False
model.value = "a100-80gb"
assert answer.value.startswith("<b>MPS</b>"), answer.value
assert "replicas: 2" in answer.value, answer.value
assert "50\u00a0% of the threads" in answer.value, answer.value
assert "Memory fits: 2 x 30\u00a0GB" in answer.value, answer.value
""")


def test_ch03_explorer_plans_a_typed_request():
    # The typed list is planned by mig.plan_layout; an impossible one gives the reason.
    _run_chapter_with("ch03_mig.md", """
fig, html = render_layout("A100-40GB", ["4g.20gb", "4g.20gb"])
assert "no layout" in html and "at most 1 fit" in html, html
names_box.value = "4g.20gb, 2g.10gb, 1g.5gb"
model_box.value = "A100-40GB"   # callbacks run without error in the kernel
fig, html = render_layout("A100-40GB", ["4g.20gb", "2g.10gb", "1g.5gb"])
assert "7/8 memory" in html and "7/7 compute" in html, html
""")


def test_ch02_timeline_recomputes_for_wider_kernels():
    # 3 clients x 4 kernels x 2 ms. Default share 0.25: MPS overlaps all three -> 8.0 ms.
    # Share 1.0: nothing can overlap -> 12 kernels x 2 ms = 24.0 ms with MPS; without MPS
    # 24 ms + 11 context switches x 0.1 ms = 25.1 ms.
    _run_chapter_with("ch02_mps.md", """
html = lambda: view.stack.children[2].children[1].value
assert "MPS finishes in 8.0 ms instead of 25.1 ms" in html(), html()
share.value = 1.0
assert "MPS finishes in 24.0 ms instead of 25.1 ms" in html(), html()
""")


def test_ch04_latency_recomputes_for_a_new_request_size():
    # slice 2 ms, switch 0.1, 4 tenants. w = 5 ms: p99 = 0.99*3*2.1 + 2*8.4 + 1 = 24.037 -> "24.0".
    # w = 1 ms (one slice): p99 = 0.99*3*2.1 + 1 = 7.237 -> "7.2".
    _run_chapter_with("ch04_time_slicing.md", """
html = lambda: view.stack.children[2].children[1].value
assert "p99 24.0 ms against 5 ms alone" in html(), html()
work.value = 1.0
assert "p99 7.2 ms against 1 ms alone" in html(), html()
""")


def test_ch06_steps_recompute_for_typed_job_sizes():
    # Four 1-GPU jobs: first-fit and best-fit stack them on node-0 (free 0, 4, 4): nothing
    # stranded. Worst-fit spreads them (free 2, 3, 3): no node has 4 free, all 8 stranded.
    _run_chapter_with("ch06_cluster_scheduling.md", """
html = lambda: view.stack.children[4].children[1].value
assert "first-fit: 4 stranded; best-fit: 0 stranded; worst-fit: 4 stranded" in html(), html()
sizes_box.value = "1, 1, 1, 1"
assert "first-fit: 0 stranded; best-fit: 0 stranded; worst-fit: 8 stranded" in html(), html()
sizes_box.value = "9"
assert "expected four" in sizes_msg.value
assert "worst-fit: 8 stranded" in html()   # a bad input changes nothing
""")
