"""A Beam worker pool on the loopback interface only, run with a worker environment's Python:

    .venv-worker/pipeline/bin/python deploy/worker_pool.py

Like `python -m apache_beam.runners.worker.worker_pool_main`, it starts one SDK worker process
per request of a portable runner (`--environment_type EXTERNAL --environment_config
127.0.0.1:PORT`), with this interpreter's environment; unlike it, it listens on 127.0.0.1 only
(Beam's binds every interface) on a port the system picks, which it prints as its first line.
It runs until its standard input closes; its workers are in its process group, which the
caller (deploy.rehearse.worker_pool) kills as a whole.
"""
import sys

import grpc
from apache_beam.portability.api import beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer
from apache_beam.utils import thread_pool_executor


def main() -> None:
    server = grpc.server(thread_pool_executor.shared_unbounded_instance())
    port = server.add_insecure_port("127.0.0.1:0")
    # use_process: each worker is a `python` process, as each Dataflow worker is its own.
    pool = BeamFnExternalWorkerPoolServicer(use_process=True)
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # Returns when the caller closes the pipe or dies.
    server.stop(0)


if __name__ == "__main__":
    main()
