"""Shared test configuration: hypothesis profiles and the seed-output helper.

HYPOTHESIS_PROFILE=ci (used by .ci/run) keeps property tests bounded so the
whole suite fits CI's budget on 2 cores; "dev" (the default) runs more examples.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
