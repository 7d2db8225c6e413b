"""The report: self-contained HTML whose plots a real browser lays out, and the other formats.

The browser test runs Debian's chromium headless and skips where it is not installed, except in
CI (CI=true), where it fails: .ci/run installs chromium. tests/render_report_in_chromium.sh
installs it and runs this file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import struct
import subprocess

import pytest

from helpers import model, node, weight
from onnxflops.cli import main

pytest.importorskip("onnxruntime")

from onnxflops.html import page as htmlreport  # noqa: E402
from onnxflops.profiling import profile  # noqa: E402

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def profiles(cache):
    mp = pytest.MonkeyPatch()
    mp.setenv("ONNXFLOPS_CACHE_DIR", str(cache))
    cnn = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                 node("Relu", ["c"], ["r"], name="relu"),
                 node("GlobalAveragePool", ["r"], ["p"], name="pool"),
                 node("Flatten", ["p"], ["f"], name="flatten"),
                 node("Gemm", ["f", "fc.w", "fc.b"], ["y"], transB=1, name="fc")],
                {"x": [1, 3, 32, 32]},
                [weight("w", (16, 3, 3, 3)), weight("b", (16,)), weight("fc.w", (10, 16)),
                 weight("fc.b", (10,))])
    cnn.graph.name = "cnn"
    mlp = model([node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                 node("Relu", ["h"], ["a"], name="act"),
                 node("MatMul", ["a", "w2"], ["y"], name="fc2")],
                {"x": [4, 64]}, [weight("w1", (64, 128)), weight("w2", (128, 8))])
    mlp.graph.name = "mlp"
    try:
        yield [profile(m, runs=5, warmup=1, profile_runs=2, threads=1, quick=True)
               for m in (cnn, mlp)]
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def page(profiles):
    return htmlreport.to_html(profiles, "two models")


def plots(html: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for kind, body in re.findall(r'<svg class="plot" data-plot="(\w+)".*?>(.*?)</svg>', html,
                                 re.S):
        found.setdefault(kind, []).append(body)
    return found


def test_html_is_self_contained(page):
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "<link" not in page and "<img" not in page
    # No URL other than the SVG namespace: nothing is fetched when the file is opened.
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}


def test_html_has_every_plot_with_a_mark_per_node(page, profiles):
    found = plots(page)
    assert {k: len(v) for k, v in found.items()} == {"models": 1, "shares": 2, "nodes": 2,
                                                      "roofline": 2}
    assert found["models"][0].count("<circle") == 2
    for p, shares, nodes, roofline in zip(profiles, found["shares"], found["nodes"],
                                          found["roofline"]):
        timed = [n for n in p.nodes if n.flops and n.time_ms]
        # Two bars per plain category, each labelled with its category.
        assert shares.count('height="9"') == 2 * len(p.by_category())
        labels = re.findall(r'text-anchor="end">([^<]*)<title>', shares)
        assert labels == list(p.by_category())
        assert nodes.count("<circle") == len(timed)
        assert roofline.count("<circle") == len(timed)
        assert roofline.count("<polyline") == 1  # bandwidth slope, then the peak


def test_summary_table_numbers(page, profiles):
    cnn = profiles[0]
    # Conv 16x3x3x3 over 32x32 (+bias), Relu, average pool, Gemm 16→10 (+bias).
    conv = 2 * 16 * 32 * 32 * 27 + 16 * 32 * 32
    assert cnn.count.total.macs == 16 * 32 * 32 * 27 + 160
    assert cnn.flops >= conv + 16 * 32 * 32 + 2 * 160
    assert f"<td>{htmlreport.human(cnn.flops)}</td>" in page
    assert f"<td>{cnn.latency.median:.3f}</td>" in page


def test_json_markdown_csv(profiles):
    doc = json.loads(htmlreport.to_json(profiles))
    assert [m["model"] for m in doc["models"]] == ["cnn", "mlp"]
    assert doc["models"][1]["flops"] == profiles[1].flops
    rows = list(csv.DictReader(io.StringIO(htmlreport.to_csv(profiles))))
    assert len(rows) == sum(len(p.nodes) for p in profiles)
    assert {r["model"] for r in rows} == {"cnn", "mlp"}
    text = htmlreport.to_markdown(profiles)
    assert text.count("\n## ") == 2 and "| model | inputs |" in text


def test_report_command_writes_every_format(tmp_path, cache, monkeypatch, capsys):
    import onnx

    monkeypatch.setenv("ONNXFLOPS_CACHE_DIR", str(cache))
    path = tmp_path / "mlp.onnx"
    onnx.save(model([node("MatMul", ["x", "w"], ["y"], name="fc")], {"x": ["n", 8]},
                    [weight("w", (8, 4))]), str(path))
    out = tmp_path / "r.html"
    code = main(["report", str(path), "--input", "x=2x8", "--runs", "3", "--warmup", "0",
                 "--profile-runs", "1", "--quick", "-o", str(out), "--json",
                 str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv"), "--markdown", "-"])
    stdout, _ = capsys.readouterr()
    assert code == 0
    assert "data-plot=\"roofline\"" in out.read_text()
    assert json.loads((tmp_path / "r.json").read_text())["models"][0]["flops"] == 2 * 2 * 8 * 4
    assert (tmp_path / "r.csv").read_text().startswith("model,name,op_type")
    assert stdout.startswith("# onnxflops report")


def test_report_writes_what_it_measured_then_names_the_model_that_failed(tmp_path, cache,
                                                                           monkeypatch, capsys):
    import onnx

    monkeypatch.setenv("ONNXFLOPS_CACHE_DIR", str(cache))
    good = tmp_path / "mlp.onnx"
    onnx.save(model([node("MatMul", ["x", "w"], ["y"], name="fc")], {"x": ["n", 8]},
                    [weight("w", (8, 4))]), str(good))
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    out = tmp_path / "r.html"
    code = main(["report", str(good), str(broken), str(good), "--input", "x=2x8", "--runs", "3",
                 "--warmup", "0", "--profile-runs", "1", "--quick", "-o", str(out), "--json",
                 str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    # The first model was measured and written: its 2·2·8·4 FLOPs are in the JSON.
    assert json.loads((tmp_path / "r.json").read_text())["models"][0]["flops"] == 2 * 2 * 8 * 4
    assert "data-plot" in out.read_text()
    error = [line for line in err.splitlines() if line.startswith("onnxflops: error:")]
    assert len(error) == 1 and str(broken) in error[0]
    assert "1 model(s) measured before it; 1 after it were not measured" in error[0]


def test_report_input_no_model_has_exits_2_naming_it_and_one_model_lacks_is_ignored_for_it(
        tmp_path, cache, monkeypatch, capsys):
    import onnx

    monkeypatch.setenv("ONNXFLOPS_CACHE_DIR", str(cache))
    paths = []
    for name in ("x", "y"):
        paths.append(str(tmp_path / f"{name}.onnx"))
        onnx.save(model([node("MatMul", [name, "w"], ["out"], name="fc")], {name: ["n", 8]},
                        [weight("w", (8, 4))]), paths[-1])
    out = tmp_path / "r.html"
    timing = ["--runs", "2", "--warmup", "0", "--profile-runs", "1", "--quick", "-o", str(out),
              "--json", str(tmp_path / "r.json")]
    assert main(["report", *paths, "--input", "x=2x8", "--input", "yy=3x8", *timing]) == 2
    error = capsys.readouterr().err.strip()
    assert error == ("onnxflops: error: --input yy: no model has an input 'yy' (did you mean "
                     "'y'?); their inputs are: x, y")
    assert not out.exists()  # refused before anything was measured
    # x binds the first model only, y the second: 2·(2·8·4) and 2·(3·8·4) FLOPs
    assert main(["report", *paths, "--input", "x=2x8", "--input", "y=3x8", *timing]) == 0
    measured = json.loads((tmp_path / "r.json").read_text())["models"]
    assert [m["flops"] for m in measured] == [2 * 2 * 8 * 4, 2 * 3 * 8 * 4]


# A real browser: chromium lays the page out; a script added to a copy of the page measures every
# plot and every mark and writes the result into the DOM that --dump-dom prints.
_MEASURE = """<script>
const out = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  let visible = 0, marks = 0;
  for (const c of svg.querySelectorAll('circle, rect, polyline')) {
    const b = c.getBoundingClientRect();
    marks += 1;
    // A zero share is a bar of zero width: placed, at the axis.
    const placed = b.width > 0 || b.height > 0;
    if (placed && b.left >= box.left && b.right <= box.right && b.top >= box.top
        && b.bottom <= box.bottom) visible += 1;
  }
  out.push([svg.dataset.plot, Math.round(box.width), Math.round(box.height), marks, visible]);
}
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        missing = "chromium is not installed (tests/render_report_in_chromium.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{missing}, and CI must run the browser tests: .ci/run installs it")
        pytest.skip(missing)
    profile_dir = tmp_path / "chromium-profile"
    profile_dir.mkdir(exist_ok=True)
    return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", *args],
                          capture_output=True, text=True, timeout=120)


def test_chromium_lays_out_every_plot(tmp_path, page):
    measured_page = tmp_path / "measured.html"
    measured_page.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", measured_page.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "chromium printed no DOM"
    results = json.loads(found.group(1).replace("&quot;", '"'))
    assert sorted(r[0] for r in results) == ["models", "nodes", "nodes", "roofline", "roofline",
                                             "shares", "shares"]
    for kind, width, height, marks, visible in results:
        assert width == 600 and height >= 100, kind
        assert marks > 0 and visible == marks, kind


# Every text of every plot measured where chromium drew it (rotation included), against the box
# of its plot: [plot, text, how far it reaches past the left, right, top and bottom edges].
_TEXT_OVERFLOW = """<script>
const out = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  for (const t of svg.querySelectorAll('text')) {
    const b = t.getBoundingClientRect();
    out.push([svg.dataset.plot, t.textContent, box.left - b.left, b.right - box.right,
              box.top - b.top, b.bottom - box.bottom]);
  }
}
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def test_chromium_draws_no_plot_text_past_its_plot(tmp_path, profiles):
    """Labels of any length stay inside their plot: model names (points' labels, here the long
    paths a user passes) and bar labels (sized to the longest, or cut with a tooltip)."""
    import dataclasses

    from onnxflops.html import svg

    long_names = [dataclasses.replace(p, model=f"/home/someone/Models/Exported/{p.model}_"
                                               "WithAVeryLongFileNameThatKeepsGoing.onnx")
                  for p in profiles]
    bars = svg.paired_bars(["NchwcReorderInput+NchwcConv+NchwcReorderOutput (3 nodes)", "Mul",
                            "W" * 80], ("latency", [0.5, 0.2, 0.3], "#000"),
                           ("FLOPs", [0.9, 0.05, 0.05], "#888"), kind="bars", x_label="share")
    html = htmlreport.to_html(long_names, "long names").replace(
        "</body>", f"<figure>{bars}</figure>{_TEXT_OVERFLOW}</body>")
    measured_page = tmp_path / "overflow.html"
    measured_page.write_text(html, encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", measured_page.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "chromium printed no DOM"
    texts = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert {t[0] for t in texts} == {"models", "shares", "nodes", "roofline", "bars"}
    assert any("…" in t[1] for t in texts if t[0] == "models")  # the long names were cut
    past = [t for t in texts if max(t[2:]) > 0.5]
    assert not past, past


def test_chromium_screenshot_is_the_full_page(tmp_path, page):
    html = tmp_path / "report.html"
    html.write_text(page, encoding="utf-8")
    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,3000", html.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 3000)
    assert len(data) > 50_000  # a blank page of that size compresses to a few KB
