"""``python -m tracegrad``: the guided tour of tracegrad on built-in examples."""
import argparse

from . import tour


def main(argv=None):
    sections = argparse.ArgumentParser(add_help=False)
    sections.add_argument("--section", type=int, action="append",
                          help=f"run only this section (1..{len(tour.SECTIONS)}); may be repeated")
    parser = argparse.ArgumentParser(prog="python -m tracegrad", parents=[sections],
                                     description="tracegrad's guided tour (the default command).")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("tour", parents=[sections], help="run the guided tour (the default)")
    args = parser.parse_args(argv)
    if args.command in (None, "tour"):
        sections = getattr(args, "section", None)
        if sections and any(not 1 <= s <= len(tour.SECTIONS) for s in sections):
            parser.error(f"sections are numbered 1..{len(tour.SECTIONS)}")
        tour.run(sections)


if __name__ == "__main__":
    main()
