"""Calling the implementation under Gate A: what comes back, dtypes, refusals (internal). Only
exceptions raised *inside* the implementation become :class:`Refused`.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

__all__ = ["GateAError", "Bad", "Refused", "Impl", "UNIT", "dtype_name"]

#: Unit roundoff of each floating format Gate A knows.
UNIT = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


class GateAError(ValueError):
    """The object under test breaks the calling contract (not a finding about RoPE)."""


class Bad(Exception):
    """An implementation returned something unusable during a check."""


class Refused(Exception):
    """The implementation raised on a probe: it refuses that input."""

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.original = exc


def dtype_name(dt) -> str | None:
    """``"bfloat16"``, ``"float32"``, ... for a numpy, ml_dtypes or torch dtype; ``None`` if unknown."""
    name = str(dt).replace("torch.", "")
    return name if name in UNIT else None


def _accepts_role(obj) -> bool:
    """A parameter named ``role`` on the callable or its ``forward`` (a bare ``**kwargs`` is not one)."""
    for target in (obj, getattr(obj, "forward", None)):
        if target is None:
            continue
        try:
            if "role" in inspect.signature(target).parameters:
                return True
        except (TypeError, ValueError):
            continue
    return False


class Impl:
    """Calls the implementation; scales its output by ``1 / attention_factor``; records dtypes."""

    def __init__(self, obj, attention_factor: float = 1.0):
        if not callable(obj):
            raise GateAError(f"implementation must be a callable f(x, positions) -> rotated x, got {type(obj).__name__}")
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            try:
                sig.bind(np.zeros((1, 2)), np.zeros(1))
            except TypeError:
                raise GateAError(
                    f"implementation must accept two positional arguments (x, positions); its signature is {sig}"
                ) from None
        self.obj = obj
        self.factor = float(attention_factor)
        self.role = _accepts_role(obj)
        self.decoder = callable(getattr(obj, "prefill", None)) and callable(getattr(obj, "decode_step", None))
        self.torch = None  # the torch module once the implementation is found to need tensors
        self.out_dtypes: set[str] = set()  # every floating dtype returned so far
        self.order: dict[int, np.ndarray] = {}  # head width -> output order to undo (see learn_order)
        self.pass_length = None  # calls made as within a forward pass of this length (dynamic NTK), if set

    def learn_order(self, d: int) -> bool:
        """Find and undo from now on a fixed reordering of the output at width ``d`` (e.g. DeepSeek-V3
        writing interleaved pairs half-split), read where the map is a scaled permutation (position 0,
        or -1, 1, -2, 2 for a shifted origin); True when one was found."""
        for p in (0, -1, 1, -2, 2):
            try:
                out = self(np.eye(d), np.full(d, p, dtype=np.int64))
            except Refused:  # e.g. negative positions refused
                continue
            idx = np.argmax(np.abs(out), axis=1)
            if not np.array_equal(np.sort(idx), np.arange(d)):
                continue
            top = out[np.arange(d), idx]
            c = float(np.median(top))
            perm = np.zeros((d, d))
            perm[np.arange(d), idx] = 1.0
            if not c > 0 or np.max(np.abs(out / c - perm)) > 0.05:  # not a permutation here
                continue
            if np.array_equal(idx, np.arange(d)):
                return False
            self.order[d] = idx
            return True
        return False

    def wrap(self, a):
        if self.torch is None:
            return a
        return self.torch.from_numpy(np.ascontiguousarray(a))  # pragma: no cover - torch path

    def unwrap(self, out, what):
        if hasattr(out, "detach") and hasattr(out, "cpu") and not isinstance(out, np.ndarray):  # a torch tensor
            name = dtype_name(getattr(out, "dtype", ""))
            if name:
                self.out_dtypes.add(name)
            out = out.detach().cpu()
            out = out.float().numpy() if name in ("bfloat16", "float16") else out.numpy()
        try:
            arr = np.asarray(out)
        except Exception:  # pragma: no cover - exotic returns
            raise Bad(f"{what} returned {type(out).__name__}, not an array") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype.name == "bfloat16"):
            raise Bad(f"{what} returned {type(out).__name__} of dtype {arr.dtype}, not an array of real numbers")
        if np.iscomplexobj(arr):
            raise Bad(f"{what} returned complex values; return real arrays of the input's shape")
        if dtype_name(arr.dtype):
            self.out_dtypes.add(dtype_name(arr.dtype))
        return arr.astype(np.float64)

    def raw(self, *args, **kwargs):
        """Call the object itself (any method result), counting exceptions as refusals."""
        return self._call(self.obj, args, kwargs)

    def method(self, name, *args):
        """Call the object's method ``name`` (``prefill``, ``decode_step``) on numpy arguments."""
        return self._call(getattr(self.obj, name), args, {})

    def _call(self, fn, args, kwargs):
        try:
            with np.errstate(all="ignore"):
                try:
                    return fn(*(self.wrap(a) for a in args), **kwargs)
                except (TypeError, AttributeError):
                    if self.torch is not None or not self._try_torch():
                        raise
                    return fn(*(self.wrap(a) for a in args), **kwargs)  # pragma: no cover - torch path
        except (Exception, SystemExit) as exc:  # sys.exit inside the implementation is a refusal too
            raise Refused(exc) from exc

    def __call__(self, x, positions, role=None):
        """``f(x, positions) / attention_factor`` as float64, shape checked, finite."""
        kwargs = {"role": role} if (role is not None and self.role) else {}
        x = np.asarray(x)
        positions = np.asarray(positions)
        if self.pass_length is not None:
            return self._within_pass(x, positions, role)
        out = self.raw(x.copy(), positions.copy(), **kwargs)  # copies: code that writes into its input harms no probe
        if isinstance(out, tuple):
            raise Bad(f"the implementation returned a tuple of {len(out)} (e.g. the (q, k) of apply_rotary_pos_emb); "
                      "it must return one array, x rotated")
        arr = self.unwrap(out, "the implementation")
        if arr.shape != x.shape:
            raise Bad(f"the implementation returned shape {arr.shape} for x of shape {x.shape}; it must return x's shape")
        if not np.all(np.isfinite(arr)):
            hi = int(np.max(np.abs(positions))) if positions.size else 0
            raise Bad(f"the implementation returned NaN or infinite values (positions up to {hi:,})")
        if self.factor != 1.0 and role != "value":
            arr = arr / self.factor
        order = self.order.get(arr.shape[-1])
        if order is not None and role != "value":
            arr = arr[..., order]
        return arr

    def _within_pass(self, x, positions, role):
        """The call as within a pass of ``pass_length`` tokens: id ``pass_length - 1`` appended, its row dropped."""
        n = self.pass_length
        self.pass_length = None
        try:
            if x.ndim < 2 or positions.ndim < 1 or positions.shape != x.shape[:-1]:
                return self(x, positions, role=role)
            xs = np.concatenate([x, np.zeros(x.shape[:-2] + (1, x.shape[-1]), dtype=x.dtype)], axis=-2)
            ps = np.concatenate([positions, np.full(positions.shape[:-1] + (1,), n - 1, dtype=positions.dtype)], -1)
            return self(xs, ps, role=role)[..., :-1, :]
        finally:
            self.pass_length = n

    def bare(self):
        """A context in which calls are made as they come (no appended pass length)."""
        @contextlib.contextmanager
        def ctx():
            n, self.pass_length = self.pass_length, None
            try:
                yield self
            finally:
                self.pass_length = n

        return ctx()

    def _try_torch(self) -> bool:
        try:
            import torch  # noqa: PLC0415
        except ImportError:
            return False
        if not callable(getattr(torch, "from_numpy", None)):  # not PyTorch (a directory named torch)
            return False
        self.torch = torch  # pragma: no cover - torch path
        return True  # pragma: no cover
