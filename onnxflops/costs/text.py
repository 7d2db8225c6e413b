"""String and n-gram ops. Strings have no fixed size, so each string operation counts as one
integer op per element; the character-level work inside it is not counted.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import TEXT, Cost, rule


@rule(["StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch"], category=TEXT)
def string_op(n: Node) -> Cost:
    """numel(X) int ops: one string operation per input element"""
    return Cost(int_ops=n.input(0).numel)


@rule("TfIdfVectorizer", category=TEXT)
def tf_idf_vectorizer(n: Node) -> Cost:
    """numel(X)·lookups int ops (1 per unigram, skips + 1 per longer n); +numel(Y) IDF weightings"""
    skips = n.attr("max_skip_count", 0) + 1
    lookups = sum(1 if length == 1 else skips
                  for length in range(n.attr("min_gram_length"), n.attr("max_gram_length") + 1))
    weighting = n.output().numel if n.attr("mode") in ("IDF", "TFIDF") else 0
    return Cost(int_ops=n.input(0).numel * lookups, flops=weighting)
