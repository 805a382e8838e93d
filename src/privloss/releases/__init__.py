"""The release layer: DP algorithms over an engine's bounded statistics.

* :mod:`privloss.releases.algorithms` - top-k and histogram algorithms
  (known / unknown domain, Laplace, Gumbel, Gaussian);
* :mod:`privloss.releases.calibration` - a group-by's measurements, their
  budget split and calibration; :mod:`privloss.releases.aggregate` adds the
  noise per group;
* :mod:`privloss.releases.consistency` - non-negative integer counts that add up;
* :class:`privloss.releases.release.Release` - a released top-k / histogram.

Nothing here reads data or charges a budget (that is :mod:`privloss.api`).
"""
