"""mjlab's velocity runner, with every checkpoint written whole or not at all.

Problem it solves: rsl_rl writes a checkpoint with ``torch.save`` straight into
``model_<iteration>.pt``. A training stopped by a signal while it saves leaves that file
truncated, and it is the last checkpoint, the one a resume from the run folder takes. Here
the checkpoint is written beside it as ``model_<iteration>.pt.partial`` (a name no checkpoint
listing matches) and renamed into place, so a reader finds the whole file or none. The saved
dictionary and the ONNX export are mjlab's own. A no-op with a logger that uploads files by
name (wandb, neptune: this project logs to TensorBoard): there mjlab's save runs unchanged.
"""

from __future__ import annotations

import os

from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner


class AtomicSaveVelocityRunner(VelocityOnPolicyRunner):
    def save(self, path: str, infos: dict | None = None) -> None:
        if self.logger.logger_type != "tensorboard":
            super().save(path, infos)
            return
        partial = f"{path}.partial"
        super().save(partial, infos)
        os.replace(partial, path)
