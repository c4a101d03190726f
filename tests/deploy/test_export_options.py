"""The export options record (albert_tf/deploy/exports.py): what a Python caller passes to write
every format into one version folder, checked when built, its errors in argument names."""

import pytest

from albert_tf.core.errors import InputError
from albert_tf.deploy.exports import ExportOptions


def test_formats_are_parsed_once_each_in_order():
    options = ExportOptions("exports", formats=["ONNX", "saved_model", "onnx"], quantize="none")
    assert options.formats == ("onnx", "saved_model")
    assert ExportOptions("exports").formats == ("saved_model",)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"formats": "saved_model,pytorch"}, "formats: pytorch is not a format"),
        ({"formats": ""}, "formats: an empty list is not a format"),
        ({"formats": "litert", "quantize": "int4"}, "quantize='int4': use one of none, float16"),
        ({"quantize": "float16"}, "quantize='float16' quantizes the LiteRT file: add litert"),
    ],
)
def test_bad_options_name_the_argument_not_a_flag(kwargs, message):
    with pytest.raises(InputError) as error:
        ExportOptions("exports", **kwargs)
    assert str(error.value).startswith(message) and "--" not in str(error.value)


def test_the_quantization_report_drops_only_the_expected_retracing_warning():
    """The report's predict runs at full length after the eval's bucketed lengths: TensorFlow's
    frequent-retracing warning there is expected; any other tensorflow warning still shows."""
    import logging

    from albert_tf.deploy.exports import expected_retracing

    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("tensorflow")
    keep = Keep()
    logger.addHandler(keep)
    try:
        with expected_retracing():
            logger.warning("5 out of the last 16 calls to f triggered tf.function retracing.")
            logger.warning("something else")
        logger.warning("after: triggered tf.function retracing")
    finally:
        logger.removeHandler(keep)
    assert seen == ["something else", "after: triggered tf.function retracing"]
