"""Multi-GPU arguments: what the driver hands to mjlab's own launcher, checked on CPU.

mjlab parses ``--gpu-ids`` with tyro and starts one process per GPU through torchrunx, seeding
rank r with ``agent.seed + r``; these tests check the driver builds exactly that, and that
mjlab's own parser accepts it (nothing is launched).
"""

import mjlab
import pytest
import tyro
from mjlab.scripts.train import TrainConfig

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck.cli._common import parse
from mjlab_microduck.cli.train import main
from mjlab_microduck.jobs.train import TrainRequest
from mjlab_microduck.tasks.velocity import TASK_ID


def _parse_with_mjlab(args: list[str]) -> TrainConfig:
    task, *rest = args
    return tyro.cli(
        TrainConfig,
        args=rest,
        default=TrainConfig.from_task(task),
        config=mjlab.TYRO_FLAGS,
    )


@pytest.mark.parametrize(
    ("request_kwargs", "expected_gpus"),
    [
        ({"device": "cpu"}, None),
        ({"device": "cuda:0"}, [0]),
        ({"device": "cuda:1"}, [1]),
        ({"device": "cuda:0", "gpu_ids": (0, 1)}, [0, 1]),
        ({"device": "cuda:0", "gpu_ids": (2, 3, 5)}, [2, 3, 5]),
    ],
)
def test_gpu_ids_reach_mjlab_as_it_parses_them(request_kwargs, expected_gpus):
    request = TrainRequest(name="t", num_envs=4096, iterations=300, **request_kwargs)
    parsed = _parse_with_mjlab(request.mjlab_args())
    assert parsed.gpu_ids == expected_gpus
    assert parsed.env.scene.num_envs == 4096  # per GPU: mjlab gives every rank this many
    assert parsed.agent.max_iterations == 300
    assert parsed.agent.seed == 42 and parsed.env.seed == 42


def test_each_rank_gets_mjlabs_seed_and_device():
    request = TrainRequest(name="t", seed=7, device="cuda:0", gpu_ids=(0, 1))
    assert request.ranks() == [
        {"rank": 0, "device": "cuda:0", "seed": 7},
        {"rank": 1, "device": "cuda:1", "seed": 8},
    ]
    assert TrainRequest(name="t").ranks() == [{"rank": 0, "device": "cpu", "seed": 42}]


def test_cli_accepts_a_gpu_list_and_rejects_garbage(capsys):
    parsed = parse(TrainRequest, ["--name", "t", "--gpu-ids", "0", "1"], "microduck train")
    assert parsed.gpu_ids == (0, 1)
    assert main(["--gpu-ids", "zero,one", "--task", TASK_ID]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--gpu-ids" in err[0]


def test_bad_device_string_is_refused():
    with pytest.raises(ValueError, match="cpu, cuda or cuda:N"):
        TrainRequest(name="t", device="rocm0").mjlab_args()


def test_a_default_request_trains_the_books_task():
    assert TrainRequest(name="t").task == TASK_ID


@pytest.mark.parametrize(("var", "value"), [("MICRODUCK_MANAGER_GRAPHS", "yes"),
                                          ("MICRODUCK_GRAPH_SCOPE", "everything")])
def test_a_graphs_variable_the_trainer_would_ignore_is_refused_in_one_line(
    capsys, monkeypatch, tmp_path, var, value
):
    monkeypatch.setenv(var, value)
    assert main(["--task", TASK_ID, "--logs-root", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{var}={value!r}" in err[0]
    assert not (tmp_path / "runs").exists()
