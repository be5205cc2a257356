"""Where things are. Every path in the course is resolved from the repository
root, so notebooks work wherever Jupyter was started."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
COURSE_DATA = DATA / "course"
EXTERNAL_DATA = DATA / "external"
