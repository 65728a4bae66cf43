"""A RabbitMQ cluster of the tests' own for fault drills: nodes on this machine to kill and restart.

Each node (``pulse-drill-1@localhost``, ...) has its own ports, configuration, data and log in a
temporary directory, and the cluster has an Erlang cookie of its own (in a HOME of its own, which
``rabbitmqctl`` reads too). So the system's node (``rabbit@localhost``: ports 5672, 15672 and
25672, /etc/rabbitmq, /var/lib/rabbitmq) is never touched: not even /etc/rabbitmq/rabbitmq-env.conf
is read. The scripts of /usr/lib/rabbitmq/bin are run directly, as the test's user: the wrappers
in /usr/sbin switch to the rabbitmq user and its home. The nodes share the machine's epmd.

    with Cluster() as cluster:  # three nodes, clustered and running
        connection = pika.BlockingConnection(pika.URLParameters(cluster.urls()[0]))
        ...
        leader = cluster.leader("orders")
        cluster.kill(leader)
        ...
        cluster.restart(leader)
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

from tests.support.wait import wait_for

BIN = Path("/usr/lib/rabbitmq/bin")
NAME = "pulse-drill"  # nodes are pulse-drill-1@localhost, pulse-drill-2@localhost, ...
DIST_OFFSET = 20000  # a node's Erlang distribution port is its AMQP port + 20000, as RabbitMQ's default
ERL_ARGS = "-kernel inet_dist_use_interface {127,0,0,1}"  # distribution on loopback
BOOT_TIMEOUT = 120.0  # seconds a node may take to boot
STOP_TIMEOUT = 30.0  # seconds a node may take to stop before it is killed
LOG_TAIL = 40  # lines of a node's log quoted when it fails to start


def beam_pids(node: str) -> list[int]:
    """The OS pids of the Erlang VMs (beam.smp) started as ``node``, whoever started them."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == "beam.smp":
                if f"RABBITMQ_NODENAME={node}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                    pids.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return pids


def epmd_names() -> set[str]:
    """The names (before the @) of the nodes registered in this machine's epmd."""
    with socket.create_connection(("127.0.0.1", 4369), timeout=5) as epmd:
        epmd.sendall(b"\x00\x01n")  # NAMES_REQ
        answer = b""
        while chunk := epmd.recv(4096):
            answer += chunk
    return {line.split()[1] for line in answer[4:].decode().splitlines()}  # "name <name> at port <port>"


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def bind_error(host: str, port: int) -> str | None:
    """Why a listener could not bind ``host``:``port`` (None: it could)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            return str(error)
    return None


class Cluster:
    """``size`` RabbitMQ nodes clustered together; node N listens for AMQP on port ``base_port + N - 1``
    of 127.0.0.1 (and of ``listen``: ``"0.0.0.0"`` or one IP address, if given), and for Erlang
    distribution on 127.0.0.1, 20000 ports higher. The default ports (5781-5783, 25781-25783) are
    away from the system node's and below Linux's ephemeral range (32768 and up).

    ``user``: a (name, password) pair created as an administrator with every permission on the
    vhost ``/``, for clients that are not on loopback (``guest`` may only connect from there);
    ``urls()`` then holds it. ``name``: the nodes' names before their number. ``management_port``:
    node N serves the management API on this port + N - 1 of 127.0.0.1 (None: no management plugin).
    ``schedulers``: Erlang schedulers per node (None: one per core, as the system node). Use as a
    context manager, or call ``start()`` and ``stop()``.
    """

    def __init__(
        self,
        size: int = 3,
        base_port: int = 5781,
        listen: str | None = None,
        user: tuple[str, str] | None = None,
        name: str = NAME,
        management_port: int | None = None,
        schedulers: int | None = 1,
    ) -> None:
        self.name = name
        self.nodes = [f"{name}-{n}@localhost" for n in range(1, size + 1)]
        self.base_port, self.listen, self.user = base_port, listen, user
        self.management_port, self.schedulers = management_port, schedulers
        self.dir: Path | None = None  # the temporary directory, made by start()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def port_of(self, node: str) -> int:
        """The node's AMQP port."""
        return self.base_port + self.nodes.index(node)

    def api_url(self, node: str) -> str:
        """The node's management API (``management_port``), with guest's credentials."""
        assert self.management_port is not None, "the cluster was made without the management plugin"
        return f"http://guest:guest@127.0.0.1:{self.management_port + self.nodes.index(node)}"

    def urls(self, vhost: str = "/", host: str = "127.0.0.1") -> list[str]:
        """An ``amqp://`` URL per node, in node order, with ``user`` (or guest)."""
        name, password = self.user or ("guest", "guest")
        return [f"amqp://{name}:{password}@{host}:{self.port_of(n)}/{quote(vhost, safe='')}" for n in self.nodes]

    def start(self) -> Cluster:
        """Boot every node at once, join nodes 2..n to node 1 and wait until all run (about 30 s for
        three nodes on two cores).

        Nodes of an earlier run that was killed are killed first. Fails with an AssertionError
        quoting a node's log if it does not start; everything started is stopped again then."""
        for node in self.nodes:
            self._kill_leftover(node)
        self._check_ports()
        self.dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        try:
            self._write_files()
            for node in self.nodes:
                self._launch(node)
            for node in self.nodes:
                self._await_boot(node)
            for node in self.nodes[1:]:
                self.ctl(node, "stop_app")
                self.ctl(node, "join_cluster", self.nodes[0])
                self.ctl(node, "start_app")
            wait_for(lambda: self.running_nodes() == set(self.nodes), "every node running in the cluster")
            if self.user:
                name, password = self.user
                self.ctl(self.nodes[0], "add_user", name, password)
                self.ctl(self.nodes[0], "set_user_tags", name, "administrator")
                self.ctl(self.nodes[0], "set_permissions", "-p", "/", name, ".*", ".*", ".*")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node (``rabbitmqctl stop``; SIGKILL after STOP_TIMEOUT seconds) and remove the
        temporary directory."""
        with ThreadPoolExecutor() as pool:
            list(pool.map(self._stop_node, self._procs))
        self._procs.clear()
        if self.dir:
            shutil.rmtree(self.dir)
            self.dir = None

    def kill(self, node: str) -> None:
        """SIGKILL the node's Erlang VM; return once it is gone and out of epmd (well under a second)."""

        def gone() -> bool:
            for pid in beam_pids(node):
                os.kill(pid, signal.SIGKILL)
            return self._procs[node].poll() is not None  # the rabbitmq-server script ends with its VM

        wait_for(gone, f"{node} to die", timeout=STOP_TIMEOUT)
        wait_for(lambda: node.split("@")[0] not in epmd_names(), f"{node} to leave epmd", timeout=STOP_TIMEOUT)

    def restart(self, node: str, quorum: bool = True) -> None:
        """Start a killed node again on its data directory: it rejoins the cluster. Return once the
        cluster shows it running and, with ``quorum``, every quorum queue has all its members online
        (about 15 s)."""
        assert self._procs[node].poll() is not None, f"{node} is running: kill it first"
        self._launch(node)
        self._await_boot(node)
        wait_for(lambda: node in self.running_nodes(), f"{node} running in the cluster")
        if quorum:
            wait_for(self._quorum_complete, "every quorum queue with all its members online", timeout=BOOT_TIMEOUT)

    def running_nodes(self) -> set[str]:
        """The nodes ``rabbitmqctl cluster_status`` shows running."""
        return set(json.loads(self._ctl_any("cluster_status"))["running_nodes"])

    def leader(self, queue: str, vhost: str = "/") -> str:
        """The node leading a quorum queue."""
        queues = json.loads(self._ctl_any("list_queues", "-p", vhost, "name", "leader"))
        return {q["name"]: q["leader"] for q in queues}[queue]

    def connections_on(self, node: str) -> int:
        """How many client connections the node holds (``list_connections`` lists the cluster's: the
        node is told by its port)."""
        return sum(c["port"] == self.port_of(node) for c in json.loads(self._ctl_any("list_connections", "port")))

    def ctl(self, node: str, *args: str, timeout: float = 60.0) -> str:
        """``rabbitmqctl -n node args...`` (JSON output) with the cluster's cookie; its standard output.
        Fails with an AssertionError if it exits non-zero, with TimeoutExpired after ``timeout`` seconds."""
        command = [str(BIN / "rabbitmqctl"), "-q", "-n", node, *args, "--formatter", "json"]
        done = subprocess.run(command, env=self._env(), cwd=self.dir, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        return done.stdout

    def _ctl_any(self, *args: str) -> str:
        """``rabbitmqctl`` against the first node whose VM is running."""
        running = [n for n in self.nodes if self._procs[n].poll() is None]
        assert running, "no node of the cluster is running"
        return self.ctl(running[0], *args)

    def _quorum_complete(self) -> bool:
        for vhost in json.loads(self._ctl_any("list_vhosts", "name")):
            queues = json.loads(self._ctl_any("list_queues", "-p", vhost["name"], "type", "members", "online"))
            if any(set(q["members"]) != set(q["online"]) for q in queues if q["type"] == "quorum"):
                return False
        return True

    def _kill_leftover(self, node: str) -> None:
        """Kill a node of this name left running by an earlier run, and wait until epmd forgets it."""
        for pid in beam_pids(node):
            os.kill(pid, signal.SIGKILL)
        wait_for(
            lambda: not beam_pids(node) and node.split("@")[0] not in epmd_names(),
            f"{node}, left running by an earlier run, to go",
            timeout=STOP_TIMEOUT,
        )

    def _check_ports(self) -> None:
        for node in self.nodes:
            port = self.port_of(node)
            binds = [("127.0.0.1", port), ("127.0.0.1", port + DIST_OFFSET)]
            if self.management_port is not None:
                binds.append(("127.0.0.1", self.management_port + self.nodes.index(node)))
            for host, number in binds + ([(self.listen, port)] if self.listen else []):
                error = bind_error(host, number)
                assert error is None, f"{node} cannot listen on {host}:{number} ({error}): choose another base_port"

    def _write_files(self) -> None:
        home = self.dir / "home"
        home.mkdir()
        cookie = home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(20))
        cookie.chmod(0o400)  # Erlang refuses a cookie others may read
        (self.dir / "rabbitmq-env.conf").write_text("")  # instead of /etc/rabbitmq/rabbitmq-env.conf
        for node in self.nodes:
            folder = self._folder(node)
            folder.mkdir()
            port = self.port_of(node)
            listeners = [f"0.0.0.0:{port}"] if self.listen == "0.0.0.0" else [f"127.0.0.1:{port}"]
            if self.listen not in (None, "0.0.0.0"):
                listeners.append(f"{self.listen}:{port}")
            lines = [f"listeners.tcp.{n} = {address}" for n, address in enumerate(listeners, 1)]
            plugins = "[]"
            if self.management_port is not None:
                plugins = "[rabbitmq_management]"
                api = self.management_port + self.nodes.index(node)
                lines += ["management.tcp.ip = 127.0.0.1", f"management.tcp.port = {api}"]
            (folder / "enabled_plugins").write_text(plugins + ".\n")
            (folder / "rabbitmq.conf").write_text("\n".join(lines) + "\n")

    def _folder(self, node: str) -> Path:
        return self.dir / node.split("@")[0]

    def _env(self) -> dict[str, str]:
        """The environment of the nodes and of rabbitmqctl: the cluster's cookie, no system settings."""
        return dict(
            os.environ,
            HOME=str(self.dir / "home"),
            RABBITMQ_CONF_ENV_FILE=str(self.dir / "rabbitmq-env.conf"),
            ERL_EPMD_ADDRESS="127.0.0.1",
        )

    def _launch(self, node: str) -> None:
        folder = self._folder(node)
        env = dict(
            self._env(),
            RABBITMQ_NODENAME=node,
            RABBITMQ_DIST_PORT=str(self.port_of(node) + DIST_OFFSET),
            RABBITMQ_CONFIG_FILE=str(folder / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(folder / "advanced.config"),  # none, rather than /etc/rabbitmq's
            RABBITMQ_ENABLED_PLUGINS_FILE=str(folder / "enabled_plugins"),
            RABBITMQ_MNESIA_BASE=str(folder / "mnesia"),
            RABBITMQ_LOG_BASE=str(folder / "log"),
            RABBITMQ_LOGS="-",  # to standard output, which is node.log
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=ERL_ARGS
            + (f" +S {self.schedulers}:{self.schedulers}" if self.schedulers else ""),
        )
        with open(folder / "node.log", "ab") as log:
            self._procs[node] = subprocess.Popen(
                [str(BIN / "rabbitmq-server")],
                env=env,
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C of the tests reaches the nodes only through stop()
            )

    def _await_boot(self, node: str) -> None:
        """Wait until the node accepts AMQP connections and says it has started."""
        proc, deadline = self._procs[node], time.monotonic() + BOOT_TIMEOUT
        while not accepts(self.port_of(node)):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = "it exited" if proc.poll() is not None else f"not up after {BOOT_TIMEOUT:.0f} s"
                log = self._folder(node) / "node.log"
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL:])
                raise AssertionError(f"{node} did not start ({why}); the end of {log}:\n{tail}")
            time.sleep(0.1)
        self.ctl(node, "await_startup")

    def _stop_node(self, node: str) -> None:
        if self._procs[node].poll() is None:
            try:
                self.ctl(node, "stop", timeout=STOP_TIMEOUT)
                self._procs[node].wait(STOP_TIMEOUT)
            except (AssertionError, subprocess.TimeoutExpired):
                self.kill(node)
