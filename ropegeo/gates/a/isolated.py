"""The command line's Gate A (``gate-a``, ``report MODULE:FUNCTION``): the user's code runs in a
worker process that only *calls* it; the parent alone runs Gate A and judges.

The worker (``_worker_main``, under :mod:`ropegeo.gates.a.supervisor`) answers each request with
what the implementation returned; checks, tolerances and verdict run in the parent on a stand-in
(:class:`RemoteImplementation`), so forged arrays pass only if they *are* the declared rotations of
the parent's random inputs. Every message is authenticated (:func:`_pack`) and every wait has a
deadline (``--timeout``). It is not a sandbox (see the README): same user id, so run untrusted code
in a container or as another user.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import hmac
import inspect
import itertools
import json
import os
import re
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

import ml_dtypes
import numpy as np

from ropegeo.gates.a.call import Impl, Refused
from ropegeo.gates.a.gate import check_declaration, gate_a, resolve_target
from ropegeo.models.manifest import config_file, resolve, shipped_models

__all__ = ["run_in_worker", "remote_implementation", "RemoteImplementation", "WorkerAbort",
           "refuse_special_file", "timeout_seconds", "MAX_TIMEOUT", "MAX_REPLY_FACTOR"]

#: Longest ``--timeout`` accepted, in seconds (one day).
MAX_TIMEOUT = 86_400.0
#: A reply may hold at most this many times the bytes of its request's arrays (at least 1 MiB):
#: enough for complex or tuple returns, not for a flood that would fill the parent's memory.
MAX_REPLY_FACTOR = 64
_MIN_REPLY = 1 << 20
#: Longest ``MODULE:FUNCTION`` target accepted, in characters.
MAX_TARGET_LENGTH = 1000
_TARGET = re.compile(r"[^\W\d]\w*(\.[^\W\d]\w*)*:[^\W\d]\w*(\.[^\W\d]\w*)*")
#: Largest request the worker accepts (bytes): Gate A's probes stay far below.
MAX_REQUEST_BYTES = 1 << 30
#: Seconds the worker may take to start (Python, numpy, ropegeo) before the import is timed.
_STARTUP_SECONDS = 120.0
#: Seconds the parent waits for the supervisor to kill what the implementation left (it takes milliseconds).
_CLEANUP_SECONDS = 40.0
_KEY_BYTES = 32
_HEADER_LIMIT = 1 << 16
_MAX_TUPLE = 64
_TO_PARENT, _TO_WORKER = b"R", b"Q"

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "complex64", "complex128")


@functools.lru_cache(maxsize=1)
def _dtypes() -> dict:
    out = {n: np.dtype(n) for n in _DTYPE_NAMES}
    out["bfloat16"] = np.dtype(ml_dtypes.bfloat16)
    return out


class WorkerAbort(BaseException):
    """The run cannot give a verdict (timeout, worker died, tampered channel): a ``BaseException``,
    so Gate A never counts it as the implementation's refusal."""


def _one_line(text: str, limit: int = 2000) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def _pack(key: bytes, direction: bytes, seq: int, header: dict, arrays=()) -> bytes:
    """One authenticated frame: length (8 bytes), HMAC tag (32 bytes), body."""
    dtypes, metas, blobs = _dtypes(), [], []
    for a in arrays:
        a = np.asarray(a)
        a = np.ascontiguousarray(a, dtype=dtypes[a.dtype.name])  # native byte order
        metas.append({"dtype": a.dtype.name, "shape": [int(n) for n in a.shape]})
        blobs.append(a.tobytes())
    head = json.dumps({**header, "seq": seq, "arrays": metas}, allow_nan=False).encode()
    body = struct.pack(">I", len(head)) + head + b"".join(blobs)
    tag = hmac.new(key, direction + struct.pack(">Q", seq) + body, hashlib.sha256).digest()
    return struct.pack(">Q", len(body)) + tag + body


def _unpack(key: bytes, direction: bytes, seq: int, tag: bytes, body: bytes) -> tuple[dict, list]:
    """Check a frame's tag, then parse it strictly; raises ``ValueError`` naming what is wrong."""
    want = hmac.new(key, direction + struct.pack(">Q", seq) + body, hashlib.sha256).digest()
    if not hmac.compare_digest(want, tag):
        raise ValueError("a message failed authentication (it was not written by Gate A's worker, or not in order)")
    if len(body) < 4:
        raise ValueError("a message too short to hold a header")
    (n,) = struct.unpack(">I", body[:4])
    if n > min(_HEADER_LIMIT, len(body) - 4):
        raise ValueError("a message whose header overruns it")
    try:
        header = json.loads(body[4:4 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("a message whose header is not JSON") from None
    if not isinstance(header, dict) or header.get("seq") != seq or not isinstance(header.get("kind"), str):
        raise ValueError("a message without its kind or sequence number")
    metas = header.get("arrays")
    if not isinstance(metas, list):
        raise ValueError("a message without its list of arrays")
    buf, pos, arrays, dtypes = bytearray(body), 4 + n, [], _dtypes()
    for m in metas:
        ok = (isinstance(m, dict) and set(m) == {"dtype", "shape"} and m["dtype"] in dtypes
              and isinstance(m["shape"], list) and len(m["shape"]) <= 32
              and all(type(s) is int and s >= 0 for s in m["shape"]))
        if not ok:
            raise ValueError("a message describing an array badly")
        dt = dtypes[m["dtype"]]
        size = int(np.prod(m["shape"], dtype=object)) if m["shape"] else 1
        if size * dt.itemsize > len(buf) - pos:
            raise ValueError("a message shorter than the arrays it describes")
        arr = np.frombuffer(memoryview(buf)[pos:pos + size * dt.itemsize], dtype=dt).reshape(m["shape"])
        arrays.append(arr)
        pos += size * dt.itemsize
    if pos != len(buf):
        raise ValueError("a message longer than the arrays it describes")
    return header, arrays


def timeout_seconds(value) -> float:
    """``--timeout`` checked: a number of seconds in (0, :data:`MAX_TIMEOUT`].

    >>> timeout_seconds(2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        raise ValueError(f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], got {value}")
    return float(value)


def refuse_special_file(option: str, value) -> None:
    """Refuse (ValueError naming ``option``) a configuration path that is missing or not a regular
    file; shipped model names pass."""
    if value is None:
        return
    if isinstance(value, str) and value.strip().lower() in shipped_models():
        return
    config_file(value, option)  # the one check of a configuration path (manifest.config_file)


def _ready(fd: int, event: int, seconds: float) -> bool:
    """Whether ``fd`` is ready (or hung up) within ``seconds`` (poll: no FD_SETSIZE limit)."""
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(max(0, int(seconds * 1000))))


_WORKER_COMMAND = ("import os, sys; from ropegeo.gates.a.isolated import _worker_main; "
                   "_worker_main(int(sys.argv[1]), os.getppid())")
_SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3


def _dumpable(value: int | None) -> int | None:
    """Set this process's dumpable flag (0: its ``/proc/<pid>/fd`` closed to other processes of the
    same user that are not root); returns the previous value, or None where prctl is missing."""
    try:
        libc = ctypes.CDLL(None)
        before = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
        if value is not None:
            libc.prctl(_PR_SET_DUMPABLE, value, 0, 0, 0)
        return before
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return None


class _Worker:
    """The worker process (started by :mod:`ropegeo.gates.a.supervisor`) and the parent's end of its channel."""

    def __init__(self, timeout: float):
        if not os.path.isdir("/proc/self/task"):  # pragma: no cover - not Linux
            raise WorkerAbort("running the implementation in a separate process needs Linux (/proc): run ropegeo "
                              "in a Linux container")
        self.timeout = timeout
        self.key = secrets.token_bytes(_KEY_BYTES)
        self.seq_out = self.seq_in = 0
        self.tmp = tempfile.mkdtemp(prefix="ropegeo-gate-a-")
        self.out_path, self.err_path = os.path.join(self.tmp, "stdout"), os.path.join(self.tmp, "stderr")
        self.proc, self.pid = None, -1
        self.rfd = self.wfd = self.control = -1
        self.was_dumpable = _dumpable(0)  # the worker cannot reopen this process's stdout through /proc
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + [p for p in sys.path if p])
        command = [sys.executable, "-c", _WORKER_COMMAND, str(resp_w)]  # -c, not -m: -m would run this twice
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _SUPERVISOR, self.tmp, str(req_r), str(resp_w), *command],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=(req_r, resp_w), env=env, start_new_session=True)
        finally:
            os.close(req_r)
            os.close(resp_w)
            self.rfd, self.wfd = resp_r, req_w
            if self.proc is None:  # not started: nothing else will undo these
                self.close()
        self.control = self.proc.stdin.fileno()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)

    def handshake(self) -> None:
        """Send the key; wait for the worker to be ready (its own start is not the implementation's time)."""
        start = time.monotonic() + max(_STARTUP_SECONDS, self.timeout)
        line = self.proc.stdout.readline()  # the supervisor's first word: the worker's pid
        if not line.strip().isdigit():
            raise WorkerAbort("Gate A's worker could not be started")
        self.pid = int(line)
        self._write(self.key, start, "starting Gate A's worker")
        if self._receive(start, "starting Gate A's worker", 0)[0]["kind"] != "ready":
            raise WorkerAbort("Gate A's worker did not start properly")

    def _ended(self) -> str | None:
        """How the worker ended ("exit status 0", "killed by signal 9"), or None while it runs.
        The supervisor does not reap the worker before :meth:`close`, so its pid is not reused and
        ``/proc/<pid>/stat`` holds its exit status (the last field) once it is a zombie."""
        if self.proc.poll() is not None:
            return f"its supervising process ended ({_status(self.proc.returncode)})"
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            return "ended"
        if fields[0] not in (b"Z", b"X"):
            return None
        status = int(fields[-1])
        return _status(os.waitstatus_to_exitcode(status)) if status >= 0 else "ended"

    def _died(self) -> WorkerAbort:
        how = self._ended()
        if how is None:  # the pipe closed under a live worker: wait a moment for it to end
            for _ in range(10):
                time.sleep(0.05)
                how = self._ended()
                if how is not None:
                    break
        if how is None:
            return WorkerAbort("the implementation closed Gate A's channel to its process (it closed descriptors "
                               "it did not open); stopped, no verdict")
        return WorkerAbort(f"the implementation ended the process ({how}) before Gate A finished")

    @staticmethod
    def _late(what: str, timeout: float) -> WorkerAbort:
        return WorkerAbort(f"timeout: {what} did not return within {timeout:g} s; stopped (raise --timeout if it "
                           "is only slow)")

    def _wait(self, fd: int, event: int, deadline: float, what: str) -> None:
        """Until ``fd`` is ready: a timeout past ``deadline``, the worker's death meanwhile, abort the run."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._late(what, self.timeout)
            if _ready(fd, event, min(left, 0.1)):
                return
            if self._ended() is not None:
                raise self._died()

    def _write(self, data: bytes, deadline: float, what: str) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.wfd, select.POLLOUT, deadline, what)
            try:
                view = view[os.write(self.wfd, view[:1 << 16]):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._died() from None

    def _read(self, n: int, deadline: float, what: str) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            self._wait(self.rfd, select.POLLIN, deadline, what)
            try:
                chunk = os.read(self.rfd, min(n - len(buf), 1 << 20))
            except BlockingIOError:
                continue
            if not chunk:
                raise self._died()
            buf += chunk
        return bytes(buf)

    def _receive(self, deadline: float, what: str, limit: int) -> tuple[dict, list]:
        (length,) = struct.unpack(">Q", self._read(8, deadline, what))
        limit = max(limit, _MIN_REPLY) + _HEADER_LIMIT
        if length > limit:
            raise WorkerAbort(f"Gate A's channel carried a message of {length:,} bytes where at most {limit:,} can "
                              "come (something other than Gate A's worker wrote on it: the implementation?); "
                              "stopped, no verdict")
        tag = self._read(32, deadline, what)
        body = self._read(length, deadline, what)
        try:
            header, arrays = _unpack(self.key, _TO_PARENT, self.seq_in, tag, body)
        except ValueError as exc:
            raise WorkerAbort(f"Gate A's channel carried {exc} (something other than Gate A's worker wrote on "
                              "it: the implementation?); stopped, no verdict") from None
        self.seq_in += 1
        if header["kind"] == "error":
            raise WorkerAbort(_one_line(header.get("message", "Gate A's worker failed")))
        return header, arrays

    def request(self, header: dict, arrays, what: str) -> tuple[dict, list]:
        """Send one request and wait, at most ``timeout`` seconds, for its reply."""
        data = _pack(self.key, _TO_WORKER, self.seq_out, header, arrays)
        self.seq_out += 1
        deadline = time.monotonic() + self.timeout
        try:
            self._write(data, deadline, what)
        except WorkerAbort:
            if not _ready(self.rfd, select.POLLIN, 0):
                raise
            try:  # the worker stopped before reading the request: its last word says why
                self._receive(time.monotonic() + 1.0, what, 0)
            except WorkerAbort as reply:
                raise reply from None
            raise
        return self._receive(deadline, what, MAX_REPLY_FACTOR * sum(np.asarray(a).nbytes for a in arrays))

    def close(self) -> list[str]:
        """Stop the worker and everything it started (the supervisor kills them all); the notes on
        what the implementation printed. The temporary folder goes whatever interrupts this."""
        try:
            self._stop()
            return [n for n in (_captured(self.out_path, "stdout"), _captured(self.err_path, "stderr")) if n]
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if self.was_dumpable is not None:
                _dumpable(self.was_dumpable)

    def _stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                os.write(self.control, b"c")  # "I read and remove the folder myself"
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    f.close()
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal.SIGCONT)  # resume a supervisor the implementation stopped
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_CLEANUP_SECONDS)
            if self.proc.poll() is None:
                self.proc.kill()
                if self.pid > 0:
                    with contextlib.suppress(OSError):
                        os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()
        for fd in (self.rfd, self.wfd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _status(code: int) -> str:
    return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"


def _captured(path: str, stream: str) -> str | None:
    """A note on what the implementation printed on ``stream`` (read in bounded chunks)."""
    lines, first = 0, None
    try:
        with open(path, "rb") as fh:
            tail = b""
            for chunk in itertools.chain(iter(lambda: fh.read(1 << 20), b""), [b"\n"]):  # the last line ended
                parts = (tail + chunk).split(b"\n")
                tail = parts.pop()
                if len(tail) > 1 << 16:  # a line without end: keep counting, not storing
                    parts, tail = parts + [tail], b""
                for ln in parts:
                    if ln.strip():
                        lines += 1
                        first = first if first is not None else ln
    except OSError:
        return None
    if not lines:
        return None
    text = first[:200].decode("utf-8", errors="replace")[:80]
    return (f"the implementation printed {lines} line{'s' * (lines != 1)} on {stream} while it ran "
            f"(kept out of this report; the first: {text!r})")


@functools.lru_cache(maxsize=None)
def _raised_class(name: str) -> type:
    """An exception class named as the implementation's, for Gate A's refusal messages."""
    return type(name if name.isidentifier() else "Exception", (Exception,), {"__module__": "implementation"})


@functools.lru_cache(maxsize=None)
def _opaque_class(name: str) -> type:
    """Stands for an object the implementation returned that is not an array (only its type name crosses)."""
    name = name if name.isidentifier() else "object"
    return type(name, (), {"__module__": "implementation", "__repr__": lambda self: f"<{name}>"})


class RemoteImplementation:
    """The implementation as the parent sees it: every call runs in the worker, started on first use;
    ``role`` and ``prefill`` / ``decode_step`` are offered exactly when the implementation has them."""

    def __init__(self, target: str, timeout: float):
        self.target = _target(target)
        self.timeout = timeout_seconds(timeout)
        self.__name__ = str(target).rpartition(":")[2].rpartition(".")[2] or "implementation"
        self.notes: list[str] = []
        self.used_torch = False
        self._worker = None
        self._protocols = None
        self._closed = False

    def _start(self) -> dict:
        if self._closed:
            raise WorkerAbort("the implementation's worker was already stopped")
        if self._protocols is None:
            self._worker = _Worker(self.timeout)
            self._worker.handshake()
            header, _ = self._worker.request({"kind": "import", "target": self.target}, (),
                                             "importing the implementation")
            if header["kind"] != "imported" or not all(isinstance(header.get(k), bool) for k in ("role", "decoder")):
                raise WorkerAbort("Gate A's worker answered the import with a malformed message; stopped")
            self._protocols = {"role": header["role"], "decoder": header["decoder"]}
        return self._protocols

    @property
    def __signature__(self) -> inspect.Signature:
        P = inspect.Parameter
        params = [P("x", P.POSITIONAL_OR_KEYWORD), P("positions", P.POSITIONAL_OR_KEYWORD)]
        if self._start()["role"]:
            params.append(P("role", P.KEYWORD_ONLY, default=None))
        return inspect.Signature(params)

    def __getattr__(self, name: str):
        if name in ("prefill", "decode_step") and self._start()["decoder"]:
            return functools.partial(self._call, name)
        raise AttributeError(name)

    def __call__(self, x, positions, role=None):
        return self._call(None, x, positions, role=role)

    def _call(self, method, *args, role=None):
        self._start()
        if role is not None and not isinstance(role, str):
            raise TypeError(f"role must be a string, got {type(role).__name__}")
        header, arrays = self._worker.request({"kind": "call", "method": method, "role": role},
                                              [np.asarray(a) for a in args], "a call of the implementation")
        try:
            kind = header["kind"]
            if kind == "raised":
                exc = _raised_class(str(header["type"])[:100])(str(header["message"]))
            elif kind == "value" and isinstance(header.get("torch"), bool):
                self.used_torch |= header["torch"]
                exc, value = None, _decode(header["value"], arrays)
            else:
                raise ValueError(kind)
        except (KeyError, TypeError, ValueError, IndexError):
            raise WorkerAbort("Gate A's worker answered a call with a malformed message; stopped, no verdict") from None
        if exc is not None:
            raise exc
        return value

    def close(self) -> None:
        """Kill the worker's process group; :attr:`notes` then says what the implementation printed."""
        self._closed = True  # never restarted
        if self._worker is not None:
            self.notes.extend(self._worker.close())
            self._worker = None
        if self.used_torch:
            self.notes.append("the implementation was called with torch tensors")


def _target(target) -> str:
    """``MODULE:FUNCTION`` checked in the parent: dotted Python names, at most :data:`MAX_TARGET_LENGTH` characters."""
    if not isinstance(target, str) or len(target) > MAX_TARGET_LENGTH or not _TARGET.fullmatch(target):
        shown = repr(target) if not isinstance(target, str) or len(target) <= 80 else \
            f"{target[:60]!r} ... ({len(target):,} characters)"
        raise ValueError(f"target must look like MODULE:FUNCTION (dotted Python names, at most {MAX_TARGET_LENGTH:,} "
                         f"characters; for example mypkg.rope:apply), got {shown}")
    return target


def _decode(value, arrays, depth: int = 0):
    """Rebuild what the implementation returned: an array, a tuple of them, or a stand-in."""
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError("value")
    (kind, body), = value.items()
    if kind == "array" and type(body) is int and 0 <= body < len(arrays):
        return arrays[body]
    if kind == "opaque" and isinstance(body, str):
        return _opaque_class(body[:100])()
    if kind == "tuple" and depth == 0 and isinstance(body, list) and len(body) <= _MAX_TUPLE:
        return tuple(_decode(v, arrays, 1) for v in body)
    raise ValueError("value")


@contextlib.contextmanager
def remote_implementation(target: str, timeout: float):
    """A :class:`RemoteImplementation`, its worker killed on leaving; a :class:`WorkerAbort` leaves as
    a one-line ``ValueError``; ``impl.notes`` then says what the implementation printed.

    Examples
    --------
    >>> from ropegeo.gates.a.gate import gate_a
    >>> with remote_implementation("ropegeo.book.broken:Rotary", timeout=60) as impl:
    ...     report = gate_a(impl, head_dim=64, max_position=4096)
    >>> report.passed, report.protocols
    (True, ['callable', 'role', 'decoder'])
    """
    impl = RemoteImplementation(target, timeout)
    try:
        yield impl
    except WorkerAbort as exc:
        raise ValueError(_one_line(str(exc))) from None
    finally:
        impl.close()


_FROM_CONFIG = ("head_dim", "base", "pairing", "rotary_dim", "scale", "phase_dtype", "mrope_section",
                "mrope_interleaved")  # --attention-factor overrides
_OPTIONS = ("head_dim", "base", "pairing", "rotary_dim", "scale", "phase_dtype", "dtype", "max_position",
            "attention_factor", "seed", "attention_factor_in", "mrope_section", "mrope_interleaved")


def run_in_worker(args) -> tuple[dict, list[str]]:
    """Run Gate A for parsed ``gate-a`` options: ``(report dict, notes)``; a one-line ValueError when
    the run has no verdict."""
    kwargs = {k: getattr(args, k) for k in _OPTIONS if getattr(args, k, None) is not None}
    config, layer_type = getattr(args, "config", None), getattr(args, "layer_type", None)
    target_length, said = getattr(args, "target_length", None), []
    if config is not None:
        clash = [k for k in _FROM_CONFIG if k in kwargs]
        if clash:
            raise ValueError(f"--{clash[0].replace('_', '-')} comes from --config; give one or the other")
        refuse_special_file("--config", config)
        kwargs["manifest"] = resolve(config, layer_type=layer_type)
        kwargs["target_length"] = target_length
        chosen = kwargs["manifest"].layer_type
        if layer_type is None and chosen is not None:  # one kind of layer rotates (Llama 4): say which was audited
            said = [n for n in kwargs["manifest"].notes if n.startswith("the config has")] or [
                f"--config: the {chosen} layers' rotary operator is the one audited (another: --layer-type)"]
    elif target_length is not None or layer_type is not None:
        raise ValueError(f"{'--target-length' if target_length is not None else '--layer-type'} applies with "
                         "--config only")
    check_declaration(**kwargs)  # every option refused before the worker imports anything
    with remote_implementation(args.target, args.timeout) as impl:
        report = gate_a(impl, **kwargs)
    return report.to_dict(), said + impl.notes


def _leaf(out, budget: list) -> tuple[dict, object]:
    """One returned object as ``({"array": i} or {"opaque": type name}, array or None)``."""
    name = type(out).__name__
    try:
        if hasattr(out, "detach") and hasattr(out, "cpu") and not isinstance(out, np.ndarray):  # a torch tensor
            t = out.detach().cpu()
            arr = t.float().numpy().astype(_dtypes()["bfloat16"]) if str(t.dtype) == "torch.bfloat16" else t.numpy()
        else:
            arr = np.asarray(out)
        if arr.dtype.name not in _dtypes():
            if np.issubdtype(arr.dtype, np.complexfloating):
                arr = arr.astype(np.complex128)
            elif np.issubdtype(arr.dtype, np.number):
                arr = arr.astype(np.float64)
            else:
                return {"opaque": name}, None
    except BaseException:  # whatever converting it raises, it is not an array
        return {"opaque": name}, None
    budget[0] -= arr.nbytes
    if budget[0] < 0:
        raise OverflowError(f"the implementation returned an array of shape {arr.shape} and {arr.nbytes:,} bytes, "
                            "far more than its input: not x rotated")
    return {"array": -1}, arr


def _encode(out, limit: int) -> tuple[dict, list]:
    """What the implementation returned, as a value tree and its arrays."""
    budget, arrays = [limit], []

    def one(o):
        tree, arr = _leaf(o, budget)
        if arr is not None:
            tree = {"array": len(arrays)}
            arrays.append(arr)
        return tree

    if isinstance(out, tuple) and len(out) <= _MAX_TUPLE:
        return {"tuple": [one(o) for o in out]}, arrays
    return one(out), arrays


def _described(exc: BaseException) -> dict:
    try:
        name, message = type(exc).__name__, str(exc)
    except BaseException:  # an exception whose message cannot be formed
        name, message = "Exception", "(unprintable)"
    return {"kind": "raised", "type": name[:100], "message": message[:2000]}


class _Serve:
    """The worker's loop: read a request, call the implementation, answer. Nothing else."""

    def __init__(self, key: bytes, fd_in: int, fd_out: int):
        self.key, self.fd_in, self.fd_out = key, fd_in, fd_out
        self.seq_in = self.seq_out = 0
        self.impl = None

    def send(self, header: dict, arrays=()) -> None:
        data = memoryview(_pack(self.key, _TO_PARENT, self.seq_out, header, arrays))
        self.seq_out += 1
        while data:
            data = data[os.write(self.fd_out, data):]

    def read(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = os.read(self.fd_in, min(n - len(buf), 1 << 20))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def receive(self):
        """The next request, or None at the end of the channel; raises ValueError if tampered with."""
        raw = self.read(8)
        if raw is None:
            return None
        (length,) = struct.unpack(">Q", raw)
        if length > MAX_REQUEST_BYTES:
            raise ValueError("a request of impossible length")
        tag, body = self.read(32), self.read(length)
        if tag is None or body is None:
            return None
        msg = _unpack(self.key, _TO_WORKER, self.seq_in, tag, body)
        self.seq_in += 1
        return msg

    def handle(self, header: dict, arrays: list) -> tuple[dict, list]:
        if header["kind"] == "import" and self.impl is None:
            try:
                self.impl = Impl(resolve_target(header["target"]))
            except ValueError as exc:  # cannot import, or the object breaks the calling contract
                return {"kind": "error", "message": _one_line(exc)}, []
            except BaseException as exc:  # e.g. KeyboardInterrupt raised at import
                d = _described(exc)
                return {"kind": "error", "message": _one_line(f"target: importing the implementation raised "
                                                              f"{d['type']}: {d['message']}")}, []
            return {"kind": "imported", "role": bool(self.impl.role), "decoder": bool(self.impl.decoder)}, []
        if header["kind"] != "call" or self.impl is None or header.get("method") not in (None, "prefill",
                                                                                         "decode_step"):
            raise ValueError("a request out of protocol")
        role, method = header.get("role"), header["method"]
        try:
            out = (self.impl.raw(*arrays, **({} if role is None else {"role": role})) if method is None
                   else self.impl.method(method, *arrays))
        except Refused as exc:
            return _described(exc.original), []
        except BaseException as exc:  # KeyboardInterrupt, GeneratorExit, ...: still the implementation's
            return _described(exc), []
        limit = max(_MIN_REPLY, MAX_REPLY_FACTOR * sum(a.nbytes for a in arrays))
        try:
            value, out_arrays = _encode(out, limit)
        except OverflowError as exc:
            return {"kind": "error", "message": f"contract: {exc}"}, []
        return {"kind": "value", "value": value, "torch": self.impl.torch is not None}, out_arrays

    def loop(self) -> None:
        self.send({"kind": "ready"})
        while True:
            try:
                msg = self.receive()
            except ValueError as exc:
                self.send({"kind": "error", "message": f"Gate A's worker received {exc} (something other than "
                                                       "Gate A wrote on its channel: the implementation?); stopped, "
                                                       "no verdict"})
                return
            if msg is None:
                return
            try:
                reply, arrays = self.handle(*msg)
            except Exception as exc:  # ropegeo's own worker code failed, or was interfered with
                reply, arrays = {"kind": "error", "message": _one_line(
                    f"Gate A's worker failed ({type(exc).__name__}: {exc}): an error in ropegeo, or the "
                    "implementation interfering with the worker's process; stopped, no verdict")}, []
            self.send(reply, arrays)


def _die_with_parent(parent_pid: int) -> None:
    """Kill this process group when the parent disappears (SIGKILL leaves it no other way)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch():
        while True:
            if os.getppid() != parent_pid:
                os.killpg(os.getpgrp(), signal.SIGKILL)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True, name="ropegeo-parent-watch").start()


def _drop_ptrace() -> None:
    """Give up ``CAP_SYS_PTRACE`` (how root opens a non-dumpable process's ``/proc/<pid>/fd``) for
    good, before the implementation is imported: from the bounding set (no exec regains it) and the
    effective, permitted, inheritable and ambient sets. Nothing to do for a user without it."""
    cap, word = 19, 0  # CAP_SYS_PTRACE, in the first 32-bit word of each set
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        sets = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) x 2 words
        if libc.capget(header, sets) == 0 and sets[3 * word + 1] & (1 << cap):
            for i in range(3):
                sets[3 * word + i] &= ~(1 << cap) & 0xFFFFFFFF
            libc.capset(header, sets)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _worker_main(resp_fd: int, parent_pid: int) -> None:  # pragma: no cover - runs in the worker process
    _die_with_parent(parent_pid)
    _drop_ptrace()
    key = b""
    while len(key) < _KEY_BYTES:
        chunk = os.read(0, _KEY_BYTES - len(key))
        if not chunk:
            os._exit(0)
        key += chunk
    # the channel moves to fresh close-on-exec descriptors; stdin becomes /dev/null
    fd_in, fd_out = os.dup(0), os.dup(resp_fd)
    os.close(resp_fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        _Serve(key, fd_in, fd_out).loop()
    except BaseException:  # the channel broke: nothing left to answer
        pass
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(BaseException):
            os.killpg(os.getpgrp(), signal.SIGKILL)  # threads and children of the implementation go too
        os._exit(0)

