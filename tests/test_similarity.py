"""The similarity report on a class with a verbatim copy, a disguised copy (renamed variables,
lines moved) and independent correct solutions: the copies rank first and above the threshold,
the honest pairs below it; the report is HTML an instructor reads, checked in Chromium."""
import nbformat
import pytest

from autograder import similarity
from autograder.cellmarks import marks
from tests.conftest import ROOT

# one unit of work: each module fixture (the class compared) made once, not once on each worker
pytestmark = pytest.mark.xdist_group("similarity")
CHAPTER = "06_minibatching"

# Three students who wrote chapter 06 on their own, each in their own way.
HONEST_A = {
    "pad_batch": '''def pad_batch(sentences, vocab):
    encoded = [[vocab.index(word) for word in sentence] for sentence in sentences]
    longest = max(len(ids) for ids in encoded)
    inputs, targets, masks = [], [], []
    for position in range(longest + 1):
        row_in, row_out, row_mask = [], [], []
        for ids in encoded:
            previous = vocab.bos if position == 0 else (ids[position - 1] if position - 1 < len(ids) else vocab.eos)
            row_in.append(previous)
            row_out.append(ids[position] if position < len(ids) else vocab.eos)
            row_mask.append(1.0 if position <= len(ids) else 0.0)
        inputs.append(row_in)
        targets.append(row_out)
        masks.append(row_mask)
    return inputs, targets, masks''',
    "masked_batch_nll": '''from course import runtime
dy = runtime.dynet()


def masked_batch_nll(lm, batch):
    inputs, targets, masks = batch
    rnn_state = lm["rnn"].initial_state()
    total = []
    for step in range(len(inputs)):
        embedded = dy.lookup_batch(lm["E"], inputs[step])
        rnn_state = rnn_state.add_input(embedded)
        logits = lm["W_hs"] * rnn_state.output() + lm["b_s"]
        nll = dy.pickneglogsoftmax_batch(logits, targets[step])
        weight = dy.inputTensor(masks[step], batched=True)
        total.append(dy.cmult(nll, weight))
    return dy.sum_batches(dy.esum(total))'''}

HONEST_B = {
    "pad_batch": '''import numpy as np


def pad_batch(sentences, vocab):
    T = 1 + max(map(len, sentences))
    B = len(sentences)
    x = np.full((T, B), vocab.eos, dtype=int)
    y = np.full((T, B), vocab.eos, dtype=int)
    m = np.zeros((T, B))
    x[0, :] = vocab.bos
    for b, words in enumerate(sentences):
        n = len(words)
        ids = list(map(vocab.index, words))
        x[1:n + 1, b] = ids
        y[:n, b] = ids
        m[:n + 1, b] = 1.0
    return x.tolist(), y.tolist(), m.tolist()''',
    "masked_batch_nll": '''from course import runtime
dy = runtime.dynet()


def masked_batch_nll(lm, batch):
    xs, ys, ms = batch
    s = lm["rnn"].initial_state()
    loss = None
    for x, y, m in zip(xs, ys, ms):
        s = s.add_input(dy.lookup_batch(lm["E"], x))
        term = dy.sum_batches(dy.pickneglogsoftmax_batch(dy.affine_transform([lm["b_s"], lm["W_hs"], s.output()]), y)
                              * dy.inputTensor(m, batched=True))
        loss = term if loss is None else loss + term
    return loss'''}

HONEST_C = {
    "pad_batch": '''def pad_batch(sentences, vocab):
    def column(sentence, width):
        ids = [vocab.index(w) for w in sentence]
        padding = width - len(ids)
        read = [vocab.bos] + ids + [vocab.eos] * padding
        predict = ids + [vocab.eos] + [vocab.eos] * padding
        real = [1.0] * (len(ids) + 1) + [0.0] * padding
        return read[:width + 1], predict, real

    width = max(len(s) for s in sentences)
    columns = [column(s, width) for s in sentences]
    transpose = lambda k: [list(row) for row in zip(*(c[k] for c in columns))]
    return transpose(0), transpose(1), transpose(2)''',
    "masked_batch_nll": '''from course import runtime
dy = runtime.dynet()


def masked_batch_nll(lm, batch):
    words_in, words_out, keep = batch
    hidden = []
    state = lm["rnn"].initial_state()
    for ids in words_in:
        state = state.add_input(dy.lookup_batch(lm["E"], ids))
        hidden.append(state.output())
    per_step = [dy.cmult(dy.pickneglogsoftmax_batch(dy.affine_transform([lm["b_s"], lm["W_hs"], h]), out),
                         dy.inputTensor(k, batched=True))
                for h, out, k in zip(hidden, words_out, keep)]
    return dy.sum_batches(dy.esum(per_step))'''}

# HONEST_A's work copied as it is, and copied with every name changed and lines moved about.
DISGUISED = {
    "pad_batch": '''def pad_batch(sents, voc):
    coded = [[voc.index(tok) for tok in snt] for snt in sents]
    mx = max(len(c) for c in coded)
    xs, ys, ms = [], [], []
    for pos in range(mx + 1):
        a, b, c = [], [], []
        for cd in coded:
            b.append(cd[pos] if pos < len(cd) else voc.eos)
            prev = voc.bos if pos == 0 else (cd[pos - 1] if pos - 1 < len(cd) else voc.eos)
            a.append(prev)
            c.append(1.0 if pos <= len(cd) else 0.0)
        ys.append(b)
        xs.append(a)
        ms.append(c)
    return xs, ys, ms''',
    "masked_batch_nll": '''from course import runtime
dy = runtime.dynet()


def masked_batch_nll(model, data):
    ins, outs, msk = data
    st = model["rnn"].initial_state()
    acc = []
    for k in range(len(ins)):
        emb = dy.lookup_batch(model["E"], ins[k])
        st = st.add_input(emb)
        sc = model["W_hs"] * st.output() + model["b_s"]
        w = dy.inputTensor(msk[k], batched=True)
        l = dy.pickneglogsoftmax_batch(sc, outs[k])
        acc.append(dy.cmult(l, w))
    return dy.sum_batches(dy.esum(acc))'''}

CLASS = {"ada": HONEST_A, "ben": HONEST_A, "cy": DISGUISED, "dee": HONEST_B, "eli": HONEST_C}
COPIES = {frozenset(p) for p in (("ada", "ben"), ("ada", "cy"), ("ben", "cy"))}


def write_class(folder, students=CLASS):
    exercise = nbformat.read(ROOT / "exercises" / f"{CHAPTER}.ipynb", as_version=4)
    for student, code in students.items():
        nb = nbformat.from_dict(exercise)
        for cell in nb.cells:
            grade_id = marks(cell).get("grade_id")
            if marks(cell).get("solution") and grade_id in code:
                cell.source = code[grade_id]
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / f"{CHAPTER}.ipynb")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    base = tmp_path_factory.mktemp("similarity")
    write_class(base / "class")
    pairs, notes = similarity.compare(base / "class", CHAPTER, base / "out")
    assert notes == {}, "no honest or plainly copied answer runs code from strings"
    return pairs, base / "out" / f"{CHAPTER}.html"


def test_every_student_writes_working_code(tmp_path):
    """The honest solutions are real answers: the chapter's own visible checks pass them."""
    from course import data
    vocab = data.Vocab(["<unk>", "<s>", "</s>", "a", "b", "c"])
    sentences = [["a", "b"], ["c"], ["a", "b", "c", "x"]]
    solution = {marks(c)["grade_id"]: c.source for c in
                nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4).cells
                if marks(c).get("solution")}
    reference = {}
    exec(solution["pad_batch"], reference)
    expected = reference["pad_batch"](sentences, vocab)
    for student, code in CLASS.items():
        space = {}
        exec(code["pad_batch"], space)
        got = space["pad_batch"](sentences, vocab)
        assert [[[float(v) for v in row] for row in table] for table in got] == \
            [[[float(v) for v in row] for row in table] for table in expected], student


def test_the_copies_rank_first_and_the_honest_pairs_stay_below_the_threshold(report):
    pairs, _ = report
    ranked = [frozenset((a, b)) for _, a, b, *_ in pairs]
    assert set(ranked[:3]) == COPIES, pairs
    flagged = {frozenset((a, b)) for score, a, b, *_ in pairs if score >= similarity.THRESHOLD}
    assert flagged == COPIES, pairs


def test_the_report_is_a_page_an_instructor_reads(report):
    """Opened in Chromium: the pairs side by side, the student's code shown as text, not run."""
    from tests.browser import offline_page
    _, page_file = report
    shots = ROOT / "runs" / "similarity-test"
    shots.mkdir(parents=True, exist_ok=True)
    with offline_page() as page:
        page.goto(page_file.as_uri())
        page.screenshot(path=str(shots / f"{CHAPTER}.png"), full_page=False)
        text = page.inner_text("body")
        cut = page.evaluate("() => Array.from(document.querySelectorAll('.sides pre'))"
                            ".filter(e => e.scrollWidth > e.clientWidth + 1).length")
    assert "ada" in text and "cy" in text and "masked_batch_nll" in text
    assert cut == 0, "a side's lines are cut at its edge: they should wrap"


def test_the_command_line_names_what_is_missing(tmp_path, capsys):
    assert similarity.main([CHAPTER, "--submissions", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "nothing to compare" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        similarity.main(["99_nothing", "--submissions", str(tmp_path)])


# Copies that run HONEST_A's code from strings, each answer cell wrapped whole; and folders named as
# markup and as terminal control sequences (a student chooses her folder's name).
def _wrapped(code: dict, wrap) -> dict:
    return {grade_id: wrap(source) for grade_id, source in code.items()}


def _base64(source):
    import base64
    return f"import base64\nexec(base64.b64decode({base64.b64encode(source.encode()).decode()!r}))"


def _hex_in_pieces(source):
    encoded = source.encode().hex()
    half = len(encoded) // 2
    return f"part = {encoded[:half]!r}\nrest = {encoded[half:]!r}\nexec(bytes.fromhex(part + rest).decode())"


def _zlib_by_getattr(source):
    import base64
    import zlib
    packed = base64.b64encode(zlib.compress(source.encode())).decode()
    return ("import base64, builtins, zlib\n"
            f"getattr(builtins, 'ex' + 'ec')(zlib.decompress(base64.b64decode({packed!r})))")


MARKUP = "<img src=x onerror=alert(1)>"
TERMINAL = "\x1b[2Kfaker\r"
WRAPPED = {"ada": HONEST_A, "b64": _wrapped(HONEST_A, _base64),
           "plain": _wrapped(HONEST_A, lambda source: f"exec({source!r})"),
           "hexed": _wrapped(HONEST_A, _hex_in_pieces), "zipped": _wrapped(HONEST_A, _zlib_by_getattr),
           "dee": HONEST_B, MARKUP: HONEST_C, TERMINAL: HONEST_C}


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory):
    """``python -m autograder.similarity`` (the real command) on a class folder with the copies."""
    import subprocess
    import sys
    base = tmp_path_factory.mktemp("wrapped")
    write_class(base / "class", WRAPPED)
    run = subprocess.run([sys.executable, "-m", "autograder.similarity", CHAPTER, "--submissions",
                          str(base / "class"), "--out", str(base / "out")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout, (base / "out" / f"{CHAPTER}.html").read_text()


def test_code_run_from_strings_is_compared_as_the_code_it_runs(wrapped):
    """Each wrapped copy is flagged with the student it was copied from (it scored 0% before) and
    gets a note; the honest students stay unflagged."""
    out, _ = wrapped
    flagged = {frozenset(line.split()[:3:2]) for line in out.splitlines() if line.endswith("<- look")}
    for copy in ("b64", "plain", "hexed", "zipped"):
        assert frozenset(("ada", copy)) in flagged, out
        assert any(line.startswith(f"note: {copy}: runs code from strings") for line in out.splitlines()), out
    assert not [pair for pair in flagged if pair & {"dee"}], out
    assert "note: zipped: runs code from strings or reaches Python's machinery for it (builtins, exec); " \
           "holds encoded code" in out, out
    assert "note: ada" not in out and "note: dee" not in out


def test_names_are_escaped_in_the_report_and_the_terminal(wrapped):
    """A folder named as an HTML tag is text in the report; one named with escape sequences and a
    carriage return cannot rewrite the instructor's terminal."""
    out, page = wrapped
    assert "\x1b" not in out and "\r" not in out
    assert "\\x1b[2Kfaker\\r" in out
    assert MARKUP not in page and "onerror" not in page.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "\x1b" not in page
    assert "http://" not in page and "https://" not in page, "the report loads nothing from elsewhere"
    from tests.browser import offline_page
    with offline_page() as browser:
        browser.set_content(page)
        assert browser.evaluate("document.querySelectorAll('img').length") == 0
        assert MARKUP in browser.inner_text("body")
