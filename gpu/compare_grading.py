"""Compare two passes of gpu/grade_class.py: status, score, maximum and every check's
verdict of each submission; write the table; exit 1 if any differs (or nothing was graded).

    python gpu/compare_grading.py CPU_RECORDS GPU_RECORDS OUT.md
"""
import json
import sys
from pathlib import Path


def records(path: Path) -> dict:
    return {(r["student"], r["notebook"]): r for r in json.loads(path.read_text())} if path.exists() else {}


def verdicts(record: dict) -> dict:
    return {name: not problems for cell in record.get("cells", []) for name, problems in cell["checks"].items()}


def main(cpu_file: str, gpu_file: str, out: str) -> int:
    cpu, gpu = records(Path(cpu_file)), records(Path(gpu_file))
    rows, differ = [], 0
    for key in sorted(set(cpu) | set(gpu)):
        a, b = cpu.get(key, {}), gpu.get(key, {})
        same = all(a.get(f) == b.get(f) for f in ("status", "score", "max_score")) and verdicts(a) == verdicts(b)
        differ += not same
        passed = sum(verdicts(b).values())
        rows.append(f"| {key[0]} | {key[1]} | {a.get('status')} {a.get('score')}/{a.get('max_score')} "
                    f"| {b.get('status')} {b.get('score')}/{b.get('max_score')} | {passed}/{len(verdicts(b))} "
                    f"| {'same' if same else 'DIFFERENT'} |")
    text = ("# The sample class graded on the CPU and with COURSE_GPU=1\n\n"
            f"{len(rows)} submissions; {differ} differ in status, score or a check's verdict.\n\n"
            "| student | notebook | CPU | COURSE_GPU=1 | checks passed (GPU) | |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
    Path(out).write_text(text)
    print(text)
    return 1 if differ or not rows else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
