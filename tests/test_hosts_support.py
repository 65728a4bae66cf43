"""The other hosts of tests/support/hosts.py: each reaches the test's servers in the root namespace
over its own link, and only them; killing one kills everything in it; closing leaves nothing.

Without root (or without permission to make network namespaces) these tests skip; with
PULSE_REQUIRE_TOOLS=1 (CI) they fail instead.
"""

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from tests.support.hosts import PREFIX, Host, HostsUnavailableError, ip, namespace_pids
from tests.support.worker import ROOT, free_port

FETCH = """
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the server
try:
    print(opener.open(sys.argv[1], timeout=10).read().decode())
except OSError:
    print("no answer")
"""

CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
except ConnectionRefusedError:
    print("refused")
"""

CRASHING = """
import time
from tests.support.hosts import Host
host = Host("crashed")
print(host.namespace, host.popen(["sleep", "600"], env={}).pid, flush=True)
time.sleep(600)
"""

ENV = {"PATH": "/usr/bin:/bin"}  # nothing else: no proxy, no settings of the tests


@pytest.fixture
def hosts():
    """Make hosts: hosts(name); all closed at the end."""
    made = []

    def make(name):
        try:
            host = Host(name)
        except HostsUnavailableError as error:
            if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
                pytest.fail(f"{error}; PULSE_REQUIRE_TOOLS=1 requires it")
            pytest.skip(str(error))
        made.append(host)
        return host

    yield make
    for host in made:
        host.close()


@contextlib.contextmanager
def serve(address):
    """An HTTP server on ``address`` (host, port) answering each request with the address it came
    from, which it also keeps in `clients`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"hello {self.client_address[0]}".encode()
            self.server.clients.append(self.client_address[0])
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with http.server.ThreadingHTTPServer(address, Handler) as serving:
        serving.clients = []
        threading.Thread(target=serving.serve_forever, args=(0.05,), daemon=True).start()
        yield serving
        serving.shutdown()


@pytest.fixture
def server():
    """A server on every address of the root namespace, so on every host's gateway."""
    with serve(("0.0.0.0", 0)) as serving:
        yield serving


def run(host, *command):
    """Run ``command`` inside ``host``; its output (it must succeed)."""
    process = host.popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, f"{command} exited {process.returncode}:\n{output}"
    return output.strip()


def namespaces():
    return {line.split()[0] for line in ip("netns", "list").stdout.splitlines()}


def links():
    """The root namespace's links: {ifindex: name}."""
    return {link["ifindex"]: link["ifname"] for link in json.loads(ip("-j", "link").stdout)}


def running(pid):
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_two_hosts_reach_a_server_of_the_test_each_from_its_own_address(hosts, server):
    a, b = hosts("a"), hosts("b")
    assert len({a.address, a.gateway, b.address, b.gateway}) == 4
    port = server.server_address[1]

    for host in (a, b):
        assert run(host, sys.executable, "-c", FETCH, f"http://{host.gateway}:{port}/") == f"hello {host.address}"
    assert server.clients == [a.address, b.address]


def test_a_host_reaches_postgresql_only_through_its_forward(hosts):
    host = hosts("a")
    host.forward(5432)

    assert run(host, "psql", "-h", host.gateway, "-U", "postgres", "-d", "postgres", "-tAc", "select 1") == "1"
    assert run(host, sys.executable, "-c", CONNECT, "5432") == "refused"  # its 127.0.0.1 is its own
    routes = [route["dst"] for route in json.loads(ip("-n", host.namespace, "-j", "-4", "route").stdout)]
    assert routes == [f"10.213.{host.slot}.0/30"]  # its link, and no way out of it


def test_a_forward_outlives_its_target_being_down(hosts):
    host = hosts("a")
    port = free_port()
    url = f"http://{host.gateway}:{host.forward(port, 0).port}/"  # any port of the gateway

    assert run(host, sys.executable, "-c", FETCH, url) == "no answer"  # nothing on 127.0.0.1:port yet
    with serve(("127.0.0.1", port)):
        assert run(host, sys.executable, "-c", FETCH, url) == "hello 127.0.0.1"  # from the forward


def test_killing_a_host_kills_everything_in_it_and_nothing_else(hosts):
    a, b = hosts("a"), hosts("b")
    forked = a.popen(["sh", "-c", "sleep 600 & sleep 600"], env=ENV)  # a child of its own, like dramatiq's
    other = b.popen(["sleep", "600"], env=ENV)

    a.kill()

    assert forked.returncode == -9
    assert namespace_pids(a.namespace) == []
    assert other.poll() is None


def test_close_leaves_no_namespace_nor_link(hosts):
    host = hosts("a")
    host.forward(5432)
    host.popen(["sleep", "600"], env=ENV)
    link = next(index for index, name in links().items() if name == host.root_link)

    host.close()
    host.close()

    assert host.namespace not in namespaces()
    assert link not in links()  # its name may be another host's already (of a test run beside this one)
    assert [name for name in namespaces() if name.startswith(PREFIX) and name.endswith(f"-{os.getpid()}")] == []


def test_a_crashed_runs_host_is_removed_by_the_next_host(hosts):
    hosts("a")  # skips here if this machine cannot make hosts
    with subprocess.Popen([sys.executable, "-c", CRASHING], cwd=ROOT, stdout=subprocess.PIPE, text=True) as crashing:
        namespace, sleeper = crashing.stdout.readline().split()
        crashing.kill()

    hosts("b")

    assert namespace not in namespaces()
    assert not running(int(sleeper))
