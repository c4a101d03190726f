"""The drivers' export flags (albert_tf/drivers/exports.py): --export_dir, --export_format and
--quantize checked before any work, each error naming the flag; the library's ExportOptions
behind them names its arguments instead (tests/deploy/test_export_options.py)."""

from absl import flags
import pytest

from albert_tf.core.errors import InputError
from albert_tf.drivers.exports import check_export_flags, exporter_from_flags


def _flags(argv):
    fv = flags.FlagValues()
    for name, default in (
        ("export_dir", None),
        ("export_format", "saved_model"),
        ("quantize", "none"),
        ("spm_model_file", None),
        ("vocab_file", None),
    ):
        flags.DEFINE_string(name, default, name, flag_values=fv)
    flags.DEFINE_integer("eval_batch_size", 8, "batch", flag_values=fv)
    fv(["prog", *argv])
    return fv


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--export_format=saved_model,pytorch"],
            "--export_format: pytorch is not a format; use a comma list of saved_model, litert",
        ),
        (["--quantize=int4"], "--quantize: 'int4' is not one of none, float16, dynamic_int8, int8"),
        (
            ["--quantize=float16", "--export_dir=x"],
            "--quantize=float16 quantizes the LiteRT file: add litert to --export_format",
        ),
        (["--export_format=litert"], "--export_format says what --export_dir gets"),
        (["--export_dir=EXPORTS"], "--export_dir needs --spm_model_file or --vocab_file"),
    ],
)
def test_bad_export_flags_are_one_error_naming_the_flag(argv, message, tmp_path):
    argv = [a.replace("EXPORTS", str(tmp_path / "exports")) for a in argv]
    with pytest.raises(InputError) as error:
        check_export_flags(_flags(argv))
    assert str(error.value).startswith(message)


def test_good_export_flags_pass_and_no_export_dir_means_no_export(tmp_path):
    fv = _flags(
        [
            f"--export_dir={tmp_path / 'exports'}",
            "--spm_model_file=spm.model",
            "--export_format=saved_model,litert",
            "--quantize=float16",
        ]
    )
    assert check_export_flags(fv) is None
    assert exporter_from_flags(None, None, _flags([])) is None
