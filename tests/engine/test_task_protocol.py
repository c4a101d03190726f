"""The task protocol (albert_tf/engine/task.py): every task is a FineTuningTask, and the engine
refuses anything else before it writes a thing."""

import pytest

from albert_tf.engine.finetuning import run_finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.engine.task_protocol import FineTuningTask, check_task
from albert_tf.tasks.glue.task import GlueTask
from albert_tf.tasks.race.task import RaceTask
from albert_tf.tasks.squad.task import SquadSettings, SquadTask
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.tokenization import FullTokenizer


@pytest.fixture(scope="module")
def encoder(fixtures_dir):
    return TextEncoder.from_files(str(fixtures_dir / "spm.model"), None, True)


def test_every_task_is_a_fine_tuning_task(encoder, fixtures_dir, data_dir, tmp_path):
    spm = str(fixtures_dir / "spm.model")
    tasks = [
        GlueTask("mrpc", str(data_dir), encoder, 32, str(tmp_path)),
        RaceTask(str(data_dir / "RACE"), encoder, 64, str(tmp_path)),
        SquadTask(
            SquadSettings(max_seq_length=64), FullTokenizer(spm_model_file=spm), spm, str(tmp_path)
        ),
    ]
    for task in tasks:
        assert isinstance(task, FineTuningTask), type(task).__name__
        check_task(task)
        assert task.spec and isinstance(task.best_metric, str)


def test_the_engine_refuses_a_non_task_before_writing(tmp_path):
    class NotATask:
        spec = {}

        def records(self, split):
            return None, 0

    out = tmp_path / "out"
    with pytest.raises(
        TypeError, match=r"lacks \['best_metric', 'evaluate', 'write_predictions'\]"
    ):
        run_finetuning(
            NotATask(), lambda: None, FineTuningOptions(output_dir=str(out)), do_train=True
        )
    assert not out.exists()
