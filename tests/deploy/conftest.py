"""Fixtures for the deployment tests: each overlay built once with ``kubectl kustomize``."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import CONTROLLER, DRIFT_EVENTS, GATE_LIFTER, NAMESPACED, build, require_kubectl

Objects = list[dict[str, Any]]


@pytest.fixture
def lifter_objs() -> Objects:
    require_kubectl()
    return build(GATE_LIFTER)


@pytest.fixture
def namespaced_objs() -> Objects:
    require_kubectl()
    return build(NAMESPACED)


@pytest.fixture
def controller_objs() -> Objects:
    require_kubectl()
    return build(CONTROLLER)


@pytest.fixture
def drift_event_objs() -> Objects:
    require_kubectl()
    return build(DRIFT_EVENTS)
