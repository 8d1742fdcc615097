"""`python -m cricket_attn.commands.official_results [SOURCE ...]`: do the deliveries table's innings totals and
wickets give every decided match's recorded result, and every chase's target (`make main` runs it)?"""

from __future__ import annotations

import argparse
import sys

from cricket_attn.data.deliveries import config_tables
from cricket_attn.data.official_results import check_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", metavar="SOURCE")
    parser.add_argument("--data", default="ipl")
    args = parser.parse_args(argv)
    result = config_tables(args.data, args.sources or None)
    check = check_results(result.deliveries, result.matches)
    print(f"results reproduced: {check.agree:,} of {check.checked:,} decided matches (no DLS, no super over)")
    print(f"targets reproduced: {check.targets_agree:,} of {check.chases_checked:,} non-DLS chases (first innings + 1)")
    for problem in check.problems:
        print(f"  {problem}")
    return 0 if not check.problems else 1


if __name__ == "__main__":
    sys.exit(main())
