"""``python -m analysis_utils.claims`` moved to ``python -m analysis_utils claims``.

The registry's report reads the ledger's claims (which rows test which entry), and the registry
sits below the ledger, so its command lives with the other commands (issue 41: no import runs
back up). This stub imports nothing of the ledger; it says where the command went.
"""

import sys

if __name__ == "__main__":
    command = " ".join(["python -m analysis_utils claims", *sys.argv[1:]])
    print(f"error: the claims report moved: run `{command}`", file=sys.stderr)
    sys.exit(2)
