"""Run records: the schema, atomic storage, summary records of superseded runs and the
TensorBoard export.

Nothing here imports torch or mjlab, so reading a record is cheap.
"""
