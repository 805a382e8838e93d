"""Attacks that show why the mechanisms add the noise they do (demonstrations)."""

from privloss.attacks.reconstruction import (AttackOutcome, LaplaceSubsetSums,
                                             ReconstructionResult, bounded_noise_answers,
                                             demonstrate_attack, fraction_recovered,
                                             random_database, random_subset_queries,
                                             reconstruct_exhaustive, reconstruct_lp, subset_sums)

__all__ = [
    "AttackOutcome", "LaplaceSubsetSums", "ReconstructionResult", "bounded_noise_answers",
    "demonstrate_attack", "fraction_recovered", "random_database", "random_subset_queries",
    "reconstruct_exhaustive", "reconstruct_lp", "subset_sums",
]
