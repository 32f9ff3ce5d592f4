"""PPO (rsl_rl) configuration for the MicroDuck velocity task, kept apart from the env config."""

from mjlab.rl import RslRlModelCfg, RslRlOnPolicyRunnerCfg, RslRlPpoAlgorithmCfg

from mjlab_microduck.runs.names import EXPERIMENT_NAME
from mjlab_microduck.tasks.tuning import (
    DEFAULT_DESIRED_KL,
    DEFAULT_NUM_MINI_BATCHES,
    DEFAULT_STEPS_PER_ENV,
)

__all__ = ["EXPERIMENT_NAME", "STEPS_PER_ENV", "microduck_ppo_runner_cfg"]
STEPS_PER_ENV = DEFAULT_STEPS_PER_ENV


def microduck_ppo_runner_cfg(
    init_std: float = 1.0,
    steps_per_env: int = STEPS_PER_ENV,
    num_mini_batches: int = DEFAULT_NUM_MINI_BATCHES,
    desired_kl: float = DEFAULT_DESIRED_KL,
) -> RslRlOnPolicyRunnerCfg:
    """The upstream MicroDuck hyperparameters; observation normalisation on for both networks.

    ``init_std`` is the policy's initial action std, ``steps_per_env`` its rollout length,
    ``num_mini_batches`` the PPO mini-batches per epoch and ``desired_kl`` the KL target of the
    adaptive learning rate (the task's tuning preset sets all four).
    """
    return RslRlOnPolicyRunnerCfg(
        actor=RslRlModelCfg(
            hidden_dims=(512, 256, 128),
            activation="elu",
            obs_normalization=True,
            distribution_cfg={
                "class_name": "GaussianDistribution",
                "init_std": init_std,
                "std_type": "scalar",
            },
        ),
        critic=RslRlModelCfg(
            hidden_dims=(512, 256, 128),
            activation="elu",
            obs_normalization=True,
        ),
        algorithm=RslRlPpoAlgorithmCfg(
            value_loss_coef=1.0,
            use_clipped_value_loss=True,
            clip_param=0.2,
            entropy_coef=0.01,
            num_learning_epochs=5,
            num_mini_batches=num_mini_batches,
            learning_rate=1.0e-3,
            schedule="adaptive",
            gamma=0.99,
            lam=0.95,
            desired_kl=desired_kl,
            max_grad_norm=1.0,
        ),
        experiment_name=EXPERIMENT_NAME,
        logger="tensorboard",
        save_interval=100,
        num_steps_per_env=steps_per_env,
        max_iterations=1500,
    )
