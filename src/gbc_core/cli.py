"""Command line: ``gbc-core COMMAND`` (same as ``python -m gbc_core COMMAND``)."""

import argparse
import sys


def _cmd_demo(args):
    from ._demo import run_demo

    run_demo(sys.stdout)
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="gbc-core",
        description="Exact-split gradient boosting classifier (the paper's GBC).",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("demo", help="paper example and a real dataset (the default)")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None):
    """Entry point of the ``gbc-core`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from ._version import __version__

        print(__version__)
        return 0
    if args.command is None:
        args = parser.parse_args(["demo"])
    return args.func(args)
