import sys
from pathlib import Path

# The synthetic catalogue and records of the evidence tests serve the canary's tests too.
sys.path.insert(0, str(Path(__file__).parents[1] / "evidence"))
