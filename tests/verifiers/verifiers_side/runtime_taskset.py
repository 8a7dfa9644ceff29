"""A verifiers 0.4 taskset whose reward runs in the task's runtime (a container, a
sandbox): bad input for openenv.verifiers, which scores with no runtime."""

import verifiers.v1 as vf


class RuntimeTask(vf.Task[vf.TaskData]):
    @vf.reward
    async def tests_pass(self, trace, runtime) -> float:
        raise AssertionError("never called: the task is refused before it is served")


class RuntimeTaskset(vf.Taskset[RuntimeTask]):
    def load(self):
        yield RuntimeTask(vf.TaskData(id="t", prompt="Fix the bug."), self.config.task)


__all__ = ["RuntimeTaskset"]
