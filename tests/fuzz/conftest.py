"""Hypothesis profiles for the fuzz tests: `ci` (the default) is derandomized, so every run tries
the same cases and a failure is reproducible; `long` (HYPOTHESIS_PROFILE=long) tries many more."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=5000,
                          max_examples=400, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", deadline=20000, max_examples=5000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
