"""RNN, GRU and LSTM exactly as their ONNX definitions compute them, step by step.

Per step, direction and batch row: the input and recurrent matrix products (G gates × H units,
over I and H), then the gates' elementwise work as written in the operator's equations.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import RECURRENT, Cost, Grads, backward, rule


def recurrent_cost(n: Node, gates: int, elementwise_per_unit) -> Cost:
    x = n.input(0).dims
    steps, batch = (x[1], x[0]) if n.attr("layout", 0) else (x[0], x[1])
    directions, gate_rows, inputs = n.input(1).dims
    hidden = gate_rows // gates
    rows = steps * directions * batch
    macs = rows * gate_rows * (inputs + hidden)
    return Cost(macs=macs, dot_products=2 * rows * gate_rows,
                flops=rows * hidden * elementwise_per_unit)


def _bias(n: Node) -> int:
    return int(n.has_input(3))


@rule("RNN", category=RECURRENT, weights=(1, 2, 3))
def rnn(n: Node) -> Cost:
    """MACs = steps·dirs·batch·H·(I + H); per unit per step: sum, (2 bias adds), activation"""
    return recurrent_cost(n, 1, 2 + 2 * _bias(n))


@rule("GRU", category=RECURRENT, weights=(1, 2, 3))
def gru(n: Node) -> Cost:
    """MACs = steps·dirs·batch·3H·(I + H); per unit per step 11 (+6 with biases) elementwise ops"""
    # z, r: sum + activation (2 each); h: r⊙(·) + sum + activation (3); Ht = (1−z)⊙h + z⊙Ht−1 (4);
    # biases Wb + Rb: 2 adds for each of the 3 gates. linear_before_reset moves, not adds, work.
    return recurrent_cost(n, 3, 11 + 6 * _bias(n))


@rule("LSTM", category=RECURRENT, weights=(1, 2, 3, 7))
def lstm(n: Node) -> Cost:
    """MACs = steps·dirs·batch·4H·(I + H); per unit per step 13 (+8 biases, +6 peepholes) ops"""
    # i, o, f, c: sum + activation (2 each); Ct = f⊙Ct−1 + i⊙c (3); Ht = o⊙h(Ct) (2);
    # biases: 2 adds per gate; peepholes P⊙Ct−1 then add, for i, f and o.
    peepholes = int(n.has_input(7))
    return recurrent_cost(n, 4, 13 + 8 * _bias(n) + 6 * peepholes)


@backward(["RNN", "GRU", "LSTM"])
def recurrent_backward(n: Node, grads: Grads) -> Cost:
    """dX, dW: the input products again; dR, dH: the recurrent ones; 2× gates' elementwise; dB: Σ"""
    forward = {"RNN": rnn, "GRU": gru, "LSTM": lstm}[n.op_type](n)
    x = n.input(0).dims
    steps, batch = (x[1], x[0]) if n.attr("layout", 0) else (x[0], x[1])
    directions, gate_rows, inputs = n.input(1).dims
    hidden = n.input(2).dims[-1]
    rows = steps * directions * batch
    input_products, recurrent_products = rows * gate_rows * inputs, rows * gate_rows * hidden
    macs = recurrent_products  # dH(t−1) = dGates·R, needed at every step of backpropagation
    dots = rows * hidden
    if 0 in grads:
        macs, dots = macs + input_products, dots + rows * inputs
    if 1 in grads:
        macs, dots = macs + input_products, dots + directions * gate_rows * inputs
    if 2 in grads:
        macs, dots = macs + recurrent_products, dots + directions * gate_rows * hidden
    bias = rows * gate_rows if 3 in grads else 0  # dB: the gate gradients summed over steps, batch
    return Cost(macs=macs, dot_products=dots, flops=2 * forward.flops + bias)
