"""A verifiers 0.4 taskset made for the tests (runs in the verifiers venv): questions from
in-memory ``datasets.Dataset`` splits (its config's ``split`` picks one), each task scored
by its own rubric: weighted ``@vf.reward`` methods (one with a negative weight), a metric."""

import datasets
import verifiers.v1 as vf


class QAData(vf.TaskData):
    answer: str


class QATask(vf.Task[QAData]):
    @vf.reward(weight=1.0)
    async def exact(self, trace) -> float:
        return float(trace.last_reply == self.data.answer)

    @vf.reward(weight=0.5)
    async def mentions(self, trace) -> float:
        return float(self.data.answer in trace.last_reply)

    @vf.reward(weight=-0.25)
    async def verbose(self, trace) -> float:
        return float(len(trace.last_reply) > 10)

    @vf.metric
    async def turns(self, trace) -> float:
        return float(trace.num_turns)


SPLITS = {
    "train": datasets.Dataset.from_list([
        {"id": "add", "question": "What is 2 + 3?", "answer": "5"},
        {"id": "cap", "question": "What is the capital of France?", "answer": "Paris"},
        {"id": "sq", "question": "What is 7 squared?", "answer": "49"},
    ]),
    "test": datasets.Dataset.from_list([{"id": "cube", "question": "What is 2 cubed?", "answer": "8"}]),
}


class QAConfig(vf.TasksetConfig):
    split: str = "train"


class QATaskset(vf.Taskset[QATask, QAConfig]):
    def load(self):
        for row in SPLITS[self.config.split]:
            yield QATask(
                QAData(id=row["id"], prompt=row["question"], answer=row["answer"],
                       system_prompt="Reply with the answer only."),
                self.config.task,
            )


__all__ = ["QATaskset"]
