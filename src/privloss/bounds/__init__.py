"""Composition theorems as pure functions, one module per family.

=====================  =======================================================
module                 theorems
=====================  =======================================================
``basic``              basic and parallel composition, group privacy
``advanced``           DRV10 advanced composition, KOV Thm 3.5
``optimal_dp``         [CR] Thm 1 (KOV optimal homogeneous DP), exact inversion
``heterogeneous_dp``   Murtagh–Vadhan optimal heterogeneous DP (certified bracket)
``optimal_br``         [CR] Thms 2 and 3 (optimal non-adaptive BR, DP + BR)
``adaptive_sequence``  [CR] Lemma 5.1 (exact adaptive DP/BR recursion, bracket)
``setwise``            [CR] eq. (3), DDR's adaptive BR bound, Lemma 3.4
``zcdp``               zCDP conversions, simple and tight (CKS)
``rdp``                exact worst-case Renyi curves of DP and BR
``gaussian``           [CR] Section 6: Lemmas 6.1-6.3
=====================  =======================================================

Nothing here imports privloss outside ``privloss.bounds``.
"""

from privloss.bounds._numeric import Bracket

__all__ = ["Bracket"]
