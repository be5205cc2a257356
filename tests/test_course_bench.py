"""course.bench: the committed benchmark results as the lectures read and print them."""
import numpy as np
import pytest

from course import bench, lm
from course.data import Vocab

VOCAB = Vocab.build([["the", "dog", "runs"], ["a", "cat", "sleeps"]])


def test_a_missing_result_names_what_writes_it():
    with pytest.raises(FileNotFoundError, match=r"no-such-bench\.json is missing: run the bench/ script"):
        bench.read("no-such-bench")


def test_the_gru_builders_parameters_are_named_in_the_order_dynet_lists_them():
    """With every weight zero, h_1 = (1 - z) h_0 + z tanh(b_h) and h_0 = 0: the biases named b_z
    and b_h must act as the update gate and the candidate's bias (a swapped order would not)."""
    from autograder.reference.ch05_gru import GRU_BUILDER_ORDER
    assert bench.BUILDER_PARAMETERS["gru"] == GRU_BUILDER_ORDER
    model = lm.RNNLM(VOCAB, "gru", embed=3, hidden=4)
    named = dict(zip(bench.BUILDER_PARAMETERS["gru"], model.layers[0].builder.get_parameters()[0]))
    assert {k: v.shape() for k, v in named.items() if k in ("W_xz", "W_hz", "b_z")} == \
        {"W_xz": (4, 3), "W_hz": (4, 4), "b_z": (4,)}
    for name, parameter in named.items():
        parameter.set_value(np.zeros(parameter.shape()))
    named["b_z"].set_value(np.full(4, 30.0))          # z = 1: h_1 is the candidate
    named["b_h"].set_value(np.array([0.5, -0.5, 1.0, 0.0]))
    import dynet as dy
    dy.renew_cg()
    h1 = model.layers[0].builder.initial_state().add_input(dy.inputVector([1.0, 2.0, 3.0])).output().npvalue()
    assert np.allclose(h1, np.tanh([0.5, -0.5, 1.0, 0.0]), atol=1e-6)
    assert set(bench.builder_parameters(model)) == set(bench.BUILDER_PARAMETERS["gru"])
    assert np.allclose(bench.builder_parameters(model)["b_h"], [0.5, -0.5, 1.0, 0.0])


def test_builder_parameters_refuses_a_hand_written_cell_model():
    with pytest.raises(ValueError, match="only DyNet's"):
        bench.builder_parameters(lm.RNNLM(VOCAB, "srnn", embed=3, hidden=4))


def test_load_weights_puts_the_committed_gru_in_a_builder():
    path = bench.RESULTS / "converge" / "gru-s1-weights.npz"
    weights = np.load(path)
    words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(weights["M"].shape[0] - 3)]
    model = bench.load_weights(Vocab(words), "gru")
    loaded = bench.builder_parameters(model)
    for name in bench.BUILDER_PARAMETERS["gru"]:
        assert np.array_equal(loaded[name], weights[name].astype(np.float32)), name
    assert np.array_equal(model.embeddings.as_array(), weights["M"].astype(np.float32))
    with pytest.raises(FileNotFoundError, match="bench/converge.py --models nothing --seeds 1"):
        bench.load_weights(VOCAB, "nothing")
    with pytest.raises(ValueError, match=f"{weights['M'].shape[0]} words, not {len(VOCAB)}"):
        bench.load_weights(VOCAB, "gru")


def test_tables_print_the_committed_numbers():
    results = bench.converged()
    lstm = results["models"]["lstm"]
    text = bench.test_table({"LSTM": lstm}, results["floor"]["test"])
    row = text.splitlines()[1]
    assert row.startswith("LSTM ") and f"{lstm['params']:,}" in row and f"{lstm['test_ppl']['mean']:6.2f}" in row
    assert row.endswith(f"{lstm['test_ppl']['mean'] / results['floor']['test']:.3f}")
    single = {**lstm, "seeds_complete": [1], "test_ppl": {"mean": 25.0, "low": None, "high": None}}
    assert "(one seed)" in bench.test_table({"one": single}, 20.0)
    header, *ranked = bench.ablation_table(results).splitlines()
    column = header.index("test perplexity")                 # the longest label sets where it starts
    ratios = [float(line[column:].split()[0]) for line in ranked if not line.startswith((" ", "ensemble"))]
    assert ratios == sorted(ratios) and len(ratios) >= 10
    labels = [run["label"] for run in results["models"].values() if run["test_ratio"]["mean"] is not None]
    assert all(any(line.startswith(label + " ") for line in ranked) for label in labels)   # none cut
    markdown = bench.far_agreement_table(results, ["srnn", "lstm"]).splitlines()
    assert len(markdown) == 4 and markdown[2].startswith(f"| {results['models']['srnn']['label']} | ")
    assert bench.interval({"balanced_accuracy": 0.971}, 2) == "0.97"
    assert bench.interval({"mean": 1.1, "low": 1.05, "high": 1.15}) == "1.100 [1.050, 1.150]"
    assert bench.interval({"mean": None}) == "not finished"
    arrows = bench.arrows_table(results).splitlines()
    assert len(arrows) == 2 + len(bench.read("converge/arrows"))
    assert arrows[2].startswith(results["models"][next(iter(bench.read("converge/arrows")))]["label"])
    assert bench.table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |"


def test_a_missing_section_is_refused():
    assert "## " not in bench.section("converge", "The papers' claims on this corpus")
    with pytest.raises(ValueError, match="has no section '## Nothing'"):
        bench.section("converge", "Nothing")


def test_the_samples_table_shows_each_converged_model_and_temperature():
    records = bench.read("samples")
    lines = bench.samples_table(records).splitlines()
    assert len(lines) == 1 + len(records) and all(r["converged"] for r in records)
    first = records[0]
    assert lines[1].startswith(first["label"]) and f"{first['test_ppl']:8.2f}" in lines[1]
    for task, name in (("long number", "number"), ("long gender", "reflexive")):   # each task on its own
        a = first["agreement"][task]
        assert name in lines[0] and f"{a['kept']:4} of {a['kept'] + a['lost']:4} = {a['share']:.0%}" in lines[1]
    pooled = [dict(r, agreement={"long": r["agreement"]["long"]}) for r in records]       # records before the split
    a = first["agreement"]["long"]
    assert f"{a['kept']:4} of {a['kept'] + a['lost']:4} = {a['share']:.0%}" in bench.samples_table(pooled).splitlines()[1]
    assert f"{first['derivable_share']:9.0%}" in lines[1]


def test_the_tbptt_table_lecture_06_reads_is_the_json_beside_it():
    """bench/results/tbptt.md (which lecture 06 reads with read_table) holds every way of
    bench/tbptt.py, with the seeds' mean of bench/results/tbptt.json: a table edited by hand,
    or left from another run, fails."""
    import tbptt  # bench/tbptt.py (pytest puts bench/ on the path)
    rows = {row["trained as"]: row for row in bench.read_table("tbptt")}
    saved = bench.read("tbptt")
    assert list(rows) == list(tbptt.WAYS) == list(saved["means"])
    for way, row in rows.items():
        mean = saved["means"][way]
        assert row["test ppl (mean)"] == f"{mean['test_ppl']:.2f}"
        assert row["per seed"] == " / ".join(f"{p:.2f}" for p in mean["test_ppl_seeds"])
        assert row["/ floor"] == f"{mean['test_ppl'] / saved['floor_test']:.3f}"
        assert len(mean["test_ppl_seeds"]) == saved["seeds"]
    agreement = bench.read_table("tbptt", column="agreement 21+")
    assert [row["trained as"] for row in agreement] == list(tbptt.WAYS)
