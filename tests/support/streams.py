"""Reading a resumable training stream's batches as a run would, for the resume tests."""
from model.data import input_position


def as_lists(batch) -> dict:
    return {key: value.tolist() for key, value in batch.items()}


def training_batches(stream, batch_size: int, model_dir, start_step: int, count: int,
                     record_every: int) -> list[dict]:
    """`count` batches from step `start_step` + 1 on, recording the input position every
    `record_every` steps in `model_dir` (reading the records there to resume)."""
    dataset = input_position.training_batches(stream, batch_size, start_step, str(model_dir),
                                              lambda step: step % record_every == 0)
    return [as_lists(batch) for batch in dataset.take(count).as_numpy_iterator()]
