"""metrale.Runtime: one device (or the host backend), its target, levers, ops and kernels.

Every op the runtime serves is called the same way, by name: ``rt.run("fp8_act_quant", x=x)``
or ``rt.ops.fp8_act_quant(x=x)``, with arrays by their declared names (NumPy on the host
backend; DLPack or ``__cuda_array_interface__`` tensors on a device), sizes taken from the
shapes, outputs allocated where not passed, and the outputs returned with the pick. Arrays are
checked by the package (dtype, rank, layout, alignment, place) and then by the library (the
op's rules), both before anything launches, so a refused call writes nothing.
Invariant: every public method of a closed runtime raises metrale.ClosedError ("this Runtime is
closed"), also on a thread whose call raced close(): the library refuses it, never crashes.
Past ~400 lines: one class, Runtime, whose public methods (about 20) are each documented where
they are defined.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from . import _alloc, _native
from ._arrays import describe, torch_call_key
from ._backend_choice import choose_backend, fallback_line
from ._binding import Plan, bind, plan_key
from ._declarations import OpSpec
from ._errors import ArgumentError, ClosedError, NoDeviceError, python_terms
from ._log import logger
from ._registry import Declared, build_failures, compile_error, kernel_parameters, launch_dims, pack_args
from ._op_functions import Ops
from ._results import BuildResult, Explanation, Lever, Pick, Result

#: Where a runtime runs: "auto" takes the CUDA device when there is one, else the host backend
#: (``rt.backend_reason`` says why); "host" runs the same kernel templates on the CPU; "cuda"
#: asks for the device (NoDeviceError at open without one).
Backend = Literal["auto", "host", "cuda"]

_BACKENDS = {"auto": 0, "host": 1, "cuda": 2}
_U32 = 2**32 - 1
_MAX_PLANS = 256  # checked call shapes kept per runtime (a new shape past it starts afresh)


def _op_spec_text(index: int, spec: Any) -> str:
    """An op declared as data for the C ABI: a dict (the TOML op file's keys) as JSON, a str as TOML text."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        import json
        return json.dumps(spec)
    raise ArgumentError(f"ops[{index}]={spec!r}: expected a dict of an op's keys or a TOML op file's text")


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= _U32:
        raise ArgumentError(f"{name}={value!r}: expected an integer in [0, {_U32}]")
    return int(value)


class Runtime:
    """One device (or the host backend), its target, levers, ops and kernels.

    ``Runtime("host")`` runs on the CPU, anywhere; ``Runtime("cuda", device=1)`` on that GPU
    (NoDeviceError without one); ``Runtime("auto")`` on the GPU when there is one, else on the
    host backend, saying so (``rt.backend == "host"``, ``rt.backend_reason``, a warning on the
    "metrale" logger).
    ``levers={"ssm_ba_gates_hopper": False}`` sets levers by their [defaults] key over the
    target file and the environment (``rt.levers`` lists them with their provenance). Close it
    (``close()`` or a ``with`` block) to free its kernels. ``verify=False`` uses the kernels
    without checking them on the device first (``True`` checks; ``None``: METRALE_VERIFY, on
    unless ``off``); a kernel that fails its check is refused and the op runs the next one.
    ``bundle_pubkey="signer.pub"`` (over METRALE_BUNDLE_PUBKEY) uses only bundles that key's owner
    signed (``metrale-jit build --bundle DIR --sign signer.key``); an unsigned or wrongly signed
    one is refused with a warning naming it, and a file that is no public key raises ConfigError.
    ``remote_cache="redis://cache:6379/0"`` (over METRALE_REMOTE_CACHE; ``""``: none) shares compiled
    kernels through Redis: a miss of the disk cache asks it before NVRTC, and each compile is
    published there; Redis down, slow or full never fails a call; a malformed URL raises ConfigError.
    ``compile_timeout_s=60`` (over METRALE_COMPILE_TIMEOUT_S, default 300) bounds one compile: an
    NVRTC compile past it is abandoned and its kernel absent ("compile exceeded 60 s"), a host
    compiler killed; the runtime stays usable.
    ``shapes={"ssm_ba_gates.n": [96]}``
    pins shape constants: open builds their specialised kernel variants in its one batch (a value
    first met by a call is built in the background instead).
    ``tuning_table="h200.toml"`` (over METRALE_TUNING_TABLE; ``""``: none) has the guards hold M to
    the thresholds a tuning table measured (``tune()``, ``metrale-jit tune``) at the shapes it
    measured, the prediction elsewhere; one measured on another device, SM count, driver or with
    other kernels is refused by name (``tuning_status`` says why) and the predictions stay; a file
    that cannot be read or parsed, or was edited, raises ConfigError.
    """

    def __init__(
        self,
        backend: Backend = "auto",
        *,
        target: str | None = None,
        cache_dir: str | None = None,
        device: int = 0,
        levers: Mapping[str, bool] | None = None,
        host_sm_count: int = 0,
        host_worker_threads: int = 0,
        bundle_dirs: Sequence[str] | None = None,
        verify: bool | None = None,
        shapes: Mapping[str, Sequence[int]] | None = None,
        bundle_pubkey: str | None = None,
        remote_cache: str | None = None,
        compile_timeout_s: float | None = None,
        ops: Sequence[Mapping[str, Any] | str] | None = None,
        tuning_table: str | os.PathLike[str] | None = None,
    ) -> None:
        if backend not in _BACKENDS:
            raise ArgumentError(f"backend={backend!r}: expected 'auto', 'host' or 'cuda'")
        device = _count("device", device)
        overrides = []
        for key, value in (levers or {}).items():
            if not isinstance(key, str) or not isinstance(value, bool):
                raise ArgumentError(f"levers[{key!r}]={value!r}: expected a lever's [defaults] key and True or False")
            overrides.append((key, value))
        if verify is not None and not isinstance(verify, bool):
            raise ArgumentError(f"verify={verify!r}: expected True, False or None (METRALE_VERIFY decides)")
        if bundle_dirs is not None and (isinstance(bundle_dirs, str) or any(":" in d for d in bundle_dirs)):
            raise ArgumentError(f"bundle_dirs={bundle_dirs!r}: expected a list of directories, none with ':' in its name")
        if bundle_pubkey is not None and (not isinstance(bundle_pubkey, str) or not bundle_pubkey):
            raise ArgumentError(f"bundle_pubkey={bundle_pubkey!r}: expected the path of a public key file (metrale-jit keygen)")
        if remote_cache is not None and not isinstance(remote_cache, str):
            raise ArgumentError(f"remote_cache={remote_cache!r}: expected 'redis://HOST:PORT[/DB]', '' or None")
        if compile_timeout_s is not None and (isinstance(compile_timeout_s, bool) or not isinstance(
                compile_timeout_s, (int, float)) or not 0 < compile_timeout_s < float("inf")):
            raise ArgumentError(f"compile_timeout_s={compile_timeout_s!r}: expected a positive number of seconds or None "
                                f"(METRALE_COMPILE_TIMEOUT_S decides)")
        if tuning_table is not None:
            if not isinstance(tuning_table, (str, os.PathLike)):
                raise ArgumentError(f"tuning_table={tuning_table!r}: expected the path of a tuning table, '' or None")
            tuning_table = os.fspath(tuning_table)
        pins = []
        for key, values in (shapes or {}).items():
            if not isinstance(key, str) or "." not in key or any(c in key for c in ";=,"):
                raise ArgumentError(f"shapes[{key!r}]: expected '<op>.<argument>', an op's name and one of its scalars")
            if isinstance(values, int) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
                raise ArgumentError(f"shapes[{key!r}]={values!r}: expected a list of positive integers")
            pins.append(f"{key}={','.join(str(v) for v in values)}")
        specs = [_op_spec_text(i, spec) for i, spec in enumerate(ops or ())]
        native_args = (
            device, target, cache_dir, overrides, _count("host_sm_count", host_sm_count),
            _count("host_worker_threads", host_worker_threads), ":".join(bundle_dirs) if bundle_dirs else None,
            -1 if verify is None else int(verify),
            ";".join(pins) if pins else None,
            bundle_pubkey,
            remote_cache,
            0.0 if compile_timeout_s is None else float(compile_timeout_s),
            specs,
            tuning_table,
        )
        #: The C ABI itself (pointers as ints), for engines that manage their own memory.
        self.raw = _native.NativeRuntime(_BACKENDS[backend], *native_args)
        info = self.raw.describe()
        choice = choose_backend(backend, info["has_device"], info["no_device_reason"])
        if choice.refusal is not None or choice.reopen_on_host:
            self.raw.close()
            if choice.refusal is not None:
                raise NoDeviceError(choice.refusal)
            self.raw = _native.NativeRuntime(_BACKENDS["host"], *native_args)
            info = self.raw.describe()
            logger.warning("%s", fallback_line(choice))
        #: Why the runtime runs elsewhere than asked ("auto" on a machine with no GPU: "no CUDA
        #: device: <the driver's reason>"); None when it runs where asked.
        self.backend_reason: str | None = choice.reason
        self._on_host = choice.backend == "host"
        self._device = device
        self._declared: list[Declared] = []  # declared through this Runtime since its last build()
        self._expressions: dict[int, str] = {}  # variant id -> name expression, as declared
        self._handle_variants: dict[int, int] = {}  # handle -> variant id, from handle()
        self._parameter_types: dict[int, tuple[str, ...] | str] = {}  # handle -> types, or why unknown
        #: Whether ops can run (explain needs no device); when not, ``no_device_reason`` says why.
        self.has_device: bool = info["has_device"]
        self.no_device_reason: str = info["no_device_reason"]
        #: Whether kernels are verified on the device before an op uses them (``verify=``, METRALE_VERIFY).
        self.verify: bool = info["verify"]
        specs = [OpSpec.from_native(d) for d in self.raw.ops()]
        self._specs: dict[str, OpSpec] = {}
        for spec in specs:
            for name in (spec.name, *spec.aliases):
                self._specs.setdefault(name, spec)
        #: The ops as functions generated from their declarations: ``rt.ops.fp8_act_quant(x=x)``.
        self.ops = Ops(self, specs)
        self._plans: dict[tuple[str, Any], Plan] = {}
        #: The pick of the last op call on this runtime; None after a refused call.
        self.last_pick: Pick | None = None

    # ---- state -----------------------------------------------------------------------

    def _open(self) -> None:
        if self.raw.closed:
            raise ClosedError("this Runtime is closed")

    @property
    def backend(self) -> str:
        """Where this runtime's ops run: ``"host"`` (the CPU: NumPy arrays, CPU tensors) or ``"cuda"``."""
        return "host" if self._on_host else "cuda"

    @property
    def device_ordinal(self) -> int:
        """The CUDA device ordinal asked for (``device=``); 0 on the host backend."""
        return 0 if self._on_host else self._device

    @property
    def closed(self) -> bool:
        """Whether close() ran (every method but this and close() then raises)."""
        return self.raw.closed

    def close(self) -> None:
        """Closes the runtime, also while other threads call it: calls in flight and background
        kernel builds finish, later calls raise ClosedError, then its kernels are freed. A second
        close waits for the first. From a log callback it returns at once (freed after the call)."""
        self.raw.close()

    def __enter__(self) -> Runtime:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def tuning_status(self) -> str:
        """The tuning table in one line: "tuning table F: 1 row in use (measured on ...)", "tuning
        table F refused: <why> (the guards keep their predictions)", or "" when none was given."""
        self._open()
        return self.raw.tuning_status()

    def describe(self) -> dict[str, Any]:
        """Device, target, arch, SM count, the op names, and the levers with their provenance."""
        self._open()
        info = self.raw.describe()
        info["levers"] = {lever.name: {"value": lever.value, "provenance": lever.provenance, "origin": lever.origin,
                                       "env_var": lever.env_var} for lever in self.levers.values()}
        info["ops"] = list(self.ops)
        return info

    @property
    def levers(self) -> dict[str, Lever]:
        """Every lever the ops declare, by [defaults] key, with its value and provenance."""
        self._open()
        return {d["name"]: Lever(**d) for d in self.raw.levers()}

    def lever(self, name: str) -> Lever:
        """One lever by [defaults] key; ArgumentError naming the known keys for another."""
        self._open()
        return Lever(**self.raw.lever(name))

    # ---- ops, by name ----------------------------------------------------------------

    def op(self, name: str) -> OpSpec:
        """The declaration of the op of that name or alias: roles, arguments, summary."""
        self._open()
        spec = self._specs.get(name)
        if spec is None:
            raise ArgumentError(f"no op named {name!r} (ops: {', '.join(self.ops)}; aliases: "
                                f"{', '.join(a for n in self.ops for a in self._specs[n].aliases)})")
        return spec

    def run(self, op: str, /, *, role: str | None = None, stream: int | None = None, **args: Any) -> Result:
        """Runs ``op`` (a name or alias) with its arguments by name and returns its outputs with
        the pick: ``q, scales = rt.run("fp8_act_quant", x=x)``, ``result.pick.kernel``.

        Arrays go by their declared names; a size a shape gives may be left out (and is checked
        where given); an output not passed is allocated where the inputs live. ``role`` forces
        a kernel by role name or alias ("parent", "twin", ...; None lets the guards pick);
        ``stream`` is a CUstream as an int (default: the inputs' library's current stream).
        Raises ArgumentError naming the argument and the rule, before anything is allocated.
        """
        self._open()
        self.last_pick = None
        spec = self._specs.get(op) or self.op(op)
        if role is not None and role not in spec.role_names:  # type: ignore[attr-defined]
            raise ArgumentError(f"{spec.name}: no kernel role {role!r} (roles: {spec.role_list()})")
        if not self.has_device:
            raise NoDeviceError(f"no device: {self.no_device_reason}")
        # A call shaped like an earlier one (NumPy arrays of the same shapes, strides, dtypes and
        # flags; the same sizes) reuses its checked plan: only addresses and alignment are new.
        keyed = plan_key(args)
        if keyed is None:
            keyed = torch_call_key(args)  # torch tensors: the same reuse, keyed by their metadata
        key, addresses = ((spec.name, keyed[0]), keyed[1]) if keyed is not None else (None, None)
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            plan = bind(spec, args, self._on_host, self._device)
            if key is not None:
                if len(self._plans) >= _MAX_PLANS:
                    self._plans.clear()
                self._plans[key] = plan
        values, outputs, like = plan.execute(args, self._on_host, addresses)
        names = plan.names
        if stream is None:
            stream = 0 if self._on_host or like is None else _alloc.current_stream(like, describe(like, "").stream)
        pick = Pick.from_native(self.raw.run(spec.name, role, names, values, stream))
        self.last_pick = pick
        return Result(outputs, pick)

    def explain(self, op: str, /, **shape: int) -> Explanation:
        """What ``op`` would run for a shape (its sizes by name, tensors not needed) and why;
        without ``m``, each guarded role's smallest M at the other sizes. Needs no device."""
        self._open()
        spec = self.op(op)
        for name, value in shape.items():
            arg = spec.arg(name)
            if arg is not None and arg.tensor:
                raise ArgumentError(f"{spec.name}: explain takes sizes, and {name} is a tensor")
            shape[name] = _count(f"{spec.name}: {name}", value)
        return Explanation.from_native(self.raw.explain(spec.name, tuple(shape), tuple(shape.values()), "m" in shape))

    def tune(
        self,
        ops: str | Sequence[str] | None = None,
        m: Sequence[int] | None = None,
        n: Sequence[int] | None = None,
        k: Sequence[int] | None = None,
        repeats: int = 5,
        out: str | os.PathLike[str] | None = None,
    ) -> str:
        """Times each guarded role of ``ops`` (names or aliases, a list or one comma-separated str;
        None: every op with a tunable guard) against its op's parent over the ladder ``m`` (None: 1
        to 4096) at each ``n`` (None: [96]) and ``k`` (None: [5120]), ``repeats`` timed calls per
        point (the median is kept), and returns the tuning table's text (README "Tuning tables").
        With ``out`` the table is also written there, whole or not at all; open a Runtime with
        ``tuning_table=out`` to use it. On the host backend the numbers are for tests, not a GPU.
        Raises ArgumentError for an unknown op or a size of 0, ConfigError when ``out`` cannot be
        written (nothing is written then)."""
        self._open()
        if ops is None:
            names = None
        elif isinstance(ops, str):
            names = ops
        elif isinstance(ops, Sequence) and ops and all(isinstance(o, str) and o and "," not in o for o in ops):
            names = ",".join(ops)
        else:
            raise ArgumentError(f"ops={ops!r}: expected an op's name or alias, a list of them, or None (every op "
                                f"with a tunable guard)")
        ladders = []
        for name, values in (("m", m), ("n", n), ("k", k)):
            if values is None:
                ladders.append([])
            elif isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
                raise ArgumentError(f"{name}={values!r}: expected a non-empty list of positive integers, or None")
            else:
                ladders.append([_count(f"{name}[{i}]", v) for i, v in enumerate(values)])
        if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or not 1 <= repeats <= _U32:
            raise ArgumentError(f"repeats={repeats!r}: expected a positive integer")
        if out is not None and not isinstance(out, (str, os.PathLike)):
            raise ArgumentError(f"out={out!r}: expected the path to write the table to, or None")
        if not self.has_device:
            raise NoDeviceError(f"no device: {self.no_device_reason}")
        if out is not None:
            path = os.fspath(out)
            self.raw.tune(names, *ladders, int(repeats), path)
            with open(path, encoding="utf-8") as table:
                return table.read()
        with tempfile.TemporaryDirectory(prefix="metrale-tune-") as folder:
            path = os.path.join(folder, "tuning.toml")
            self.raw.tune(names, *ladders, int(repeats), path)
            with open(path, encoding="utf-8") as table:
                return table.read()

    def prepare(self, op: str, /, *, role: str | None = None, **shape: int) -> int:
        """Does every first-call thing of ``op`` at a shape (its sizes by name, tensors not
        needed) ahead, so that a call on a stream capturing into a CUDA graph can run it:
        ``rt.prepare("fp8_act_quant", m=1, k=5120)`` before ``torch.cuda.graph(...)``. With
        ``role`` None, the guards' pick and every role built; else that role. A captured call
        of a shape not prepared raises CaptureError naming prepare. Returns the number of
        kernel choices made ready."""
        self._open()
        spec = self.op(op)
        if role is not None and role not in spec.role_names:  # type: ignore[attr-defined]
            raise ArgumentError(f"{spec.name}: no kernel role {role!r} (roles: {spec.role_list()})")
        for name, value in shape.items():
            arg = spec.arg(name)
            if arg is not None and arg.tensor:
                raise ArgumentError(f"{spec.name}: prepare takes sizes, and {name} is a tensor")
            shape[name] = _count(f"{spec.name}: {name}", value)
        if not self.has_device:
            raise NoDeviceError(f"no device: {self.no_device_reason}")
        return int(self.raw.prepare(spec.name, role, tuple(shape), tuple(shape.values())))

    # ---- the registry: an engine's own kernels ----------------------------------------

    def add_source(self, name: str, text: str) -> None:
        """Adds (or replaces) a named CUDA C++ source the registry compiles from."""
        self._open()
        self.raw.registry_add_source(name, text)

    def declare(self, kernel: str, source: str, name_expression: str, *, block: int = 0, lanes: int = 0,
                groups: int = 0) -> int:
        """Declares a variant (kernel name and template parameters); returns its id (the same
        kernel and parameters again give the same id). ``{block}``, ``{lanes}`` and ``{groups}``
        in the name expression are filled in as for the library's kernels: ``"scale<{block}>"``
        with ``block=128`` compiles ``scale<128>``; another placeholder, or one of a parameter
        left 0, raises ArgumentError."""
        self._open()
        counts = (_count("block", block), _count("lanes", lanes), _count("groups", groups))
        variant = self.raw.registry_declare(kernel, source, name_expression, *counts)
        if all(d.id != variant for d in self._declared):
            self._declared.append(Declared(variant, kernel, name_expression, *counts))
        self._expressions.setdefault(variant, name_expression)
        return variant

    def build(self) -> None:
        """Builds and loads every declared variant for this runtime's device. Raises
        metrale.CompileError when a variant declared through this Runtime since the last build()
        failed, naming each (kernel, name expression) with the compiler's lines; the variants
        that did build are loaded and usable (handle() gives them) all the same."""
        self._open()
        self.raw.registry_build()
        declared, self._declared = self._declared, []
        failures = build_failures(declared, self.raw.registry_handle)
        if failures:
            raise compile_error(failures, len(declared) - len(failures))

    def compile(self, variant: int, arch: str | None = None) -> BuildResult:
        """Compiles one variant with NVRTC for ``arch`` (default: the target's), no device needed."""
        self._open()
        return BuildResult(*self.raw.registry_compile(_count("variant", variant), arch))

    def handle(self, variant: int) -> tuple[int, str | None]:
        """The variant's handle (0 when absent) and, when absent, why (a failed compile: its
        first error, then the compiler's log)."""
        self._open()
        found, reason = self.raw.registry_handle(_count("variant", variant))
        if found and variant in self._expressions:
            self._handle_variants[found] = variant  # launch's Python ints and floats are typed by it
        return found, None if reason is None else python_terms(reason)

    def launch(self, handle: int, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence[Any], *,
               shared_bytes: int = 0, stream: int = 0) -> None:
        """Launches ``handle`` on ``grid`` blocks of ``block`` threads, each an int or a tuple of
        1 to 3 ints (``grid=8``, ``block=(32, 4)``); each argument is bytes, a NumPy scalar, an
        array (its address), or a Python int or float, packed as the kernel's parameter type
        (read from the lowered name NVRTC gives; the handle must come from handle())."""
        self._open()
        packed = pack_args(args, lambda: self._parameters(handle))
        self.raw.launch(handle, launch_dims("grid", grid), launch_dims("block", block), packed,
                        _count("shared_bytes", shared_bytes), stream)

    def _parameters(self, handle: int) -> tuple[str, ...] | str:
        """The kernel's parameter types (or why unknown), read once per handle."""
        known = self._parameter_types.get(handle)
        if known is None:
            variant = self._handle_variants.get(handle)
            known = ("its handle did not come from handle()" if variant is None
                     else kernel_parameters(self.raw, variant, self._expressions[variant]))
            self._parameter_types[handle] = known
        return known

    def synchronize(self, stream: int = 0) -> None:
        """Waits for ``stream`` (a CUstream as an int; 0 the default) on the runtime's device."""
        self._open()
        self.raw.synchronize(stream)
