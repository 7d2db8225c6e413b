"""The Keras oracle's formulas, by hand (the walk that applies them to a model is in
tests/frameworks/test_keras_oracle.py)."""

from __future__ import annotations

from onnxflops.oracles.keras import (attention_macs, conv_macs, conv_transpose_macs, dense_macs,
                                     einsum_macs, matmul_macs, recurrent_macs)


def test_dense_and_matmul():
    assert dense_macs((2, 5, 8), 3) == 2 * 5 * 8 * 3  # 10 rows, each 3 dot products of length 8
    assert matmul_macs((4, 2, 8), (8, 3)) == 4 * 2 * 8 * 3  # (4, 2, 8) @ (8, 3)
    assert matmul_macs((1, 6, 2, 8), (5, 1, 8, 3)) == 5 * 6 * 2 * 8 * 3  # batch dims broadcast
    assert matmul_macs((8,), (8, 3)) == 8 * 3  # a row vector


def test_einsum_multiplies_every_index_where_one_is_summed():
    assert einsum_macs("abc,cd->abd", (2, 5, 8), (8, 3)) == 2 * 5 * 8 * 3
    # attention scores: batch 1, 4 heads, 6 queries, 7 keys, head dim 16
    assert einsum_macs("aecd,abcd->acbe", (1, 7, 4, 16), (1, 6, 4, 16)) == 1 * 7 * 4 * 16 * 6
    assert einsum_macs("...b,bc->...c", (2, 5, 8), (8, 3)) == 2 * 5 * 8 * 3
    assert einsum_macs("ij", (3, 4)) == 0 and einsum_macs("i,j->ij", (3,), (4,)) == 0  # no sum
    assert einsum_macs("ij,jk", (3, 4), (4, 5)) == 3 * 4 * 5  # implicit output "ik"


def test_convolutions():
    # 8×8×6 output, groups 2 over 4 input channels: each output reads 2 channels × 3×3
    assert conv_macs((1, 8, 8, 6), 4, 2, (3, 3)) == 384 * 2 * 9
    # transposed: each of 4×4×2 input elements scattered to 5 channels through 2×2
    assert conv_transpose_macs((1, 4, 4, 2), 5, (2, 2)) == 32 * 5 * 4


def test_recurrent_and_attention():
    # LSTM, 4 gates, 6 units, input 3, 7 steps, batch 2: 4·6·(3 + 6) per step and row
    assert recurrent_macs(2, 7, 3, 6, 4) == 7 * 2 * 4 * 6 * 9
    # 2 heads, 5 queries, 9 keys, key dim 4, value dim 3: scores 5·9·4, context 5·9·3 per head
    assert attention_macs(1, 2, 5, 9, 4, 3) == 2 * (5 * 9 * 4 + 5 * 9 * 3)


def test_an_outer_product_of_two_vectors_is_the_one_einsum_keras_runs_as_a_matmul():
    from onnxflops.oracles.keras import runs_as_matmul

    assert runs_as_matmul("i,j->ij") and runs_as_matmul("i, d -> id")
    assert not runs_as_matmul("i,j->ji")  # tf.einsum: not Keras's matmul form
    assert not runs_as_matmul("i,i->i") and not runs_as_matmul("ij,jk->ik")
    assert not runs_as_matmul("i,j,k->ijk")
