"""MicroDuck velocity task for mjlab, with the ROCm compatibility fixes used by the book.

Importing the package does two things only (after choosing MuJoCo's offscreen GL backend), in
this order: install the compatibility hooks
(each acts only where its condition holds; see ``compat.report()``), then register the MicroDuck
tasks with mjlab. The hooks come first because mjlab reads ``warp.context`` when the first
simulation is built.
"""

from mjlab_microduck.compat import gl_backend as rendering

# MuJoCo picks its GL backend when first imported, and the hooks below import it.
rendering.choose_gl_backend()

from mjlab_microduck import compat  # noqa: E402

compat.install_all()

from mjlab_microduck import tasks  # noqa: E402  (registration needs the hooks in place)

__all__ = ["compat", "tasks"]
