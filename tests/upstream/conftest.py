"""Fixtures of the differential tests: one upstream oracle process per session, and the
number of generated cases per test (``UPSTREAM_EXAMPLES``, default 200; ``make
test-upstream`` runs 3000)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from upstream.oracle import Oracle, why_unavailable

EXAMPLES = int(os.environ.get("UPSTREAM_EXAMPLES", "200"))
"""Cases per differential test."""

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example])
"""Seeded (derandomized), bounded, no example database: the same cases on every machine."""


@pytest.fixture(scope="session")
def oracle():
    """The running upstream oracle; skips the test when Go or the built harness is absent."""
    reason = why_unavailable()
    if reason is not None:
        pytest.skip(reason)
    proc = Oracle()
    yield proc
    proc.close()
