"""Run records: the schema, atomic storage and the TensorBoard export.

Nothing here imports torch or mjlab, so reading a record is cheap.
"""
