"""Google's ALBERT learning-rate schedule (linear warmup, then polynomial decay) as a Keras
LearningRateSchedule, reproducing the jump at the end of warmup that Google's code has."""

import keras
from keras import ops

from albert_tf.engine.arg_checks import check_number


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Google's ALBERT learning-rate schedule: linear warmup, then polynomial decay.

    The rate decays polynomially from `init_lr` to `end_lr` over `num_train_steps`; while
    `step - start_warmup_step < num_warmup_steps` it is replaced by the linear warmup
    `init_lr * (step - start_warmup_step) / num_warmup_steps`.

    As in Google's code, the decay is a function of the raw step (not of
    `step - start_warmup_step`), so at the end of warmup (step
    `start_warmup_step + num_warmup_steps`) the rate jumps from `init_lr * (w - 1) / w` to the
    decayed value, not to `init_lr`. After `num_train_steps` it stays at `end_lr`. One
    deliberate difference from Google's code: before `start_warmup_step` Google's formula gives
    a negative rate (gradient ascent); here the rate is 0.

    Args:
        init_lr: float > 0. The peak learning rate.
        num_train_steps: int > 0. The step at which the decay reaches `end_lr`.
        num_warmup_steps: int >= 0. The length of the warmup in steps; 0: no warmup.
            Default 0.
        poly_power: float > 0. The power of the polynomial decay; 1.0 is linear. Default 1.0.
        start_warmup_step: int >= 0. The step at which warmup starts. Default 0.
        end_lr: float >= 0. The rate at and after `num_train_steps`. Default 0.0.
        name: str or None. The name scope of the computation. Default None
            ("WarmupPolynomialDecay").

    Raises:
        ValueError: when an argument is out of its range or of the wrong type.

    Example:

    >>> import albert_tf
    >>> schedule = albert_tf.WarmupPolynomialDecay(1.0, num_train_steps=10, num_warmup_steps=4)
    >>> [round(float(schedule(step)), 3) for step in range(12)]
    [0.0, 0.25, 0.5, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0]

    The rate goes from 0.75 at step 3 to 0.6 at step 4 (the decayed value), never reaching
    `init_lr`, exactly as Google's schedule does.
    """

    def __init__(
        self,
        init_lr,
        num_train_steps,
        num_warmup_steps=0,
        poly_power=1.0,
        start_warmup_step=0,
        end_lr=0.0,
        name=None,
    ):
        self.init_lr = float(check_number("init_lr", init_lr, low=0, low_open=True))
        self.num_train_steps = int(
            check_number("num_train_steps", num_train_steps, low=0, low_open=True, integer=True)
        )
        self.num_warmup_steps = int(
            check_number("num_warmup_steps", num_warmup_steps, low=0, integer=True)
        )
        self.poly_power = float(check_number("poly_power", poly_power, low=0, low_open=True))
        self.start_warmup_step = int(
            check_number("start_warmup_step", start_warmup_step, low=0, integer=True)
        )
        self.end_lr = float(check_number("end_lr", end_lr, low=0))
        self.name = name

    def _decayed(self, step):
        """TF1's polynomial_decay with cycle=False, evaluated at float `step`."""
        total = ops.convert_to_tensor(float(self.num_train_steps), "float32")
        fraction = ops.minimum(step, total) / total
        return (self.init_lr - self.end_lr) * ops.power(
            1.0 - fraction, self.poly_power
        ) + self.end_lr

    def __call__(self, step):
        """The learning rate of the update taken after `step` updates have been applied.

        Args:
            step: int or scalar tensor. The number of updates applied so far (the optimizer's
                `iterations`).

        Returns:
            float32 scalar tensor: the learning rate.
        """
        with keras.name_scope(self.name or "WarmupPolynomialDecay"):
            step = ops.cast(step, "float32")
            lr = self._decayed(step)
            if self.num_warmup_steps > 0:
                warm_step = step - float(self.start_warmup_step)
                warmup = ops.convert_to_tensor(float(self.num_warmup_steps), "float32")
                warm_lr = self.init_lr * (ops.maximum(warm_step, 0.0) / warmup)
                lr = ops.where(warm_step < warmup, warm_lr, lr)
            return lr

    def get_config(self):
        """The constructor arguments, for Keras serialization.

        Returns:
            dict: the arguments that rebuild this schedule.
        """
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "poly_power": self.poly_power,
            "start_warmup_step": self.start_warmup_step,
            "end_lr": self.end_lr,
            "name": self.name,
        }
