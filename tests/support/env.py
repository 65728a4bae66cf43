"""Where the tests run: a database and a RabbitMQ vhost of their own per tox environment (and per
pytest-xdist worker).

Imported by conftest before anything of Pulse, so the settings every process reads are these.
"""

import os
import re
import tempfile

RUN = os.environ.get("TOX_ENV_NAME", "local")
if os.environ.get("PYTEST_XDIST_WORKER"):  # gw0, gw1, ...
    RUN += "_" + os.environ["PYTEST_XDIST_WORKER"]
NAMESPACE = "pulse_test_" + re.sub(r"\W", "_", RUN)
HOST = os.environ.get("PULSE_TEST_HOST", "127.0.0.1")

ENV = {
    "PULSE_BROKER_URL": f"amqp://guest:guest@{HOST}:5672/{NAMESPACE}",
    "PULSE_DATABASE_URL": f"postgresql://postgres@{HOST}:5432/{NAMESPACE}",
    "PULSE_RABBITMQ_API_URL": f"http://guest:guest@{HOST}:15672",
    "PULSE_METRICS_DIR": os.path.join(tempfile.gettempdir(), NAMESPACE + "-metrics"),
    "PULSE_LOG_LEVEL": "INFO",
    "PULSE_LOCATIONS_SECRET": "a-secret-for-the-locations-of-the-tests-only",
}
