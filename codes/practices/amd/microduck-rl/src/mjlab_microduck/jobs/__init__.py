"""Work that writes run records: training, replay, the gait test, the recipe, the benchmark and
a book build's chapter times."""
