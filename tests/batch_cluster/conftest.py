"""A local Ray cluster and a Dask LocalCluster, each started once per test module.

Both are small (2 CPUs / 2 single-thread worker processes), keep their files under
the session's temporary folder, and are shut down at the end: no process is left
behind. Worker processes import this checkout (the test process's ``sys.path``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.batch.conftest import counting  # noqa: F401 - a fixture

pytest.importorskip("ray", reason="the ray extra is not installed")
pytest.importorskip("distributed", reason="the dask extra is not installed")

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",  # no usage report leaves the machine
    "RAY_AUTH_MODE": "disabled",  # no token file written
}


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray with 2 CPUs and no dashboard; yields its GCS address."""
    import ray

    with pytest.MonkeyPatch.context() as patch:
        for name, value in RAY_ENV.items():
            patch.setenv(name, value)
        # The raylet and its workers inherit the environment: this checkout first.
        patch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
        context = ray.init(
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=80 * 1024 * 1024,
            log_to_driver=False,
            _temp_dir=str(tmp_path_factory.mktemp("ray")),
        )
        try:
            yield context.address_info["gcs_address"]
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    """A Dask LocalCluster of 2 worker processes with 1 thread each, and its client."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(params=["ray", "dask"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each test runs on both engines (the cluster started on first use)."""
    request.getfixturevalue("ray_cluster" if request.param == "ray" else "dask_client")
    return str(request.param)
