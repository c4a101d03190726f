"""Google's ALBERT optimizers as Keras 3 objects: AdamWeightDecay and LAMB with exact update rules,
global-norm clipping of the cross-replica gradient and gradient accumulation that counts real
updates, and `create_optimizer`, which pairs one of them with the warmup + polynomial-decay
learning rate (`learning_rate.WarmupPolynomialDecay`) as Google's `create_optimizer` does.

Why not `keras.optimizers.Lamb` / `AdamW`: see docs/optimization.md (in short: they always apply
bias correction, put weight decay outside LAMB's trust ratio, match exclusions on the short
variable name, clip per replica before the all-reduce, and their gradient accumulation advances
the learning-rate schedule once per micro-batch).
"""

import functools
import math
import numbers
import re

import keras
import tensorflow as tf

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
    """Fail loudly on Keras options this module replaces, so their semantics never mix with ours."""
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
        return tf.ones_like(t)
    return -tf.math.expm1(t * tf.cast(math.log(beta), t.dtype))


def _sum_across_replicas(grads):
    """All-reduce (sum) gradients over replicas; Keras already scaled each replica's loss by
    1/num_replicas, so the sum is the global-batch mean gradient. Identity on one replica."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None:
        raise ValueError(
            "apply() must be called in a replica context (inside strategy.run or "
            "a Keras train step), not in cross-replica context"
        )
    if ctx.num_replicas_in_sync > 1:
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    return list(grads)


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
        # Keras's own clipping, weight decay and accumulation stay off: we do them ourselves.
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
        """Create the moments (and accumulators) and decide each variable's exclusions once,
        from its path, since per-device copies inside an update have no Keras path."""
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
                dtype="int64",
                aggregation="only_first_replica",
                name="micro_step",
            )

    def _adaptation_exclusions(self):
        """Regexes that skip the LAMB trust ratio (none for AdamW)."""
        return []

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Not used here: pass `exclude_from_weight_decay=[regex, ...]` to the constructor."""
        raise NotImplementedError(
            "set exclusions with the constructor argument "
            "`exclude_from_weight_decay=[regex, ...]` instead"
        )

    # -- one optimizer call (a micro-step) -----------------------------------------------

    def apply(self, grads, trainable_variables=None):
        """Keras entry point (apply_gradients calls it). Sums gradients over replicas, adds them
        to the accumulators, and every `accumulation_steps` calls clips the mean and updates."""
        grads, variables = self._pair_gradients(grads, trainable_variables)
        if not grads:
            return
        with tf.name_scope(self.name):
            if self.loss_scale_factor is not None:
                grads = [g / self.loss_scale_factor for g in grads]
            grads = _sum_across_replicas(grads)
            n = self.accumulation_steps
            if n == 1:
                sums, is_update, mean = None, None, grads
            else:
                micro = tf.convert_to_tensor(self._micro_step)
                is_update = micro + 1 >= n
                sums = [
                    self._accumulators[self._get_variable_index(v)] + g
                    for g, v in zip(grads, variables)
                ]
                mean = [s / float(n) for s in sums]
            if self.clip_norm is not None:
                mean, _ = tf.clip_by_global_norm(mean, self.clip_norm)
            lr = tf.convert_to_tensor(self.learning_rate)
            args = (mean, lr) if n == 1 else (mean, lr, sums, is_update)
            tf.distribute.get_replica_context().merge_call(
                functools.partial(self._cross_replica_apply, variables=variables), args=args
            )
            if n == 1:
                self._iterations.assign_add(1)
            else:
                self._micro_step.assign(tf.where(is_update, tf.zeros_like(micro), micro + 1))
                self._iterations.assign_add(tf.cast(is_update, self._iterations.dtype))

    def _pair_gradients(self, grads, trainable_variables):
        """Build if needed, then drop variables whose gradient is None (Google skips them) and
        densify IndexedSlices (Google's dense moment update touches every row)."""
        if trainable_variables is None:
            if not self.built:
                raise ValueError("pass trainable_variables on the first call, or build() first")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"got {len(grads)} gradients for {len(trainable_variables)} variables")
        if not self.built:
            with tf.name_scope(self.name):
                self.build(trainable_variables)
        self._check_variables_are_known(trainable_variables)
        pairs = [
            (tf.convert_to_tensor(g), v)
            for g, v in zip(grads, trainable_variables)
            if g is not None
        ]
        return [g for g, _ in pairs], [v for _, v in pairs]

    def _cross_replica_apply(self, strategy, mean, lr, sums=None, is_update=None, *, variables):
        """Run the per-variable update on every device holding a copy (merge_call target)."""
        for i, variable in enumerate(variables):
            args = (mean[i], lr) if sums is None else (mean[i], lr, sums[i], is_update)
            target = variable.value if isinstance(variable, keras.Variable) else variable
            strategy.extended.update(target, self._update_on_device, args=args, group=False)

    def _update_on_device(self, variable, grad, lr, grad_sum=None, is_update=None):
        """On one device: update now, or (accumulating) store the running sum; the branch is a
        tf.cond here, inside the update context, where a cond is allowed under tf.distribute."""
        if grad_sum is None:
            self.update_step(grad, variable, lr)
            return
        accumulator = self._accumulators[self._get_variable_index(variable)]

        def update():
            self.update_step(grad, variable, lr)
            self.assign(accumulator, tf.zeros_like(grad_sum))

        def accumulate():
            self.assign(accumulator, grad_sum)

        tf.cond(is_update, update, accumulate)

    # -- the update rule ----------------------------------------------------------------

    def update_step(self, gradient, variable, learning_rate):
        """Google's rule: m, v moments; u = m/(sqrt(v)+eps) + wd*w; w -= r*lr*u (r: trust ratio,
        1 for AdamW). With bias_correction, m and v are divided by (1 - beta^t) first."""
        i = self._get_variable_index(variable)
        dtype = variable.dtype
        g = tf.cast(gradient, dtype)
        lr = tf.cast(learning_rate, dtype)
        m, v = self._momentums[i], self._velocities[i]
        next_m = self.beta_1 * tf.convert_to_tensor(m) + (1.0 - self.beta_1) * g
        next_v = self.beta_2 * tf.convert_to_tensor(v) + (1.0 - self.beta_2) * tf.square(g)
        self.assign(m, next_m)
        self.assign(v, next_v)
        if self.bias_correction:
            t = tf.cast(self.iterations + 1, dtype)
            next_m = next_m / _one_minus_power(self.beta_1, t)
            next_v = next_v / _one_minus_power(self.beta_2, t)
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self._use_decay[i]:
            update += self.weight_decay_rate * tf.convert_to_tensor(variable)
        if self._use_adaptation[i]:
            update = self._trust_ratio(variable, update) * update
        self.assign_sub(variable, lr * update)

    def _trust_ratio(self, variable, update):
        """LAMB's ||w|| / ||u||, or 1.0 when either norm is 0."""
        w_norm = tf.norm(tf.convert_to_tensor(variable))
        u_norm = tf.norm(update)
        safe = tf.logical_and(w_norm > 0, u_norm > 0)
        return tf.where(safe, w_norm / tf.where(safe, u_norm, 1.0), 1.0)

    # -- serialization --------------------------------------------------------------------

    def get_config(self):
        """Our constructor arguments (Keras's clipping/decay/EMA options are not ours to save)."""
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
    """Google's AdamWeightDecayOptimizer (BERT/ALBERT fine-tuning): Adam without bias correction
    by default, weight decay 0.01 added to the update except for LayerNorm and bias variables."""


@keras.saving.register_keras_serializable(package="albert_tf")
class LAMB(_GoogleAdam):
    """Google's LAMB (ALBERT pretraining): the AdamWeightDecay update scaled per variable by the
    trust ratio ||w||/||u||; excluded variables skip both weight decay and the trust ratio."""

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
        """Adds the layer-adaptation exclusions to the shared config."""
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
    """Google's `optimization.create_optimizer` as a Keras optimizer: the warmup + polynomial
    decay schedule (counted in real updates) driving AdamWeightDecay ("adamw") or LAMB ("lamb")
    with beta 0.9/0.999, epsilon 1e-6, Google's exclusions and global-norm clipping."""
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
