"""The native operators and their numpy reference: kernels, parity, inputs, threads, stubs, leaks, the time-aware leg."""
