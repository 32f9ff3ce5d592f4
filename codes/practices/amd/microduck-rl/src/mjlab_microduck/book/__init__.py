"""What only the book's notebooks use: results lookup, live runs, tables, plots and prose.

Importing it picks MuJoCo's offscreen GL backend (``MUJOCO_GL``, only when unset): chapters
render replays, MuJoCo reads the variable once when it is first imported, and every chapter's
first cell imports this package before anything imports MuJoCo.
"""

from mjlab_microduck.compat import gl_backend

gl_backend.choose_gl_backend()
