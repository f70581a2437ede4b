"""The OS sandbox command tools run under: bubblewrap on Linux, probed once per process.

A sandboxed command sees the whole file system read-only, its working directory writable, a
private ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev``, a fresh ``/proc`` (its own process
namespace: it sees and signals only its own processes), no network unless its tool allows it
(its own network namespace, loopback included), no capabilities, and the project directory
hidden (the code, ``.env`` and an SQLite database). ``/run`` is hidden because a network
namespace does not cover Unix sockets on the file system (a database or Docker socket).

Where bubblewrap is missing or cannot create namespaces (unprivileged user namespaces off,
a container's seccomp filter), ``detect_sandbox()`` says why and ``Sandbox.available`` is
false: tools that write are then refused (see ``agents.runtime.command_tools``).

Django-free on purpose: the admin (below the runtime in the import layers) reports the same
status the runtime acts on.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

__all__ = [
    "COMMAND_PATH",
    "Sandbox",
    "child_environment",
    "detect_sandbox",
    "hidden_roots",
    "probe_sandbox",
    "resolve_program",
]

# The PATH every command gets (and program names are looked up on): the system's, never the
# server's own (a virtual environment, a version manager's shims).
COMMAND_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PROBE_SECONDS = 10.0
# The two ways bubblewrap may get its namespaces, tried in order: a user namespace (any user,
# where the kernel allows unprivileged ones), else, for a server running as root where user
# namespaces are off, root's own namespaces. Both drop every capability.
_IDENTITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("user namespace", ("--unshare-user", "--uid", "65534", "--gid", "65534")),
    ("root, no user namespace", ()),
)
# Shared scratch and runtime directories: replaced by empty private ones.
_PRIVATE = ("/tmp", "/var/tmp", "/run", "/var/run")
# What a command with network access needs from under /run: the stub resolver's files.
_RESOLVER = "/run/systemd/resolve"


def child_environment(home: str) -> dict[str, str]:
    """The whole environment of a command: ``PATH``, ``HOME`` and ``LANG``, nothing else.

    Nothing of the server's own environment reaches a command (``SECRET_KEY``, provider
    keys, ``DATABASE_URL``): only the language, so its output is decoded as ours is.
    """
    return {"PATH": COMMAND_PATH, "HOME": home, "LANG": os.environ.get("LANG") or "C.UTF-8"}


def resolve_program(program: str) -> str | None:
    """The absolute path ``program`` runs as, or ``None`` when nothing executable is there.

    An absolute path is taken as it is; a bare name is looked up on ``COMMAND_PATH``.
    """
    if os.path.isabs(program):
        return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    if "/" in program:
        return None
    return shutil.which(program, path=COMMAND_PATH)


def hidden_roots(extra: Iterable[str | PurePath] = ()) -> tuple[str, ...]:
    """The directories a sandboxed command cannot see: the private ones, then ``extra``."""
    roots = [*_PRIVATE, tempfile.gettempdir(), *(os.fspath(path) for path in extra)]
    return tuple(dict.fromkeys(os.path.normpath(root) for root in roots))


@dataclass(frozen=True, slots=True)
class Sandbox:
    """What confines command tools on this machine.

    ``available`` says whether commands run confined; ``description`` names the mechanism
    (``"bubblewrap 0.8.0 (user namespace)"``) or says why there is none, for the admin and
    for a refused call's error.
    """

    available: bool
    description: str
    program: str | None = None
    identity: tuple[str, ...] = ()

    def wrap(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        network: bool = False,
        hidden: Iterable[str | PurePath] = (),
    ) -> list[str]:
        """``argv`` as bubblewrap runs it: ``workdir`` the only writable place.

        ``hidden`` directories (the project) are covered by empty read-only ones. The
        caller starts the result in a new session of its own; ``--die-with-parent`` ends the
        sandbox with the server.
        """
        if not self.available or self.program is None:
            raise RuntimeError(f"no sandbox: {self.description}")
        flags = [
            self.program,
            *self.identity,
            "--unshare-all",
            *(["--share-net"] if network else []),
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        private = hidden_roots()
        for root in private:
            if os.path.isdir(root) and not os.path.islink(root):
                flags += ["--tmpfs", root]
        if network and os.path.isdir(_RESOLVER):
            flags += ["--ro-bind", _RESOLVER, _RESOLVER]
        for root in hidden_roots(hidden)[len(private) :]:
            if os.path.isdir(root):
                flags += ["--tmpfs", root, "--remount-ro", root]
        # Last, so it is mounted over the private and hidden directories it may sit in.
        flags += ["--bind", workdir, workdir, "--chdir", workdir, "--", *argv]
        return flags


def _version(program: str, env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, text=True, env=env, timeout=_PROBE_SECONDS
        )
    except (OSError, subprocess.SubprocessError):
        return "bubblewrap"
    return done.stdout.strip() or "bubblewrap"


def probe_sandbox() -> Sandbox:
    """Find out now whether bubblewrap can confine a command here (each way in turn)."""
    if not sys.platform.startswith("linux"):
        return Sandbox(False, f"no supported OS sandbox on {sys.platform} (bubblewrap is Linux)")
    program = shutil.which("bwrap", path=COMMAND_PATH)
    if program is None:
        return Sandbox(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    true = shutil.which("true", path=COMMAND_PATH)
    if true is None:
        return Sandbox(False, "cannot probe bubblewrap: no 'true' program on the PATH")
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="orkestrel-probe-") as workdir:
        env = child_environment(workdir)
        for label, identity in _IDENTITIES:
            if not identity and os.geteuid() != 0:
                continue  # namespaces without a user namespace need root
            candidate = Sandbox(True, label, program, identity)
            try:
                done = subprocess.run(
                    candidate.wrap([true], workdir=workdir),
                    capture_output=True,
                    text=True,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    timeout=_PROBE_SECONDS,
                )
            except (OSError, subprocess.SubprocessError) as error:
                failures.append(f"{label}: {error}")
                continue
            if done.returncode == 0:
                return Sandbox(True, f"{_version(program, env)} ({label})", program, identity)
            reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            failures.append(f"{label}: {reason}")
    return Sandbox(False, "bubblewrap cannot create its namespaces here: " + "; ".join(failures))


@functools.cache
def detect_sandbox() -> Sandbox:
    """``probe_sandbox()``, once per process (the machine does not change under a server)."""
    return probe_sandbox()
