"""Book sources as the tests write them: the front matter jupytext and Jupyter Book read from
every chapter (a MyST notebook with a Python 3 kernel)."""

MYST_FRONT_MATTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
