"""Oracles: what a framework model computes, found without the ONNX path, to check counts against.

They import the framework only, never the counting pipeline they check (a contract of
pyproject.toml holds it).
"""
