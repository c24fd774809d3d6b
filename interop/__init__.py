"""Bridge between fgraph and JAX (to_jax, from_jax, gradient cross-checks): to come."""
