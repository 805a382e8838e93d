"""Privacy units of the corpus readers and the shared-data locator.

The speaker counts are derived here by a method independent of the reader
(line scan, not block splitting), with the recipe beside each number.
"""

import collections
import re

import pytest

from privloss.query import corpora
from privloss.query.corpora import data_file, find_data_file, shakespeare_speaker_words

SHAKESPEARE = find_data_file("shakespeare.txt")
needs_text = pytest.mark.skipif(SHAKESPEARE is None, reason="shakespeare.txt absent (set PRIVLOSS_DATA)")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def _line_scan(path):
    """Headers = lines ending with ':' at the start of the file or right after a blank
    line; verse = other lines ending with ':'. Shell equivalent of the header count:
    awk 'prev=="" && /:$/ {print} {prev=$0}' shakespeare.txt | sort -u | wc -l  -> 309
    (and the data README: "309 distinct speakers", GLOUCESTER 229 speeches)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    headers, verse, speaking = collections.Counter(), set(), set()
    for index, line in enumerate(lines):
        if line.endswith(":"):
            if index == 0 or lines[index - 1] == "":
                headers[line[:-1]] += 1
                if index + 1 < len(lines) and _WORD.search(lines[index + 1].lower()):
                    speaking.add(line[:-1])
            else:
                verse.add(line[:-1])
    return headers, verse, speaking, lines


@pytest.fixture(scope="module")
def table():
    return shakespeare_speaker_words(SHAKESPEARE)


@needs_text
def test_exact_number_of_speakers(table):
    headers, _, speaking, _ = _line_scan(SHAKESPEARE)
    assert len(headers) == 309                             # README and the awk recipe
    # 10 headers have an empty speech in this excerpt (the ghosts of Richard III, V.3:
    # sed -n 11399,11421p shakespeare.txt), so 299 speakers have words
    assert len(speaking) == 299
    assert set(table["speaker"]) == speaking
    assert {name for name in headers if name.startswith("Ghost")} - speaking
    assert headers.most_common(3) == [("GLOUCESTER", 229), ("DUKE VINCENTIO", 193), ("ROMEO", 163)]
    assert "Senators, &C" in set(table["speaker"])          # a header the old pattern missed


@needs_text
def test_no_verse_line_is_a_speaker(table):
    _, verse, _, _ = _line_scan(SHAKESPEARE)
    assert len(verse) == 1539                              # lines ending ':' inside speeches
    assert "And Warwick rages like a chafed bull" in verse
    assert not verse & set(table["speaker"])


@needs_text
def test_every_spoken_word_is_kept(table):
    # words of the whole file minus the words of the header lines
    _, _, _, lines = _line_scan(SHAKESPEARE)
    text = SHAKESPEARE.read_text(encoding="utf-8").lower()
    header_words = sum(len(_WORD.findall(line.lower())) for index, line in enumerate(lines)
                       if line.endswith(":") and (index == 0 or lines[index - 1] == ""))
    assert len(table["word"]) == len(_WORD.findall(text)) - header_words
    assert len(table["word"]) == len(table["speaker"])


def test_blocks_on_a_hand_made_text(tmp_path):
    path = tmp_path / "play.txt"
    path.write_text("ANNE:\nO, tell me:\nwhy not\n\n\n\nRICHARD:\nBecause:\n\nANNE:\nSo\n")
    table = shakespeare_speaker_words(path)
    # "O, tell me:" is verse, not a speaker; several blank lines are one separator
    assert table["speaker"] == ["ANNE"] * 5 + ["RICHARD", "ANNE"]
    assert table["word"] == ["o", "tell", "me", "why", "not", "because", "so"]


def test_a_block_without_header_is_refused(tmp_path):
    path = tmp_path / "play.txt"
    path.write_text("ANNE:\nO, tell me\n\nno header here\nwords\n")
    with pytest.raises(ValueError, match="line 4"):
        shakespeare_speaker_words(path)


def test_locator_env_file_or_folder(tmp_path, monkeypatch):
    (tmp_path / "macbeth.txt").write_text("x")
    (tmp_path / "other.txt").write_text("y")
    monkeypatch.setenv("PRIVLOSS_DATA", str(tmp_path))
    assert data_file("macbeth.txt") == tmp_path / "macbeth.txt"
    monkeypatch.setenv("PRIVLOSS_DATA", str(tmp_path / "macbeth.txt"))
    assert data_file("macbeth.txt") == tmp_path / "macbeth.txt"
    assert data_file("other.txt") == tmp_path / "other.txt"      # beside the given file
    monkeypatch.setenv("PRIVLOSS_DATA", str(tmp_path / "absent"))
    assert find_data_file("macbeth.txt") is None
    with pytest.raises(FileNotFoundError, match="PRIVLOSS_DATA"):
        data_file("macbeth.txt")


def test_locator_walks_up_from_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("PRIVLOSS_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "zz_only_here.txt").write_text("z")
    deep = tmp_path / "checkout" / "src"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert data_file("zz_only_here.txt") == tmp_path / "shared" / "data" / "zz_only_here.txt"
    with pytest.raises(ValueError, match="name"):
        data_file("../zz_only_here.txt")


def test_locator_is_light():
    assert corpora.DATA_VARIABLE == "PRIVLOSS_DATA"


@needs_text
def test_the_documented_example_releases_something(capsys):
    """scripts/analytics_examples.py prints the numbers of docs/analytics.md's
    Shakespeare example (fixed seed)."""
    pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "analytics_examples.py"
    module = runpy.run_path(str(script))
    assert module["main"](["--seed", "2024"]) == 0
    out = capsys.readouterr().out
    assert "spoken words: 194,012; speakers with words: 299" in out
    assert "known-gumbel released 10 of 10" in out
    assert "unknown-gumbel released 0 of 10" in out
