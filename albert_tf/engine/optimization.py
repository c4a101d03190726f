"""Google's ALBERT optimization recipe as Keras 3 objects: the warmup + polynomial-decay learning
rate (`schedule`), AdamWeightDecay and LAMB with Google's exact update rules (`optimizers`), and
`create_optimizer`, which puts them together as Google's `optimization.create_optimizer` does.
The schedule and optimizers are re-exported here, the module users import them from.
"""
from albert_tf.engine.optimizers import (
    GOOGLE_EXCLUSIONS, LAMB, AdamWeightDecay, variable_path)
from albert_tf.engine.schedule import WarmupPolynomialDecay

__all__ = ["create_optimizer", "WarmupPolynomialDecay", "AdamWeightDecay", "LAMB",
           "GOOGLE_EXCLUSIONS", "variable_path"]

_OPTIMIZERS = {"adamw": AdamWeightDecay, "lamb": LAMB}


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                     poly_power=1.0, start_warmup_step=0, weight_decay_rate=0.01, clip_norm=1.0,
                     bias_correction=False, gradient_accumulation_steps=1):
    """Google's `optimization.create_optimizer` as a Keras optimizer: the warmup + polynomial
    decay schedule (counted in real updates) driving AdamWeightDecay ("adamw") or LAMB ("lamb")
    with beta 0.9/0.999, epsilon 1e-6, Google's exclusions and global-norm clipping."""
    if not isinstance(optimizer, str) or optimizer.lower() not in _OPTIMIZERS:
        raise ValueError(f"`optimizer` must be one of {sorted(_OPTIMIZERS)}, got {optimizer!r}")
    schedule = WarmupPolynomialDecay(init_lr, num_train_steps, num_warmup_steps,
                                     poly_power=poly_power, start_warmup_step=start_warmup_step)
    return _OPTIMIZERS[optimizer.lower()](
        learning_rate=schedule, weight_decay_rate=weight_decay_rate, clip_norm=clip_norm,
        bias_correction=bias_correction, gradient_accumulation_steps=gradient_accumulation_steps,
        name=optimizer.lower())
