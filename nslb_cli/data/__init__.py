"""MovieLens data for ``env=movielens`` (docs/design.md §3.2) and logged interactions for
``env=logged`` (§3.8), one job per module.

* ``releases`` — where the data lives: the cache folder, and known
  GroupLens releases downloaded once and verified against a pinned MD5;
* ``ratings`` — parse a release folder (ML-100K, ML-1M or CSV format, or
  your own ``ratings.csv`` of ``user,item,rating``) into ratings and movie genres;
* ``als`` — regularised alternating least squares;
* ``clusters`` — k-means of user factors, train/test cluster matching,
  per-cluster Gaussian priors;
* ``prepare`` — filter, split, choose the ALS penalty, factorise, cluster,
  and cache the result;
* ``prepared_cache`` — the cache of prepared arrays, keyed by a hash and
  sealed with a CRC-32;
* ``logs`` — read a log file of ``sequence, t, arm, reward`` rows;
* ``json_cache`` — JSON records a user can read, keyed by a hash and checksummed
  (``env=logged``'s fits).

The command line over it, ``nslb data prepare|path``, is ``nslb_cli.cli.data``. May
import: ``nslb_cli.store`` and ``nslb_cli.common``; it knows nothing of agents,
environments or the run config.

Every problem with the data is a ``DataError``: one line naming the file and what
was expected.
"""

from __future__ import annotations

from nslb_cli.common.errors import ConfigError


class DataError(ConfigError):
    """The MovieLens data cannot be found, downloaded, verified or parsed.

    A ``ConfigError`` whose key is the setting to fix
    (``env.data_dir`` or ``env.release``), so the CLI reports it in one line like any bad setting.
    """


__all__ = ["DataError"]
