"""``python -m tracegrad``: the guided tour of tracegrad on built-in examples, and
``python -m tracegrad show FILE.py:FUNC`` to print the gradient code of your own function."""
import argparse

from . import show, tour


def main(argv=None):
    def add_section_option(p, default):
        p.add_argument("--section", type=int, action="append", default=default,
                       help=f"run only this section (1..{len(tour.SECTIONS)}); may be repeated")
    parser = argparse.ArgumentParser(prog="python -m tracegrad",
                                     description="tracegrad's guided tour (the default command).")
    add_section_option(parser, None)
    sub = parser.add_subparsers(dest="command")
    # SUPPRESS: the subcommand's --section adds to, and does not reset, one given before it
    add_section_option(sub.add_parser("tour", help="run the guided tour (the default)"), argparse.SUPPRESS)
    show_parser = show.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "show":
        return show.run(args, show_parser)
    if args.command in (None, "tour"):
        sections = getattr(args, "section", None)
        if sections and any(not 1 <= s <= len(tour.SECTIONS) for s in sections):
            parser.error(f"sections are numbered 1..{len(tour.SECTIONS)}")
        tour.run(sections)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # e.g. `python -m tracegrad | head`
        import os
        import sys
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
