"""The HTML pages, each one self-contained file: `page.py` the measured profiles of one or more
models with their plots (what `onnxflops report` writes, and `profile --html`), `llm.py` the
serving costs of `onnxflops llm --html`, `svg.py` their charts."""
