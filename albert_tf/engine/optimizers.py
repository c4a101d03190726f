"""Google's ALBERT optimizers as Keras 3 optimizers, on every Keras backend.

`AdamWeightDecay` and `LAMB` follow Google's update rules exactly, clip the global norm of the
gradient after it is summed across replicas, and accumulate gradients over micro-batches while
counting only real updates. `create_optimizer` pairs one of them with the warmup +
polynomial-decay learning rate (`learning_rate.WarmupPolynomialDecay`), as Google's
`optimization.create_optimizer` does.

The update rule, the clipping and the accumulation are written once, on `keras.ops`, so the
same code runs on TensorFlow and JAX. Only the replica plumbing differs, and it lives in two
functions here (`_sum_across_replicas`, `_update_each_variable`): under `tf.distribute` each
replica holds part of the batch, so its gradients are summed and the variables updated on every
device; under JAX (`keras.distribution`) the gradient arrives already global and the variables
are updated in place (by Keras' stateless apply inside the jitted train step).

Why not `keras.optimizers.Lamb` / `AdamW`: see docs/optimization.md (in short: they always apply
bias correction, put weight decay outside LAMB's trust ratio, match exclusions on the short
variable name, clip per replica before the all-reduce, and their gradient accumulation advances
the learning-rate schedule once per micro-batch).
"""

import math
import numbers
import re

import keras
from keras import ops

from albert_tf.engine.arg_checks import check_number, check_patterns
from albert_tf.engine.learning_rate import WarmupPolynomialDecay

# Google's `exclude_from_weight_decay`: regexes searched in the variable's full name (path).
GOOGLE_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")

# Keras optimizer options whose job this module does itself, with the argument to use instead.
_KERAS_OPTIONS_REPLACED = {
    "weight_decay": "weight_decay_rate",
    "global_clipnorm": "clip_norm",
    "clipnorm": "clip_norm",
    "clipvalue": "clip_norm",
    "use_ema": None,
}
_KERAS_OPTIONS_IGNORED = ("ema_momentum", "ema_overwrite_frequency")


def _reject_keras_options(kwargs):
    """Refuses the Keras options this module replaces, so the two meanings never mix."""
    for key in _KERAS_OPTIONS_IGNORED:
        kwargs.pop(key, None)
    for key, ours in _KERAS_OPTIONS_REPLACED.items():
        value = kwargs.pop(key, None)
        if value not in (None, False):
            hint = f"; use `{ours}`" if ours else ""
            raise ValueError(
                f"`{key}` is not supported by this optimizer{hint} (see docs/optimization.md)"
            )
    return kwargs


def variable_path(variable):
    """The name exclusion regexes are searched in: Keras 3's `variable.path`, else the TF name
    without its ':0' suffix (Google's `_get_variable_name`)."""
    path = getattr(variable, "path", None) or variable.name
    return re.sub(r":\d+$", "", path)


def _matches_any(patterns, path):
    """True when one of the regexes is found anywhere in `path` (re.search, as Google's)."""
    return any(re.search(p, path) is not None for p in patterns)


def _one_minus_power(beta, t):
    """1 - beta**t as -expm1(t*log(beta)), accurate in float32 (1 - 0.999**t loses ~4 digits)."""
    if beta == 0.0:
        return ops.ones_like(t)
    return -ops.expm1(t * math.log(beta))


def _norm(x):
    """The Euclidean norm of all of `x`'s entries (tf.norm's default)."""
    return ops.sqrt(ops.sum(ops.square(x)))


def _clip_by_global_norm(values, clip_norm):
    """`tf.clip_by_global_norm`: every value times clip_norm / max(global norm, clip_norm); all
    NaN when the global norm is not finite."""
    norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(v)) for v in values])))
    scale = clip_norm * ops.minimum(1.0 / norm, 1.0 / clip_norm)
    scale = scale + (norm - norm)
    return [v * ops.cast(scale, v.dtype) for v in values]


# -- replica plumbing: the one place that knows tf.distribute ------------------------------


def _on_tensorflow():
    """True when Keras runs on TensorFlow (tf.distribute replicas, IndexedSlices gradients)."""
    return keras.backend.backend() == "tensorflow"


def _dense_gradients(grads):
    """The gradients as dense tensors: TensorFlow's embedding gradients are IndexedSlices, and
    Google's moment update touches every row."""
    if not _on_tensorflow():
        return [ops.convert_to_tensor(g) for g in grads]
    import tensorflow as tf  # deferred: only when TensorFlow is the Keras backend

    return [tf.convert_to_tensor(g) for g in grads]


def _sum_across_replicas(grads):
    """All-reduce (sum) gradients over tf.distribute replicas; Keras already scaled each
    replica's loss by 1/num_replicas, so the sum is the global-batch mean gradient. Identity on
    one replica, and on JAX, whose gradients are already those of the global batch."""
    if not _on_tensorflow():
        return list(grads)
    import tensorflow as tf  # deferred: only when TensorFlow is the Keras backend

    ctx = tf.distribute.get_replica_context()
    if ctx is None:
        raise ValueError(
            "apply() must be called in a replica context (inside strategy.run or "
            "a Keras train step), not in cross-replica context"
        )
    if ctx.num_replicas_in_sync > 1:
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    return list(grads)


def _update_each_variable(update, variables, per_variable, shared):
    """Calls `update(variable, *per_variable[i], *shared)` for each variable: on TensorFlow on
    every device that holds a copy (a merge_call, then `strategy.extended.update`), elsewhere
    directly."""
    if not _on_tensorflow():
        for variable, args in zip(variables, per_variable):
            update(variable, *args, *shared)
        return
    import tensorflow as tf  # deferred: only when TensorFlow is the Keras backend

    def cross_replica(strategy, per_variable, shared):
        for variable, args in zip(variables, per_variable):
            target = variable.value if isinstance(variable, keras.Variable) else variable
            strategy.extended.update(target, update, args=(*args, *shared), group=False)

    tf.distribute.get_replica_context().merge_call(cross_replica, args=(per_variable, shared))


class _GoogleAdam(keras.optimizers.Optimizer):
    """Shared machinery of Google's AdamWeightDecay and LAMB: Adam moments without (by default)
    bias correction, decoupled weight decay added to the update, global-norm clipping of the
    all-reduced (and accumulated) gradient, and gradient accumulation over N micro-batches."""

    _layer_adaptation = False

    def __init__(
        self,
        learning_rate=0.001,
        *,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=GOOGLE_EXCLUSIONS,
        bias_correction=False,
        clip_norm=1.0,
        gradient_accumulation_steps=1,
        loss_scale_factor=None,
        name=None,
        **kwargs,
    ):
        kwargs = _reject_keras_options(kwargs)
        if isinstance(learning_rate, numbers.Real) and not isinstance(learning_rate, bool):
            learning_rate = float(check_number("learning_rate", learning_rate, low=0))
        beta_1 = float(check_number("beta_1", beta_1, low=0, high=1, high_open=True))
        beta_2 = float(check_number("beta_2", beta_2, low=0, high=1, high_open=True))
        epsilon = float(check_number("epsilon", epsilon, low=0, low_open=True))
        weight_decay_rate = float(check_number("weight_decay_rate", weight_decay_rate, low=0))
        exclusions = check_patterns("exclude_from_weight_decay", exclude_from_weight_decay)
        if clip_norm is not None:
            clip_norm = float(check_number("clip_norm", clip_norm, low=0, low_open=True))
        steps = int(
            check_number(
                "gradient_accumulation_steps", gradient_accumulation_steps, low=1, integer=True
            )
        )
        if not isinstance(bias_correction, bool):
            raise ValueError(f"`bias_correction` must be a bool, got {bias_correction!r}")
        # Keras's own clipping, weight decay and accumulation stay off: this class does them.
        super().__init__(
            learning_rate=learning_rate, loss_scale_factor=loss_scale_factor, name=name, **kwargs
        )
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.weight_decay_rate = weight_decay_rate
        self.weight_decay_exclusions = exclusions
        self.bias_correction = bias_correction
        self.clip_norm = clip_norm
        self.accumulation_steps = steps

    # -- variables ------------------------------------------------------------------------

    def build(self, var_list):
        """Creates the optimizer's variables for `var_list`.

        Creates the moments (and the gradient accumulators), and decides once per variable,
        from its path, whether it gets weight decay (and the LAMB trust ratio): the per-device
        copies seen inside an update have no Keras path.

        Args:
            var_list: list of variables. The variables this optimizer will update.

        Raises:
            ValueError: when a variable has a constraint or `overwrite_with_gradient` set.
        """
        if self.built:
            return
        for v in var_list:
            if getattr(v, "overwrite_with_gradient", False) or getattr(v, "constraint", None):
                raise ValueError(
                    f"variable {variable_path(v)} has a constraint or "
                    "overwrite_with_gradient, which this optimizer does not support"
                )
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )
        paths = [variable_path(v) for v in var_list]
        self._use_decay = [
            self.weight_decay_rate > 0 and not _matches_any(self.weight_decay_exclusions, p)
            for p in paths
        ]
        self._use_adaptation = [
            self._layer_adaptation and not _matches_any(self._adaptation_exclusions(), p)
            for p in paths
        ]
        if self.accumulation_steps > 1:
            self._accumulators = self.add_optimizer_variables(var_list, "accumulated_grad")
            self._micro_step = self.add_variable(
                (),
                initializer="zeros",
                dtype="int",  # int64 on TensorFlow, int32 on JAX (as Keras' iterations)
                aggregation="only_first_replica",
                name="micro_step",
            )

    def _adaptation_exclusions(self):
        """Regexes that skip the LAMB trust ratio (none for AdamW)."""
        return []

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Not supported: pass `exclude_from_weight_decay=[regex, ...]` to the constructor.

        Args:
            var_list: Unused.
            var_names: Unused.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            "set exclusions with the constructor argument "
            "`exclude_from_weight_decay=[regex, ...]` instead"
        )

    # -- one optimizer call (a micro-step) -----------------------------------------------

    def apply(self, grads, trainable_variables=None):
        """Applies one micro-batch's gradients (Keras's `apply_gradients` calls this).

        Sums the gradients over replicas and adds them to the accumulators; every
        `gradient_accumulation_steps` calls it clips the mean gradient to `clip_norm` and
        updates the variables. Variables whose gradient is None are skipped, as in Google's
        code. On TensorFlow, call it in a replica context (a Keras train step or
        `strategy.run`); on JAX, Keras' train step calls it through `stateless_apply`.

        Args:
            grads: list of tensors (or None). One gradient per variable.
            trainable_variables: list of variables, or None. The variables to update; None:
                those the optimizer was built with.

        Raises:
            ValueError: when called in a cross-replica context, when the numbers of gradients
                and variables differ, or when `trainable_variables` is None on the first call.
        """
        grads, variables = self._pair_gradients(grads, trainable_variables)
        if not grads:
            return
        with keras.name_scope(self.name, caller=self):
            if self.loss_scale_factor is not None:
                grads = [g / self.loss_scale_factor for g in grads]
            grads = _sum_across_replicas(grads)
            n = self.accumulation_steps
            if n == 1:
                sums, is_update, mean = [None] * len(grads), None, grads
            else:
                micro = ops.convert_to_tensor(self._micro_step.value)
                is_update = ops.greater_equal(micro + 1, n)
                sums = [
                    self._accumulators[self._get_variable_index(v)] + g
                    for g, v in zip(grads, variables)
                ]
                mean = [s / float(n) for s in sums]
            if self.clip_norm is not None:
                mean = _clip_by_global_norm(mean, self.clip_norm)
            lr = ops.convert_to_tensor(self.learning_rate)
            _update_each_variable(
                self._update_variable, variables, list(zip(mean, sums)), (lr, is_update)
            )
            if n == 1:
                self._iterations.assign_add(1)
            else:
                self._micro_step.assign(ops.where(is_update, ops.zeros_like(micro), micro + 1))
                self._iterations.assign_add(ops.cast(is_update, self._iterations.dtype))

    def _pair_gradients(self, grads, trainable_variables):
        """Build if needed, then drop variables whose gradient is None (Google skips them) and
        make the rest dense."""
        if trainable_variables is None:
            if not self.built:
                raise ValueError("pass trainable_variables on the first call, or build() first")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"got {len(grads)} gradients for {len(trainable_variables)} variables")
        if not self.built:
            with keras.name_scope(self.name, caller=self):
                self.build(trainable_variables)
        self._check_variables_are_known(trainable_variables)
        pairs = [(g, v) for g, v in zip(grads, trainable_variables) if g is not None]
        return _dense_gradients([g for g, _ in pairs]), [v for _, v in pairs]

    def _update_variable(self, variable, grad, grad_sum, lr, is_update):
        """Updates one variable (on one device under tf.distribute). Accumulating, either the
        update with the mean gradient and an emptied accumulator, or everything kept and the
        running sum stored: the branch is a cond on values, assigned after it, so it runs
        inside a tf.distribute update and inside JAX's stateless train step alike."""
        if grad_sum is None:
            self.update_step(grad, variable, lr)
            return
        i = self._get_variable_index(variable)
        accumulator, m, v = self._accumulators[i], self._momentums[i], self._velocities[i]
        state = [ops.convert_to_tensor(x) for x in (variable, m, v)]

        def update():
            return (*self._google_update(i, grad, *state, lr), ops.zeros_like(grad_sum))

        def accumulate():
            return (*state, ops.convert_to_tensor(grad_sum))

        new_state = ops.cond(is_update, update, accumulate)
        for target, value in zip((variable, m, v, accumulator), new_state):
            self.assign(target, value)

    # -- the update rule ----------------------------------------------------------------

    def update_step(self, gradient, variable, learning_rate):
        """Updates one variable with Google's rule.

        m and v are the moment estimates; `u = m / (sqrt(v) + epsilon) + weight_decay_rate * w`
        (the decay only for variables not excluded) and `w -= r * lr * u`, where r is LAMB's
        trust ratio (1 for AdamWeightDecay and for excluded variables). With
        `bias_correction`, m and v are first divided by `1 - beta**t`.

        Args:
            gradient: tensor. The (clipped, averaged) gradient of `variable`.
            variable: The variable to update.
            learning_rate: scalar tensor. The learning rate of this update.
        """
        i = self._get_variable_index(variable)
        m, v = self._momentums[i], self._velocities[i]
        state = [ops.convert_to_tensor(x) for x in (variable, m, v)]
        new_w, new_m, new_v = self._google_update(i, gradient, *state, learning_rate)
        self.assign(m, new_m)
        self.assign(v, new_v)
        self.assign(variable, new_w)

    def _google_update(self, i, gradient, w, m, v, learning_rate):
        """Google's rule on values: the new weight, first and second moments of variable i."""
        dtype = w.dtype
        g = ops.cast(gradient, dtype)
        lr = ops.cast(learning_rate, dtype)
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * g
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(g)
        m_hat, v_hat = next_m, next_v
        if self.bias_correction:
            t = ops.cast(self.iterations + 1, dtype)
            m_hat = next_m / _one_minus_power(self.beta_1, t)
            v_hat = next_v / _one_minus_power(self.beta_2, t)
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self._use_decay[i]:
            update = update + self.weight_decay_rate * w
        if self._use_adaptation[i]:
            update = self._trust_ratio(w, update) * update
        return w - lr * update, next_m, next_v

    def _trust_ratio(self, w, update):
        """LAMB's ||w|| / ||u||, or 1.0 when either norm is 0."""
        w_norm, u_norm = _norm(w), _norm(update)
        safe = ops.logical_and(w_norm > 0, u_norm > 0)
        return ops.where(safe, w_norm / ops.where(safe, u_norm, 1.0), 1.0)

    # -- serialization --------------------------------------------------------------------

    def get_config(self):
        """The constructor arguments, for Keras serialization.

        Keras's own clipping, weight-decay and EMA options are left out (this class refuses
        them).

        Returns:
            dict: the arguments that rebuild this optimizer.
        """
        config = super().get_config()
        for key in list(_KERAS_OPTIONS_REPLACED) + list(_KERAS_OPTIONS_IGNORED):
            config.pop(key, None)
        config.update(
            {
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "weight_decay_rate": self.weight_decay_rate,
                "exclude_from_weight_decay": list(self.weight_decay_exclusions),
                "bias_correction": self.bias_correction,
                "clip_norm": self.clip_norm,
                "gradient_accumulation_steps": self.accumulation_steps,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(_GoogleAdam):
    """Google's AdamWeightDecayOptimizer, the optimizer of BERT and ALBERT fine-tuning.

    Adam without bias correction (by default), with decoupled weight decay (0.01) added to the
    update of every variable but the LayerNorm and bias ones, and the gradient clipped to a
    global norm of 1.0 after it is summed over replicas. Unlike `keras.optimizers.AdamW`, it
    matches exclusions on the variable's full path, clips after the cross-replica sum, and
    with gradient accumulation advances `iterations` (so the learning-rate schedule) once per
    real update; docs/optimization.md lists every difference.

    Args:
        learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`. The learning
            rate; `create_optimizer` passes Google's warmup + polynomial-decay schedule.
            Default 0.001.
        beta_1: float in [0, 1). Decay rate of the first moment (momentum). Default 0.9.
        beta_2: float in [0, 1). Decay rate of the second moment. Default 0.999.
        epsilon: float > 0. Added to the square root of the second moment. Default 1e-6
            (Google's; Keras's Adam uses 1e-7).
        weight_decay_rate: float >= 0. Decoupled weight decay: `weight_decay_rate * w` is added
            to the update (so it is scaled by the learning rate). Default 0.01.
        exclude_from_weight_decay: list of str. Regexes searched (`re.search`) in each
            variable's full path; a variable that matches gets no weight decay. Default
            `("LayerNorm", "layer_norm", "bias")`, Google's list.
        bias_correction: bool. Divide the moments by `1 - beta**t` as Adam does. Default False
            (Google's optimizers have no bias correction).
        clip_norm: float > 0, or None. Clip the global norm of the gradient, summed over
            replicas (and averaged over accumulated micro-batches), to this value; None: no
            clipping. Default 1.0.
        gradient_accumulation_steps: int >= 1. Apply one update every this many calls, with
            the mean of their gradients; `iterations` (and so the learning-rate schedule)
            counts updates, not calls. Default 1.
        loss_scale_factor: float or None. Gradients are divided by it first (for a loss scaled
            by it, as in `keras.optimizers.Optimizer`). Default None.
        name: str or None. The optimizer's name.
        **kwargs: Other `keras.optimizers.Optimizer` arguments. Keras's `weight_decay`,
            `clipnorm`, `global_clipnorm`, `clipvalue` and `use_ema` are refused (this class
            does their work itself; use `weight_decay_rate` and `clip_norm`), and
            `ema_momentum` / `ema_overwrite_frequency` are ignored.

    Raises:
        ValueError: when an argument is out of range, `exclude_from_weight_decay` is a single
            string rather than a list, or a Keras option this class replaces is given; at
            `build`, when a variable has a constraint (not supported).

    Example:

    >>> import numpy as np, keras, albert_tf
    >>> optimizer = albert_tf.AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01)
    >>> kernel = keras.Variable([1.0, -2.0], name="kernel")
    >>> bias = keras.Variable([0.5], name="bias")  # matches "bias": no weight decay
    >>> optimizer.apply([np.array([0.5, 0.5], "float32"), np.array([1.0], "float32")],
    ...                 [kernel, bias])
    >>> kernel.numpy().round(3), bias.numpy().round(3)
    (array([ 0.683, -2.314], dtype=float32), array([0.184], dtype=float32))

    With gradient accumulation, `iterations` counts updates, not calls:

    >>> optimizer = albert_tf.AdamWeightDecay(learning_rate=0.1, gradient_accumulation_steps=2)
    >>> w = keras.Variable([1.0], name="kernel")
    >>> optimizer.apply([np.array([1.0], "float32")], [w])
    >>> w.numpy(), int(optimizer.iterations)  # gradient stored, no update yet
    (array([1.], dtype=float32), 0)
    >>> optimizer.apply([np.array([1.0], "float32")], [w])
    >>> w.numpy().round(3), int(optimizer.iterations)
    (array([0.683], dtype=float32), 1)
    """


@keras.saving.register_keras_serializable(package="albert_tf")
class LAMB(_GoogleAdam):
    """Google's LAMB optimizer, the optimizer of ALBERT pretraining.

    The `AdamWeightDecay` update u (Adam moments plus decoupled weight decay) scaled for each
    variable by the trust ratio `||w|| / ||u||` (1.0 when either norm is 0), so every layer
    moves by a step proportional to its own size; this is what lets ALBERT pretrain with large
    batches. As in Google's code, the weight decay is inside the trust ratio, and the variables
    excluded from weight decay (LayerNorm and bias) are by default also excluded from layer
    adaptation, so they skip both. Clipping and gradient accumulation are those of
    `AdamWeightDecay`.

    Args:
        learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`. The learning
            rate; `create_optimizer` passes Google's warmup + polynomial-decay schedule.
            Default 0.001.
        exclude_from_layer_adaptation: list of str, or None. Regexes searched in each
            variable's full path; a variable that matches gets no trust ratio. Default None:
            the `exclude_from_weight_decay` list.
        beta_1: float in [0, 1). Decay rate of the first moment (momentum). Default 0.9.
        beta_2: float in [0, 1). Decay rate of the second moment. Default 0.999.
        epsilon: float > 0. Added to the square root of the second moment. Default 1e-6
            (Google's; Keras's Adam uses 1e-7).
        weight_decay_rate: float >= 0. Decoupled weight decay: `weight_decay_rate * w` is added
            to the update (so it is scaled by the learning rate). Default 0.01.
        exclude_from_weight_decay: list of str. Regexes searched (`re.search`) in each
            variable's full path; a variable that matches gets no weight decay. Default
            `("LayerNorm", "layer_norm", "bias")`, Google's list.
        bias_correction: bool. Divide the moments by `1 - beta**t` as Adam does. Default False
            (Google's optimizers have no bias correction).
        clip_norm: float > 0, or None. Clip the global norm of the gradient, summed over
            replicas (and averaged over accumulated micro-batches), to this value; None: no
            clipping. Default 1.0.
        gradient_accumulation_steps: int >= 1. Apply one update every this many calls, with
            the mean of their gradients; `iterations` (and so the learning-rate schedule)
            counts updates, not calls. Default 1.
        loss_scale_factor: float or None. Gradients are divided by it first (for a loss scaled
            by it, as in `keras.optimizers.Optimizer`). Default None.
        name: str or None. The optimizer's name.
        **kwargs: Other `keras.optimizers.Optimizer` arguments. Keras's `weight_decay`,
            `clipnorm`, `global_clipnorm`, `clipvalue` and `use_ema` are refused (this class
            does their work itself; use `weight_decay_rate` and `clip_norm`), and
            `ema_momentum` / `ema_overwrite_frequency` are ignored.

    Raises:
        ValueError: when an argument is out of range, an exclusion list is a single string
            rather than a list, or a Keras option this class replaces is given; at `build`,
            when a variable has a constraint (not supported).

    Example:

    >>> import numpy as np, keras, albert_tf
    >>> optimizer = albert_tf.LAMB(learning_rate=0.1)
    >>> kernel = keras.Variable([3.0, 4.0], name="kernel")  # ||w|| = 5
    >>> bias = keras.Variable([0.5], name="bias")  # excluded: plain Adam step, no decay
    >>> optimizer.apply([np.array([1.0, 1.0], "float32"), np.array([1.0], "float32")],
    ...                 [kernel, bias])
    >>> kernel.numpy().round(3), bias.numpy().round(3)
    (array([2.647, 3.646], dtype=float32), array([0.184], dtype=float32))
    """

    _layer_adaptation = True

    def __init__(self, learning_rate=0.001, exclude_from_layer_adaptation=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        # Google: exclude_from_layer_adaptation defaults to exclude_from_weight_decay.
        if exclude_from_layer_adaptation is None:
            self.layer_adaptation_exclusions = list(self.weight_decay_exclusions)
        else:
            self.layer_adaptation_exclusions = check_patterns(
                "exclude_from_layer_adaptation", exclude_from_layer_adaptation
            )

    def _adaptation_exclusions(self):
        """Regexes that skip the trust ratio."""
        return self.layer_adaptation_exclusions

    def get_config(self):
        """The constructor arguments, for Keras serialization.

        Returns:
            dict: the arguments of `AdamWeightDecay.get_config` plus
            `exclude_from_layer_adaptation`.
        """
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self.layer_adaptation_exclusions)
        return config


_OPTIMIZERS = {"adamw": AdamWeightDecay, "lamb": LAMB}


def create_optimizer(
    init_lr,
    num_train_steps,
    num_warmup_steps,
    *,
    optimizer="adamw",
    poly_power=1.0,
    start_warmup_step=0,
    weight_decay_rate=0.01,
    clip_norm=1.0,
    bias_correction=False,
    gradient_accumulation_steps=1,
):
    """Builds the optimizer of Google's ALBERT scripts (`optimization.create_optimizer`).

    `AdamWeightDecay` ("adamw", for fine-tuning) or `LAMB` ("lamb", for pretraining) with beta
    0.9 / 0.999, epsilon 1e-6, Google's weight-decay exclusions (LayerNorm and bias) and
    global-norm clipping, driven by `WarmupPolynomialDecay`: linear warmup to `init_lr`, then
    polynomial decay to 0 at `num_train_steps`. The schedule counts real updates, so with
    gradient accumulation it advances once per accumulated step.

    Args:
        init_lr: float > 0. The peak learning rate, reached at the end of warmup.
        num_train_steps: int > 0. The number of updates over which the rate decays to 0.
        num_warmup_steps: int >= 0. The number of warmup updates (0: no warmup).
        optimizer: str. "adamw" (default) or "lamb" (any case).
        poly_power: float > 0. The power of the polynomial decay. Default 1.0 (linear).
        start_warmup_step: int >= 0. The update at which warmup starts; the rate is 0 before
            it. Default 0.
        weight_decay_rate: float >= 0. Decoupled weight decay. Default 0.01.
        clip_norm: float > 0, or None. The global gradient norm to clip to; None: no
            clipping. Default 1.0.
        bias_correction: bool. Adam's bias correction (Google's optimizers have none).
            Default False.
        gradient_accumulation_steps: int >= 1. Micro-batches per update. Default 1.

    Returns:
        `AdamWeightDecay` or `LAMB`: the optimizer, named "adamw" or "lamb".

    Raises:
        ValueError: when `optimizer` is not "adamw" or "lamb", or another argument is out of
            range.

    Example:

    >>> import albert_tf
    >>> optimizer = albert_tf.create_optimizer(5e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(optimizer).__name__, optimizer.name, optimizer.clip_norm
    ('AdamWeightDecay', 'adamw', 1.0)
    >>> float(optimizer.learning_rate)  # the start of warmup
    0.0
    >>> type(albert_tf.create_optimizer(0.00176, 125000, 3125, optimizer="lamb")).__name__
    'LAMB'
    """
    if not isinstance(optimizer, str) or optimizer.lower() not in _OPTIMIZERS:
        raise ValueError(f"`optimizer` must be one of {sorted(_OPTIMIZERS)}, got {optimizer!r}")
    schedule = WarmupPolynomialDecay(
        init_lr,
        num_train_steps,
        num_warmup_steps,
        poly_power=poly_power,
        start_warmup_step=start_warmup_step,
    )
    return _OPTIMIZERS[optimizer.lower()](
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        clip_norm=clip_norm,
        bias_correction=bias_correction,
        gradient_accumulation_steps=gradient_accumulation_steps,
        name=optimizer.lower(),
    )
