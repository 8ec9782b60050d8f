"""GPT-1 (model/families/gpt1.py) and the discriminative views of tasks it fine-tunes on
(model/tasks/discriminative.py)."""
import pytest

from model import tasks
from model.tasks import discriminative


# --- discriminative views ------------------------------------------------------------------

def test_every_view_of_a_registry_task_converts_its_release_files(shared_data):
    files = {"glue_rte": ("glue_rte/train.tsv", "train"), "glue_mrpc": ("glue_mrpc/dev.tsv", "validation"),
             "glue_stsb": ("glue_stsb/train.tsv", "train"), "glue_qqp": ("glue_qqp/train.tsv", "train"),
             "super_glue_boolq": ("superglue_boolq/boolq.jsonl", "train"),
             "super_glue_cb": ("superglue_cb/train.jsonl", "train"),
             "super_glue_copa": ("superglue_copa/train.jsonl", "train")}
    for name, (path, split) in files.items():
        view = discriminative.view(name)
        raws = list(tasks.get(name).local_examples(str(shared_data / "tasks" / path)))
        examples = list(discriminative.examples(name, split, [str(shared_data / "tasks" / path)]))
        assert len(examples) == len(raws) > 0
        for raw, example in zip(raws, examples):
            assert example.label == raw["label"]
            if view.kind == discriminative.MULTIPLE_CHOICE:
                assert len(example.choices) == view.num_classes and len(example.segments) == 1
            else:
                assert example.choices == () and all(s in raw.values() for s in example.segments)
    stsb = next(discriminative.examples("glue_stsb", "train",
                                        [str(shared_data / "tasks/glue_stsb/train.tsv")]))
    assert isinstance(stsb.label, float) and discriminative.view("glue_stsb").kind == "regression"
    assert {n for n, v in discriminative.VIEWS.items() if v.symmetric} == {"glue_mrpc", "glue_qqp",
                                                                         "glue_stsb"}


def test_views_name_fields_in_reading_order():
    mnli = discriminative.view("glue_mnli").convert(
        {"premise": "P.", "hypothesis": "H.", "label": 2, "idx": 0})
    assert mnli == discriminative.Example(("P.", "H."), 2)
    copa = discriminative.view("super_glue_copa").convert(
        {"premise": "The man fell.", "question": "cause", "choice1": "He slipped.",
         "choice2": "He sang.", "label": 0, "idx": 3})
    assert copa == discriminative.Example(("The man fell. cause",), 0, ("He slipped.", "He sang."))


def test_story_cloze_and_race_read_their_release_files(shared_data):
    stories = list(discriminative.examples(
        "story_cloze", "validation", [str(shared_data / "tasks/story_cloze/cloze_test_val__spring2016.csv")]))
    assert stories[0].segments[0].startswith("Rick grew up in a troubled household. He never")
    assert stories[0].choices == ("He is happy now.", "He joined a gang.") and stories[0].label == 0
    race = list(discriminative.examples("race", "dev", [str(shared_data / "tasks/race/RACE/dev")]))
    assert race and all(len(e.choices) == 4 and 0 <= e.label < 4 for e in race)
    with pytest.raises(ValueError, match="release files"):
        discriminative.examples("race", "dev")


def test_a_task_without_view_is_a_clear_error():
    with pytest.raises(KeyError, match="no discriminative view.*glue_rte"):
        discriminative.view("squad_v1")
