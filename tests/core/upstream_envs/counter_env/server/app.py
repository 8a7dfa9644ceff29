from openenv.core.env_server.http_server import create_app

from ..models import CounterAction, CounterObservation
from .counter_environment import CounterEnvironment

app = create_app(
    CounterEnvironment, CounterAction, CounterObservation, env_name="counter_env", max_concurrent_envs=8
)


def main() -> None:
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
