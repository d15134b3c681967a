"""What the package hands back: the pick of an op call (one shape for every op), an op call's
result (its outputs with the pick), an explanation, a lever with its provenance, a build result.
Invariant: plain immutable data, built from what the C ABI returned; no call into the library.
Their reprs are for reading at a prompt: one headline, then one indented line per verdict or role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass(frozen=True)
class Verdict:
    """One guard's word on one role: ``reason`` None when that role was taken."""

    role: str
    reason: str | None


@dataclass(frozen=True, repr=False)
class Pick:
    """Which kernel an op call ran (its role and kernel), whether the caller forced it, and the
    ordered verdicts that led there (the first guard first)."""

    op: str
    role: str
    kernel: str
    forced: bool
    verdicts: tuple[Verdict, ...]
    shape: int = 0
    """The shape constant of the specialised variant that ran (6 for the "s6" variant); 0: the
    kernel's generic form."""

    @staticmethod
    def from_native(t: tuple[Any, ...]) -> Pick:
        """The pick of NativeRuntime.run's (op, role, kernel, forced, verdicts, shape) tuple."""
        # Picks repeat (their strings are the declaration's): one object per distinct pick.
        pick = _PICKS.get(t)
        if pick is None:
            op, role, kernel, forced, verdicts, shape = t
            pick = Pick(op, role, kernel, forced, tuple(Verdict(r, why) for r, why in verdicts), shape)
            if len(_PICKS) < 1024:
                _PICKS[t] = pick
        return pick

    def reason(self, role: str) -> str | None:
        """The verdict's reason on ``role`` (None when it was taken or no guard spoke of it)."""
        return next((v.reason for v in self.verdicts if v.role == role), None)

    def lines(self) -> list[str]:
        """The headline ("fp8_act_quant ran parent (kernel fp8_act_quant), the guards' pick"),
        then one line per verdict."""
        how = "forced by role=" if self.forced else "the guards' pick"
        variant = f", specialised for shape {self.shape}" if self.shape else ""
        out = [f"{self.op} ran {self.role} (kernel {self.kernel}{variant}), {how}"]
        out += [f"  {v.role}: {'taken' if v.reason is None else 'not taken: ' + v.reason}" for v in self.verdicts]
        return out

    def __repr__(self) -> str:
        return "<Pick " + "\n".join(self.lines()) + ">"


_PICKS: dict[tuple[Any, ...], Pick] = {}


class Result:
    """An op call's outputs, by name (``result.q``, ``result["q"]``) and in the op's order
    (``q, scales = result``), and its ``pick``."""

    __slots__ = ("outputs", "pick")

    def __init__(self, outputs: dict[str, Any], pick: Pick) -> None:
        self.outputs = outputs
        self.pick = pick

    def __iter__(self) -> Iterator[Any]:
        return iter(self.outputs.values())

    def __len__(self) -> int:
        return len(self.outputs)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self.outputs[key]
        return list(self.outputs.values())[key]

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "outputs")[name]
        except KeyError:
            raise AttributeError(f"this op has no output {name!r} (outputs: {', '.join(self.outputs)})") from None

    def __repr__(self) -> str:
        outputs = ", ".join(f"{k} {getattr(v, 'dtype', '?')} {tuple(getattr(v, 'shape', ()))}"
                            for k, v in self.outputs.items())
        pick = self.pick.lines()
        return "\n".join([f"<Result {outputs}", f"  pick: {pick[0]}", *(f"  {line}" for line in pick[1:])]) + ">"


@dataclass(frozen=True, repr=False)
class RoleExplanation:
    """One guarded role at a shape: present, whether it runs and why not, its lever and where
    that came from, the smallest M it takes at the shape's other sizes (or why never), and where
    that threshold came from (``threshold_origin``)."""

    role: str
    kernel: str
    present: bool
    runs: bool
    reject: str | None
    lever: str
    requested: bool
    lever_origin: str
    min_m: int | None
    min_reason: str | None
    details: dict[str, int] = field(default_factory=dict)
    threshold_origin: str = ""
    """Where min_m's threshold came from: "tuning table F, row 1 (<device>, <date>; predicted M >=
    264)", "prediction", "prediction; tuning table F refused: <why>", or "" for a role whose guard
    has no tunable threshold."""

    def line(self) -> str:
        """"twin (fp8_act_quant_hopper): not at this shape: <why>; smallest M 264; lever ... on (file)"."""
        if not self.present:
            state = "not built"
        elif self.runs:
            state = "runs"
        else:
            state = f"not at this shape: {self.reject}" if self.reject else "does not run"
        parts = [f"{self.role} ({self.kernel}): {state}"]
        if self.min_m is not None:
            parts.append(f"smallest M {self.min_m}")
        elif self.min_reason:
            parts.append(f"never: {self.min_reason}")
        if self.lever:
            parts.append(f"lever {self.lever} {'on' if self.requested else 'off'} ({self.lever_origin})")
        parts += [f"{k} {v}" for k, v in self.details.items()]
        if self.threshold_origin not in ("", "prediction"):  # a tuning table's row, or why one was refused
            parts.append(f"threshold: {self.threshold_origin}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"<RoleExplanation {self.line()}>"


@dataclass(frozen=True, repr=False)
class Explanation:
    """What an op would run for a shape on this runtime (``kernel`` and ``role``, "" without m),
    the SM count the guards used, and each guarded role, the first guard first."""

    op: str
    kernel: str
    role: str
    sm_count: int
    roles: tuple[RoleExplanation, ...]

    @staticmethod
    def from_native(d: dict[str, Any]) -> Explanation:
        """The explanation of NativeRuntime.explain's dict."""
        roles = tuple(RoleExplanation(**r) for r in d["roles"])
        return Explanation(d["op"], d["kernel"], d["role"], d["sm_count"], roles)

    def role_explanation(self, role: str) -> RoleExplanation:
        """The row of ``role``; KeyError naming the guarded roles for another."""
        for r in self.roles:
            if r.role == role:
                return r
        raise KeyError(f"{role!r}: no guard of {self.op} speaks of it (guarded roles: "
                       f"{', '.join(r.role for r in self.roles)})")

    def __repr__(self) -> str:
        head = (f"{self.op} runs {self.role} (kernel {self.kernel})" if self.kernel
                else f"{self.op}: each guarded role's smallest M")
        return "\n".join([f"<Explanation {head} at {self.sm_count} SMs",
                          *(f"  {r.line()}" for r in self.roles)]) + ">"


@dataclass(frozen=True)
class Lever:
    """One lever: its [defaults] key, value, provenance ("built-in", "file", "environment",
    "options"), where that came from, and the environment variable that sets it."""

    name: str
    value: bool
    provenance: str
    origin: str
    env_var: str


@dataclass(frozen=True)
class BuildResult:
    """One variant's compile: ``ok``, the reason when not, and the compiler's log."""

    ok: bool
    reason: str | None
    log: str
