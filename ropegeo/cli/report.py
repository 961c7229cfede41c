"""``python -m ropegeo report TARGET``: the three-gate audit from the command line (a MODULE:FUNCTION
target runs in a worker process, :mod:`ropegeo.gates.a.isolated`; the gates are judged here)."""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.gates.a.isolated import refuse_special_file, remote_implementation, timeout_seconds
from ropegeo.gates.procedure import audit
from ropegeo.gates.b.rule import add_rule_arguments, rule_from_arguments
from ropegeo.margins import MAX_OFFSETS
from ropegeo.models.manifest import resolve

__all__ = ["add_report_subcommand", "parse_offsets", "run_report_subcommand"]


def parse_offsets(text: str) -> np.ndarray:
    """Offsets from a list such as ``"1-64,128,1000-1003"`` (inclusive ranges); a ValueError naming
    ``--offsets`` for anything else, a reversed range or too many offsets."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("--offsets must be a comma-separated list of offsets or ranges, e.g. 1-64,128")
    parts, total = [], 0
    for item in text.split(","):
        item = item.strip()
        try:
            if "-" in item[1:]:
                lo, hi = (int(x) for x in item.split("-", 1))
            else:
                lo = hi = int(item)
        except ValueError:
            raise ValueError(f"--offsets: {item!r} is neither an integer nor a range a-b") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"--offsets: {item!r} must be a non-negative offset or an increasing range a-b")
        total += hi - lo + 1
        if total > MAX_OFFSETS:
            raise ValueError(f"--offsets lists more than {MAX_OFFSETS:,} offsets")
        parts.append(np.arange(lo, hi + 1, dtype=np.float64))
    return np.unique(np.concatenate(parts))


def add_report_subcommand(sub) -> None:
    """Register ``report`` (the three-gate audit) on an argparse subparsers object."""
    p = sub.add_parser(
        "report",
        help="the three-gate audit of a model configuration or an implementation, with a verdict",
        description="Run Gate A (algebra), Gate B (separation margins of the task's offsets) and, with "
        "--gate-c, Gate C (toy heads trained on the ruler), and print the verdict: the first gate that "
        "fails and the kind of intervention it calls for. A MODULE:FUNCTION target runs in a separate "
        "process, as in gate-a: what it prints is kept out of the report, and an import or call that hangs is "
        "stopped after --timeout seconds. Exit status 0 when every gate that ran passes, 1 "
        "when one fails, 3 when none fails but Gate A or B (or a Gate C that ran) is inconclusive, 2 for bad "
        "arguments, a contract break or a timeout.",
    )
    p.add_argument("target", help="a shipped model name (e.g. llama-3.1-8b), a config.json path, or an "
                   "implementation as MODULE:FUNCTION")
    p.add_argument("--config", "--manifest", dest="config", default=None, metavar="NAME_OR_PATH",
                   help="the operator a MODULE:FUNCTION target declares: a shipped model name or a config.json "
                   "(required for an implementation: report never assumes a pairing, width or base)")
    p.add_argument("--offsets", default=None,
                   help="offsets the task must tell apart, e.g. 1-64,1000 (default: 1..64 and 48 log-spaced)")
    p.add_argument("--train-length", type=int, default=None, help="training context (default: the config's)")
    p.add_argument("--target-length", type=int, default=None, help="context to serve (default: the config's)")
    add_rule_arguments(p)
    p.add_argument("--gate-c", action="store_true", help="also run Gate C (trains toy heads: seconds)")
    p.add_argument("--seeds", type=int, default=1, help="Gate C seeds (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--layer-type", default=None, metavar="TYPE",
                   help="the kind of layer to audit when the model's layers differ (e.g. full_attention or "
                   "sliding_attention for Gemma 3 or gpt-oss)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="with MODULE:FUNCTION: seconds one import or call of the implementation may take "
                   "(default 60); it runs in a separate process, stopped after that")
    p.set_defaults(func=run_report_subcommand)


def run_report_subcommand(args) -> int:
    """Run ``report`` from parsed arguments; returns :data:`ropegeo.gates.verdicts.EXIT_CODES` of the outcome."""
    target, declared, implementation = args.target, None, None
    timeout = timeout_seconds(args.timeout)
    if isinstance(target, str) and ":" in target and not target.lower().endswith(".json"):
        if args.config is None:
            raise ValueError(f"report {target} needs the operator your code declares: give --config NAME_OR_PATH "
                             "(a shipped model or a config.json); ropegeo does not assume a pairing, head width or base")
        refuse_special_file("--config", args.config)
        declared = resolve(args.config, layer_type=args.layer_type)
        target, implementation = None, target
    elif args.config is not None:
        raise ValueError("--config declares a MODULE:FUNCTION target; a configuration declares itself")
    else:
        refuse_special_file("target", target)
        if args.layer_type is not None:
            target = resolve(target, layer_type=args.layer_type)
    offsets = None if args.offsets is None else parse_offsets(args.offsets)
    seeds = v.integer("--seeds", args.seeds, minimum=1, maximum=10)
    rule, min_margin = rule_from_arguments(args)
    options = dict(manifest=declared, train_length=args.train_length, target_length=args.target_length,
                   gate_b_rule=rule, min_margin=min_margin, gate_c=bool(args.gate_c),
                   gate_c_options={"seeds": tuple(range(seeds))})
    try:
        if implementation is None:
            report = audit(target, offsets, **options)
        else:
            with remote_implementation(implementation, timeout) as impl:
                report = audit(impl, offsets, **options)
            report.gate_a.notes.extend(impl.notes)
    except ValueError as exc:
        if str(exc).startswith("offsets ("):  # name the option the offsets came from
            raise ValueError(f"--{exc}") from None
        raise
    print(report.to_json(indent=2) if args.json else report.table())
    return report.exit_code
