from hypothesis import HealthCheck, settings

# Deterministic property tests: the same examples on every run and every machine.
settings.register_profile(
    "ropegeo", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ropegeo")
