"""A run's family config (BertConfig, GPT1Config, SegaBERT's parts) is built once from gin, at
the command line (runs.configured_run), and handed down: no family reads gin when it is
constructed, a task run derives the config its head needs instead of rebinding gin, and the
run's checkpoints record the config as data (runs.RUN_SETTINGS_NAME), which later commands on
the run read over its operative config."""
import dataclasses
import json

import gin
import pytest

from model import families
from model.families.bert.config import BertConfig, bert_part
from model.families.gpt1.config import GPT1Config
from model.families.segabert.model import SegaBert, SegaBertConfig
from model.trainer import runs
from model.trainer.family import config_parts, default_family_config, replaced_config
from model.trainer.model_config import ModelConfig

CONFIGURED = [family for family in families.REGISTRY.families if family.config_class is not None]
# A gin binding per family whose value differs from the family's default config.
BINDINGS = {"bert": ("BertConfig.layer_norm_epsilon = 0.25", "layer_norm_epsilon", 0.25),
            "gpt1": ("GPT1Config.layer_norm_epsilon = 0.25", "layer_norm_epsilon", 0.25),
            "segabert": ("StructureLimits.paragraphs_per_document = 7\nBertConfig.head = 'mlm'",
                         "paragraphs_per_document", 7)}


def field_value(config, field):
    return next(getattr(part, field) for part in config_parts(config)
                if field in {f.name for f in dataclasses.fields(part)})


def test_every_family_with_a_config_is_covered():
    assert {family.name for family in CONFIGURED} == set(BINDINGS)


@pytest.mark.parametrize("family", CONFIGURED, ids=lambda family: family.name)
def test_no_family_reads_gin_when_constructed(family, clean_gin):
    """With gin binding a field, the family built without a config has the default (gin not
    read), the config the command line builds has the binding, and a family built with it too."""
    binding, field, value = BINDINGS[family.name]
    gin.parse_config(binding)
    model_config = ModelConfig(architecture=family.architectures[0])
    default = default_family_config(family.config_class)
    assert field_value(family(model_config, 64).family_config, field) == field_value(default, field) != value
    configured = family.configured_family_config()
    assert field_value(configured, field) == value
    assert field_value(family(model_config, 64, family_config=configured).family_config, field) == value


def test_configured_run_builds_the_family_config_once_from_gin(tmp_path, clean_gin):
    runs.parse_gin(["bert/tiny.gin"], ["BertConfig.num_classes = 5"])
    run = families.configured_run(str(tmp_path))
    assert isinstance(run.family_config, BertConfig) and run.family_config.num_classes == 5
    gin.clear_config()  # the run keeps what it was built with
    assert run.estimator(2, vocab_size=64).params is not None
    assert run.family_config.num_classes == 5


def test_a_task_run_derives_its_head_instead_of_rebinding_gin(tmp_path, clean_gin):
    """with_family_config gives a new run; the old run and gin keep their values; SegaBERT's
    config, made of parts, changes in the part that has the fields."""
    runs.parse_gin(["bert/tiny.gin"], [])
    run = families.configured_run(str(tmp_path))
    tuned = run.with_family_config(head="regression", num_classes=1)
    assert (tuned.family_config.head, tuned.family_config.num_classes) == ("regression", 1)
    assert run.family_config.head == "pretraining"
    assert runs.gin_value("BertConfig.head") is None
    sega = replaced_config(SegaBertConfig(), {"head": "span"})
    assert bert_part(sega).head == "span" and sega.limits == SegaBertConfig().limits
    with pytest.raises(ValueError, match="no part of SegaBertConfig"):
        replaced_config(SegaBertConfig(), {"head": "span", "paragraphs_per_document": 3})
    with pytest.raises(ValueError, match="unknown BERT head"):
        run.with_family_config(head="nonsense")


def test_the_family_config_is_recorded_as_data_and_read_over_the_operative_config(tmp_path, clean_gin):
    """recorded_settings holds every field of every part (SegaBERT: BERT's, its structure
    limits, its optimizer's) and the derived settings; recorded_bindings reads them over the
    operative config's, and a config built from them equals the recorded one."""
    run = runs.Run(SegaBert, ModelConfig(architecture="segabert"), None, None, None, None,
                   str(tmp_path), family_config=replaced_config(SegaBertConfig(), {"head": "span"}),
                   derived={"DataConfig.targets_length": 9})
    settings = runs.recorded_settings(run)
    assert set(settings) == {"BertConfig", "StructureLimits", "FusedAdamConfig", "DataConfig"}
    assert settings["BertConfig"] == dataclasses.asdict(bert_part(run.family_config))
    assert settings["DataConfig"] == {"targets_length": 9}
    runs.record_settings(run)
    (tmp_path / runs.OPERATIVE_CONFIG_NAME).write_text(
        "BertConfig.head = 'mlm'\nDataConfig.targets_length = 114\n")
    recorded = runs.recorded_bindings(str(tmp_path))
    assert (recorded["BertConfig.head"], recorded["DataConfig.targets_length"]) == ("span", 9)
    assert json.loads((tmp_path / runs.RUN_SETTINGS_NAME).read_text()) == settings
    runs.apply_recorded_bindings(str(tmp_path))
    assert SegaBert.configured_family_config() == run.family_config


def test_gpt1_fine_tuning_derives_its_head_from_the_task_view(tmp_path, clean_gin):
    from model.families.gpt1 import finetune
    from model.tasks import discriminative
    runs.parse_gin(["gpt1/tiny.gin"], [])
    run = finetune.with_head(families.configured_run(str(tmp_path)),
                             discriminative.view("super_glue_copa"))
    assert run.family_config == dataclasses.replace(
        GPT1Config(), head="multiple_choice", num_classes=2, sequences_per_example=2)
    assert runs.gin_value("GPT1Config.head") is None


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"BertConfig": 3}', "\udcff"])
def test_a_damaged_settings_file_is_a_clear_error(tmp_path, text):
    (tmp_path / runs.OPERATIVE_CONFIG_NAME).write_text("BertConfig.head = 'span'\n")
    (tmp_path / runs.RUN_SETTINGS_NAME).write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match="is not a run's settings"):
        runs.recorded_bindings(str(tmp_path))
    (tmp_path / runs.RUN_SETTINGS_NAME).unlink()  # as the message says: the operative config alone
    assert runs.recorded_bindings(str(tmp_path)) == {"BertConfig.head": "span"}


def test_the_span_head_reads_squad_config_as_gin_binds_it(tmp_path, shared_data, clean_gin):
    """BERT's plan for SQuAD builds its task with SquadConfig as the command line's gin binds it
    (a default argument evaluated at import would keep the defaults): a question cut to 2
    pieces makes every window start `[CLS] q q [SEP]`."""
    from model.families.bert import finetune
    from model.tasks.selection import TaskRequest
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "what", "which", "is", "of"]
    (tmp_path / "vocab.txt").write_text("\n".join(pieces) + "\n")
    squad = shared_data / "tasks" / "squad" / "squad_v1_sample.json"
    runs.parse_gin(["bert/tiny.gin"], [f"DataConfig.vocabulary = '{tmp_path / 'vocab.txt'}'",
                                       "BertConfig.head = 'span'", "DataConfig.inputs_length = 32",
                                       "SquadConfig.max_query_length = 2"])
    built = []

    class RecordedTask(finetune.HeadTask):
        def __init__(self, *fields):
            super().__init__(*fields)
            built.append(self)

    request = TaskRequest(task="squad", task_files={("squad", "validation"): (str(squad),)})
    plan = finetune.task_plan(families.configured_run(str(tmp_path / "run")), request,
                              training=False, head_task=RecordedTask)
    (task,) = built
    assert task.squad.max_query_length == 2 and plan.eval_sets
    windows = [window for question in task.questions("validation") for window in question.windows]
    assert windows and all(window.tokens[3] == task.vocabulary.special.sep for window in windows)
