"""`python -m albert_tf.paper TABLE [--quick | --setting S] [--output_dir DIR]`: print one of the
paper's tables beside the paper's values and write it as Markdown under --output_dir."""

from __future__ import annotations

import argparse
import sys

from albert_tf.paper import TABLES, nsp_sop, params, sharing, throughput


def table_function(name: str):
    """The function that builds table `name`."""
    return {
        "table1": params.table1,
        "table2": throughput.table2,
        "table3": params.table3,
        "table4": params.table4,
        "table5": nsp_sop.table5,
        "sharing": sharing.sharing,
    }[name]


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m albert_tf.paper", description=__doc__)
    parser.add_argument("table", choices=TABLES, help="which table to reproduce")
    parser.add_argument(
        "--quick", action="store_true", help="the quick setting (≤15 min on 2 cores)"
    )
    parser.add_argument(
        "--setting",
        choices=("full", "quick", "tiny"),
        default=None,
        help="scale of the measured tables (tiny: for tests); overrides --quick",
    )
    parser.add_argument("--output_dir", default="paper_output", help="where NAME.md and runs go")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setting = args.setting or ("quick" if args.quick else "full")
    table_function(args.table)(args.output_dir, setting=setting)
    return 0


if __name__ == "__main__":
    sys.exit(main())
