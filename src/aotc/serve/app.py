"""Deploying a package on Ray Serve: one application per model at /v2/models/{name}, each a
deployment of `replicas` ModelServer replicas, plus the server routes at /v2. Deploying a
new package version under the same names rolls the replicas over one by one."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ray import serve

from .. import __version__
from ..package.format import PackageReader
from .deployment import ModelServer, PackageSource, ServerRoutes

SERVER_APP = "aotc"


def app_name(model: str) -> str:
    return f"aotc-{model}"


@dataclass(frozen=True)
class ServeOptions:
    """How each model is served. `max_batch_size` is in rows of the model's batch dim (1:
    no batching; capped at the dim's max); `num_cpus` is what each replica reserves in Ray,
    `num_threads` the threads its compiled code runs on; a decoder LM decodes up to
    `max_sequences` requests at once (the generate extension). `weights` (an .npz path every node
    can read) is loaded into each replica with load_constants after the package."""
    replicas: int = 1
    num_threads: int = 1
    num_cpus: float = 1.0
    max_batch_size: int = 1
    batch_wait_ms: float = 2.0
    max_ongoing_requests: int = 64
    version: str = "1"
    weights: str | None = None  # an .npz of {constant name: array}
    max_sequences: int = 4  # a decoder LM's requests decoded at once (generation.py)


def package_models(path: str) -> list[str]:
    reader = PackageReader(path)
    try:
        return list(reader.models)
    finally:
        reader.close()


def model_application(source: PackageSource, model: str, options: ServeOptions):
    deployment = serve.deployment(
        name=f"model-{model}", num_replicas=options.replicas,
        max_ongoing_requests=max(options.max_ongoing_requests, options.max_batch_size),
        ray_actor_options={"num_cpus": options.num_cpus},
        user_config={"weights": os.path.abspath(options.weights)} if options.weights else {},
    )(ModelServer)
    return deployment.bind(source, model, options.version, options.num_threads,
                           options.max_batch_size, options.batch_wait_ms, options.max_sequences)


def deploy(package: str, options: ServeOptions | None = None, *, host: str = "127.0.0.1",
           port: int = 8000, via_object_store: bool = True) -> list[str]:
    """Serve every model of `package` on the connected Ray cluster (ray.init first) and
    return their names. With `via_object_store` replicas read the package from Ray's
    object store; otherwise from `package`'s path, which every node must see.

    `host` and `port` apply when this call starts Serve on the cluster; a running Serve keeps
    its proxy's address. The process that deployed through the object store owns the
    package's bytes there: keep it running while the models are served (`aotc serve` does)."""
    options = options or ServeOptions()
    models = package_models(package)
    serve.start(http_options={"host": host, "port": port}, proxy_location="HeadOnly")
    source = (PackageSource.in_object_store(package) if via_object_store
              else PackageSource(path=os.path.abspath(package)))
    for model in models:
        serve.run(model_application(source, model, options), name=app_name(model),
                  route_prefix=f"/v2/models/{model}", blocking=False)
    routes = serve.deployment(name="server", num_replicas=1,
                              ray_actor_options={"num_cpus": 0})(ServerRoutes)
    serve.run(routes.bind({m: app_name(m) for m in models}, __version__), name=SERVER_APP,
              route_prefix="/v2", blocking=False)
    return models


def undeploy(models: list[str]) -> None:
    """Remove the applications `deploy` created (the Serve instance stays)."""
    for model in models:
        serve.delete(app_name(model))
    serve.delete(SERVER_APP)
