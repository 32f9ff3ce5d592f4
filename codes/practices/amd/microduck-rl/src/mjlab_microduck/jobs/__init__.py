"""Work that writes run records: training, replay, the gait test, the recipe and the benchmark."""
