"""bench/engine_speed.py: the old loops come from git, the table says whether the numbers agree."""


import engine_speed  # bench/engine_speed.py


def test_the_old_loops_are_read_from_git(tmp_path):
    old = engine_speed.old_module("converge", tmp_path)
    assert callable(old.train_epoch) and callable(old.run)         # the loop this engine replaced
    import converge
    assert not hasattr(converge, "train_epoch")


def test_the_table_row_says_whether_the_perplexities_agree_and_the_speed_ratio():
    same = {"train_ppl": [300.0, 140.0], "valid_ppl": [200.0, 100.0]}
    results = {"old": [{**same, "tokens_per_s": s, "tokens_per_cpu_s": 2 * s} for s in (900.0, 1000.0, 1100.0)],
               "new": [{**same, "tokens_per_s": s, "tokens_per_cpu_s": 2 * s, "engine_share": share}
                       for s, share in ((1000.0, 0.01), (1050.0, 0.5), (5000.0, 0.002))]}
    row = engine_speed.summary("run", results)
    assert row[1] == "train 300.0000 / 140.0000; valid 200.0000 / 100.0000"
    assert row[2:] == ["identical", "yes", "2,000 / 2,100 = 1.05x", "1,000 / 1,050 = 1.05x", "1.00%"]
    results["new"][0] = {**results["new"][0], "valid_ppl": [200.0, 100.01]}
    assert engine_speed.summary("run", results)[2:4] == ["differs by 1.0e-04 (relative)", "no"]


def test_the_engines_own_share_counts_what_the_old_loops_did_not_do():
    """A worker of the engine counts the CPU time of forward/backward and of the trainer's update;
    its own share is what is left of its training CPU time, a small positive fraction."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, engine_speed.__file__, "--worker", "converge", "--which", "new",
                           "--max-sentences", "200"], cwd=engine_speed.BENCH, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert 0.0 < result["engine_share"] < 0.2
