"""--recompute_grad: the encoder's block applications recomputed in the backward pass.

`recomputed_layers` (the encoder's path) makes the whole chain of block applications one
`tf.custom_gradient` function. Its forward pass runs the blocks without recording, keeping only
each block's input and its dropout seed states; its backward pass walks the blocks in reverse,
recomputes each one's output under a GradientTape and adds that block's variable gradients into
running sums at once. Why one function and not one `tf.recompute_grad` per block (the
previous version): a shared variable read by L block
applications gets L gradient tensors from TensorFlow's gradient machinery, summed (AddN) only
once all L exist — for ALBERT-large's 12.6M-parameter block at 24 layers that is 24 × 50 MB of
float32 gradients alive at once, more than the activations recompute saves.

On JAX (`KERAS_BACKEND=jax`) each block application is one `keras.remat` (`jax.checkpoint`)
function of its input, the mask adder and the block's variables (`recomputed_layers_remat`):
JAX's autodiff sums a shared variable's gradients itself, and the dropout seed states go in and
come out as values, so the recomputation draws the forward pass's masks.
"""

import keras
import tensorflow as tf

try:  # what tf.recompute_grad itself uses; the public API has no tape-less stop_recording
    from tensorflow.python.eager.record import stop_recording
except ImportError:  # pragma: no cover - an older or newer layout
    from tensorflow.python.eager.tape import stop_recording


def dropout_generators(block):
    """The seed generators of `block`'s dropout layers (none where a rate is 0)."""
    return [
        layer.seed_generator
        for layer in (
            block.attention.attention_dropout,
            block.attention.output_dropout,
            block.ffn.dropout,
        )
        if getattr(layer, "seed_generator", None) is not None
    ]


def _states(generators):
    return [tf.identity(g.state.value) for g in generators]


def _add(a, b):
    return b if a is None else a if b is None else a + b


def _after(x, tensors):
    """`x`, made to depend on `tensors` by data (as tf.recompute_grad does: XLA ignores control
    dependencies). On the output's gradient: a block is recomputed only once it exists, not all
    blocks up front (which would keep every block's activations again). On the running sums:
    they are done before the next block starts, and each has a second consumer, so grappler's
    arithmetic optimizer cannot fold the chain `((g_L + g_L-1) + ...) + g_1` back into one AddN
    over all L gradients (its AddOpsRewrite absorbs only single-consumer adds)."""
    firsts = [tf.reduce_max(tf.cast(tf.reshape(t, [-1])[:1], tf.float32)) for t in tensors]
    elem = tf.reduce_sum(tf.stack(firsts))  # (an empty dy gives -inf: still no NaN)
    dep = tf.where(tf.equal(elem, elem), 0.0, float("nan"))
    return tf.identity(x) + tf.cast(dep, x.dtype)


def _block_backward(block, x, dy, *, adder, rows, generators, saved, variables, sums):
    """Recomputes one block application from its input `x` with the dropout states `saved` of its
    forward call (so it draws the same masks), puts the states back as it found them, and returns
    (gradient w.r.t. x, gradients w.r.t. `variables`; None for those the block does not read).
    It starts once `dy` and `sums` (the running sums the previous block added to) exist."""
    found = _states(generators)
    for g, value in zip(generators, saved):
        g.state.assign(value)
    with tf.GradientTape() as tape:
        x = _after(x, [dy] + sums)
        tape.watch(x)
        out = block(x, adder, training=True, rows=rows)
    with tf.control_dependencies([out]):
        for g, value in zip(generators, found):
            g.state.assign(value)
    grads = tape.gradient(out, [x] + list(variables), output_gradients=dy)
    return grads[0], grads[1:]


def recomputed_layers(blocks, hidden, adder, rows=None):
    """Training calls of `blocks` in sequence (block i's output is block i+1's input); returns every
    block's output (`rows`: the padding-free layout, see padding_free.py, or None). Activations
    are recomputed in the backward pass one block at a time, and the
    gradients of the (shared) variables are summed as each block's come out, so at most one
    block's variable gradients exist besides the sums. The adder gets no gradient. The dropout
    seed states advance exactly as without recompute."""
    if keras.backend.backend() != "tensorflow":
        return recomputed_layers_remat(blocks, hidden, adder, rows)
    generators = [dropout_generators(block) for block in blocks]

    @tf.custom_gradient
    def run(x, mask_adder):
        inputs, saved, outputs = [], [], []
        with stop_recording():
            for block, gens in zip(blocks, generators):
                inputs.append(x)
                saved.append(_states(gens))
                x = block(x, mask_adder, training=True, rows=rows)
                outputs.append(x)

        def grad_fn(*output_grads, variables=None):
            variables = list(variables or [])
            sums = [None] * len(variables)
            dx, fresh = None, []
            for i in reversed(range(len(blocks))):
                dy = _add(output_grads[i], dx)
                if dy is None:
                    dy = tf.zeros_like(outputs[i])
                dx, grads = _block_backward(
                    blocks[i],
                    inputs[i],
                    dy,
                    adder=mask_adder,
                    rows=rows,
                    generators=generators[i],
                    saved=saved[i],
                    variables=variables,
                    sums=fresh,
                )
                sums = [_add(s, g) for s, g in zip(sums, grads)]
                fresh = [s for s, g in zip(sums, grads) if g is not None]
            return [dx, None], sums

        return outputs, grad_fn

    return run(hidden, adder)


def _remat_block(block, x, adder, rows):
    """One block application under `keras.remat`, as a pure function: the block's variables (its
    weights and dropout seed states) are inputs, read through a `keras.StatelessScope`, and the
    advanced seed states outputs, assigned back outside (a state written inside the rematerialized
    function would leak out of JAX's trace)."""
    variables = list(block.attention.variables) + list(block.ffn.variables)
    states = [g.state for g in dropout_generators(block)]
    where = {id(v): i for i, v in enumerate(variables)}

    def run(x, adder, values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))) as scope:
            out = block(x, adder, training=True, rows=rows)
        advanced = [scope.get_current_value(s) for s in states]
        return out, [values[where[id(s)]] if a is None else a for s, a in zip(states, advanced)]

    out, advanced = keras.remat(run)(x, adder, [v.value for v in variables])
    for state, value in zip(states, advanced):
        state.assign(value)
    return out


def recomputed_layers_remat(blocks, hidden, adder, rows=None):
    """`recomputed_layers` for the backends other than TensorFlow: each block application is
    rematerialized (`keras.remat`) in the backward pass; returns every block's output."""
    outputs = []
    for block in blocks:
        hidden = _remat_block(block, hidden, adder, rows)
        outputs.append(hidden)
    return outputs
