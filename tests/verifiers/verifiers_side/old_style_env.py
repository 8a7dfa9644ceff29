"""A module in verifiers < 0.4's shape (``load_environment()``, no ``vf.Taskset``): bad input."""


def load_environment(**kwargs):
    raise AssertionError("never called: openenv.verifiers serves vf.Taskset modules only")
