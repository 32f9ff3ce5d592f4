"""Work that writes run records: training, replay, the recipe and the benchmark."""
