"""bench/noisy_neighbour.py in parts: the fleet and server, tenant A's abuses, tenant B's cycles, where the CPU went, the report."""
