"""``python -m ropegeo gate-a MODULE:FUNCTION``: Gate A from the command line (the implementation runs
in a worker process, :mod:`ropegeo.gates.a.isolated`; Gate A is judged here)."""

from __future__ import annotations

from ropegeo.gates.a.axes import GateAxesReport
from ropegeo.gates.a.gate import ATTENTION_FACTOR_IN, GateAReport
from ropegeo.gates.a.isolated import run_in_worker, timeout_seconds
from ropegeo.gates.verdicts import EXIT_CODES

__all__ = ["add_subcommand", "run_subcommand"]


def add_subcommand(sub) -> None:
    """Register ``gate-a`` on an argparse subparsers object (used by :mod:`ropegeo.cli.main`)."""
    p = sub.add_parser(
        "gate-a",
        help="Gate A: audit a rotary implementation given as MODULE:FUNCTION",
        description="Run the Gate A checks on an importable rotary implementation f(x, positions) "
        "(optionally with a role keyword and prefill/decode_step methods). The implementation runs in a "
        "separate process: what it prints is kept out of the report, and an import or call that hangs is "
        "stopped after --timeout seconds. Exit status 0 for PASS, 1 when a check fails, 2 for "
        "bad arguments, a contract break or a timeout, 3 when inconclusive (a core check could not be measured, or a "
        "tolerance reaches the largest error its check can see: no check failed, but Gate A cannot say PASS), 130 "
        "when interrupted.",
    )
    p.add_argument("target", help="the implementation, as MODULE:FUNCTION (a class is built with no arguments)")
    p.add_argument("--config", default=None, metavar="NAME_OR_PATH",
                   help="declare the operator from a model configuration (a config.json path or a shipped name, "
                   "e.g. llama-3.1-8b): frequencies (any scaling rule), head and rotary dim, pairing, attention "
                   "factor and context")
    p.add_argument("--target-length", type=int, default=None,
                   help="with --config: the sequence length the frequencies are formed for (dynamic rules) and the "
                   "context probed")
    p.add_argument("--layer-type", default=None, metavar="TYPE",
                   help="with --config: the kind of layer whose rotary operator to audit when the model's layers "
                   "differ (full_attention or sliding_attention for Gemma 2/3 or gpt-oss)")
    p.add_argument("--mrope-section", type=_section_arg, default=None, metavar="T,H,W",
                   help="multi-axis RoPE (M-RoPE): the pairs following the time, height and width ids (e.g. "
                   "16,24,24); the implementation then takes positions of shape (3, seq) or (3, batch, seq), and "
                   "each axis is checked. A --config with mrope_section declares it itself")
    p.add_argument("--mrope-interleaved", action="store_true", default=None,
                   help="with --mrope-section: the axes interleaved pair by pair (Qwen3-VL) instead of in blocks")
    p.add_argument("--head-dim", type=int, default=None, help="head dimension to test (default: probe 8..256)")
    p.add_argument("--base", type=float, default=None, help="declared frequency base (default 10000)")
    p.add_argument("--pairing", default=None, help="declared pairing: 'interleaved' (default) or 'half'")
    p.add_argument("--rotary-dim", type=int, default=None, help="declared partial rotary dimension")
    p.add_argument("--scale", type=float, default=None, help="declared position scale (default 1)")
    p.add_argument("--attention-factor", type=float, default=None,
                   help="declared attention factor (YaRN, LongRoPE; default 1, or the config's, which it replaces "
                   "with a note); required on cos and sin unless --attention-factor-in softmax")
    p.add_argument("--attention-factor-in", default=None, choices=ATTENTION_FACTOR_IN,
                   help="where the attention factor is applied: rotation (cos and sin multiplied by it, as "
                   "transformers does; the default) or softmax (the attention multiplies its logits by its "
                   "square; the rotation must keep unit length)")
    p.add_argument("--phase-dtype", default=None, help="coarsest accepted angle precision (default float32)")
    p.add_argument("--dtype", default=None,
                   help="the data dtype the implementation computes in (float64, float32, float16, bfloat16; "
                   "default: inferred from what it returns and how it rounds)")
    p.add_argument("--max-position", type=int, default=None,
                   help="declared context: positions up to it are probed (default 131072, or the config's)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds one import or call of the implementation may take (default 60)")
    p.add_argument("--seed", type=int, default=None, help="seed of the random vectors (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run_subcommand)


def _section_arg(text: str) -> list[int]:
    """``--mrope-section 16,24,24`` as a list of ints (checked against the head by the multi-axis gate)."""
    try:
        return [int(t) for t in text.split(",")]
    except ValueError:
        raise ValueError(f"--mrope-section must be three integers like 16,24,24, got {text!r}") from None


#: the command-line options that declare the operator (none given: the defaults are assumed)
_DECLARING = ("config", "base", "pairing", "rotary_dim", "scale", "attention_factor", "layer_type", "mrope_section")


def _undeclared_note(args, report) -> str | None:
    """When nothing was declared and the layout or frequencies fail: the defaults assumed, and what was read."""
    if any(getattr(args, k, None) is not None for k in _DECLARING):
        return None
    if not {"layout", "frequencies"} & set(report.failed):
        return None
    inf = report.inferred
    seen = [f"{ {'half': 'half-split'}.get(inf['pairing'], inf['pairing'])} pairs"] if inf.get("pairing") else []
    if inf.get("schedule_fits"):  # every pair within its own measurement tolerance of one schedule
        seen.append(f"frequencies fitting base {inf['base']:,.6g} (scale {inf['scale']:.4g})")
    elif inf.get("schedule_fits") is not None:
        seen.append("frequencies that are not one geometric schedule (a scaling rule such as Llama 3's or YaRN's?)")
    read = f"; the implementation reads as {', '.join(seen)}" if seen else ""
    return ("nothing about the operator was declared, so it was compared with the defaults (interleaved pairs, "
            f"base 10,000, no scaling){read}. Declare what it should be: --config NAME_OR_PATH (a model's "
            "config.json or a shipped name), or --pairing, --base, --rotary-dim, --scale")


def run_subcommand(args) -> int:
    """Run ``gate-a`` from parsed arguments; returns 0 (pass), 1 (a check failed) or 3 (inconclusive)."""
    timeout_seconds(args.timeout)
    data, notes = run_in_worker(args)
    report = (GateAxesReport if "axes" in data else GateAReport).from_dict(data)  # M-RoPE: its own core checks
    report.notes.extend(notes)
    undeclared = _undeclared_note(args, report)
    if undeclared:
        report.notes.append(undeclared)
    print(report.to_json(indent=2) if args.json else report.table(legend=True))
    return EXIT_CODES[report.status]
