"""Numbers of the Shakespeare worked example in docs/analytics.md, regenerated.

Run from a checkout (the data is found in ``shared/data`` beside it, or via
``PRIVLOSS_DATA``)::

    .venv/bin/python scripts/analytics_examples.py [--seed 2024]

It prints every number that the example's section quotes. The seed makes the
run reproducible and is therefore insecure: a real release omits it.
"""

from __future__ import annotations

import argparse
import collections

#: A public word list chosen independently of the data: the 25 most common words of
#: English in the Oxford English Corpus ("I" lower-cased, as the reader does).
DOMAIN = ("the", "be", "to", "of", "and", "a", "in", "that", "have", "i", "it", "for", "not", "on",
          "with", "he", "as", "you", "do", "at", "this", "but", "his", "by", "from")
#: Each speaker counts at most once per word (linf = 1); l0 unrestricted (None): the
#: known-domain Gumbel algorithm is valid without it.
LINF, K, EPSILON, DELTA = 1, 10, 1.0, 1e-6
#: The unknown-domain attempt reads the top D_BAR counts.
D_BAR = 100


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2024, help="insecure, reproducible seed")
    args = parser.parse_args(argv)

    import pyarrow as pa

    import privloss
    from privloss.query.corpora import data_file, shakespeare_speaker_words
    from privloss.query.engines import bounded_histogram

    columns = shakespeare_speaker_words(data_file("shakespeare.txt"))
    rows = pa.table(columns)
    speakers = collections.Counter(columns["speaker"])
    print(f"spoken words: {len(columns['word']):,}; speakers with words: {len(speakers):,} "
          f"(largest: {max(speakers.values()):,} words)")

    # known domain: the released top-10 of the public list (the documented call)
    release = privloss.topk(rows, privacy_unit="speaker", item="word", k=K, epsilon=EPSILON, delta=DELTA,
                            l0=None, linf=LINF, domain=list(DOMAIN), seed=args.seed)
    truth = bounded_histogram(rows, user_column="speaker", item_column="word", l0=None,
                              linf=LINF, domain=list(DOMAIN), seed=args.seed)
    print("true counts (speakers using the word), top 5: " + ", ".join(
        f"{item} {int(count)}" for item, count in list(zip(truth.items, truth.counts))[:5]))
    print(f"known-gumbel released {len(release.items)} of {K}: {release!r}")
    for row in release.rows():
        print(f"  {row}")
    print("events: " + ", ".join(str(event) for event in release.events))

    # unknown domain: the same budget over the top D_BAR words
    unknown = privloss.topk(rows, privacy_unit="speaker", item="word", k=K, epsilon=EPSILON, delta=DELTA,
                            l0=None, linf=LINF, d_bar=D_BAR, seed=args.seed)
    top = bounded_histogram(rows, user_column="speaker", item_column="word", l0=None, linf=LINF,
                            top=D_BAR + 1, seed=args.seed)
    offset = float(unknown.parameters["threshold_offset"])
    base = int(top.counts[D_BAR])
    print(f"unknown-gumbel released {len(unknown.items)} of {K}: threshold = count at rank "
          f"{D_BAR + 1} ({base}) + offset {offset:.1f} = {base + offset:.1f}; largest count "
          f"{int(top.counts[0])}, at most {len(speakers)} (one per speaker)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
