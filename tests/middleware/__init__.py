"""What the middleware tests share."""


def run(broker, worker, queue="cleanup"):
    broker.join(queue, fail_fast=False)
    worker.join()
