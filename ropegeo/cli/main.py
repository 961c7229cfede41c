"""Command line: ``python -m ropegeo SUBCOMMAND ...``: the parser, ``audit``, and the exit statuses
(:mod:`ropegeo.cli`; 130 for Ctrl-C, 128 + the signal for SIGTERM and SIGHUP, each one line)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from ropegeo import __version__
from ropegeo.cli.gate_a import add_subcommand as _add_gate_a
from ropegeo.cli.report import add_report_subcommand as _add_report
from ropegeo.gates.procedure import geometry_audit
from ropegeo.gates.b.rule import add_rule_arguments, rule_from_arguments
from ropegeo.gates.layers import layer_audit
from ropegeo.gates.verdicts import EXIT_CODES
from ropegeo.models.manifest import layer_kinds, resolve

__all__ = ["main", "build_parser"]


class UsageError(Exception):
    """Bad command-line input: reported as one line on stderr with exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, not usage plus message."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message}")


def _add_audit(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="geometry audit of a rotary operator: a model configuration or plain numbers",
        description="Audit the geometry of a RoPE operator: relative-law error, adjacent similarity, the most "
        "identity-like offsets, slow pairs and Gate B's separation margins, each with its verdict and threshold. "
        "With --config the operator is the model's; otherwise --head-dim, --base, --pairing, --rotary-dim, "
        "--train-length and --interpolate define it. Gate B is the one `report` runs: same model, same margins, "
        "same rule. Exit status 0 when everything passes, 1 when a check fails, 3 when Gate B is inconclusive.",
    )
    p.add_argument("--head-dim", type=int, default=None, help="head dimension (even, >= 2; default 128)")
    p.add_argument("--base", type=float, default=None, help="frequency base (> 1; default 10000)")
    p.add_argument("--train-length", type=int, default=None, help="training context (>= 2; default 4096)")
    p.add_argument("--target-length", type=int, default=None,
                   help="target context (>= 3; default 32768, or the configuration's own with --config)")
    p.add_argument("--interpolate", action="store_true", help="apply linear position interpolation")
    p.add_argument("--pairing", default=None, help="'interleaved' or 'half' (default interleaved)")
    p.add_argument("--rotary-dim", type=int, default=None, help="partial rotary dimension (even, <= head dim)")
    p.add_argument("--search-limit", type=int, default=None,
                   help="largest offset searched (default: the last offset attention sees)")
    p.add_argument("--top", type=int, default=None, help="how many distant offsets to report (default 1; 3 with --config)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--config", default=None, metavar="PATH_OR_NAME",
                   help="audit a model: a config.json path or a shipped name (e.g. llama-3.1-8b); the operator, "
                   "training length and attention window then come from it, --target-length defaults to the "
                   "context it is built for, and --top to 3")
    p.add_argument("--layer-type", default=None, metavar="TYPE",
                   help="with --config: the kind of layer to audit when the model's layers differ (e.g. "
                   "full_attention or sliding_attention for Gemma 3 or gpt-oss)")
    add_rule_arguments(p)
    p.set_defaults(func=_run_audit)


#: Options that define the operator from plain numbers, refused beside --config.
_PLAIN = ("head_dim", "base", "train_length", "pairing", "rotary_dim")


def _run_audit(args) -> int:
    rule, min_margin = rule_from_arguments(args)
    common = dict(target_length=args.target_length, search_limit=args.search_limit, gate_b_rule=rule,
                  min_margin=min_margin)
    if args.config is not None:
        given = [f"--{k.replace('_', '-')}" for k in _PLAIN if getattr(args, k) is not None]
        if given or args.interpolate:
            raise ValueError(f"{', '.join(given) or '--interpolate'}: the configuration defines the operator; "
                             "drop these options or drop --config")
        top = 3 if args.top is None else args.top
        if args.layer_type is None and len(layer_kinds(args.config)) > 1:  # layers differ: every kind, NoPE named
            report = layer_audit(args.config, top=top, **common)
        else:
            report = geometry_audit(resolve(args.config, layer_type=args.layer_type), top=top, **common)
    else:
        if args.layer_type is not None:
            raise ValueError("--layer-type applies to --config only")
        plain = {k: getattr(args, k) for k in _PLAIN if getattr(args, k) is not None}
        report = geometry_audit(interpolate=args.interpolate, top=1 if args.top is None else args.top,
                                **plain, **common)
    print(report.to_json(indent=2) if args.json else report.table())
    return EXIT_CODES[report.outcome]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ropegeo", description="Audit rotary position embeddings.")
    parser.add_argument("--version", action="version", version=f"ropegeo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    _add_audit(sub)
    _add_gate_a(sub)
    _add_report(sub)
    return parser


class _Stopped(BaseException):
    """SIGTERM or SIGHUP reached the command: unwind (the worker and its folder are cleaned up on the way)."""


def _stop(signum, frame):
    for sig in _STOPPING:  # a second signal does not interrupt the cleanup
        signal.signal(sig, signal.SIG_IGN)
    raise _Stopped(signum)


_STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))  # no SIGHUP on Windows


def main(argv=None) -> int:
    """Run the command line; returns the exit status (128 + the signal's number for SIGTERM or SIGHUP)."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers need the main thread
        return _main(argv)
    previous = {sig: signal.signal(sig, _stop) for sig in _STOPPING}
    try:
        return _main(argv)
    except _Stopped as exc:
        number = exc.args[0]
        print(f"ropegeo: stopped by {signal.Signals(number).name}", file=sys.stderr)
        return 128 + number
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _main(argv) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UsageError as exc:
        print(_one_line(str(exc)), file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"ropegeo: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ropegeo: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help, --version: printed; their status, not the interpreter's exit
        if exc.code in (0, None):
            return 0
        raise
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`): stop quietly
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - let the interpreter's final flush succeed
        except OSError:
            pass
        return 0


def _one_line(text: str) -> str:
    """Errors are one line on stderr: fold any line breaks a message carries."""
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
