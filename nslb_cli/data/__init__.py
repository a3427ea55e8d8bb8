"""MovieLens data for ``env=movielens`` (docs/design.md §3.2), one job per module.

* :mod:`~nslb_cli.data.releases` — where the data lives: the cache folder, and known
  GroupLens releases downloaded once and verified against a pinned MD5;
* :mod:`~nslb_cli.data.ratings` — parse a release folder (ML-100K, ML-1M or CSV format, or
  your own ``ratings.csv`` of ``user,item,rating``) into ratings and movie genres;
* :mod:`~nslb_cli.data.als` — regularised alternating least squares;
* :mod:`~nslb_cli.data.clusters` — k-means of user factors, train/test cluster matching,
  per-cluster Gaussian priors;
* :mod:`~nslb_cli.data.prepare` — filter, split, choose the ALS penalty, factorise, cluster,
  and cache the result;
* :mod:`~nslb_cli.data.prepared_cache` — the cache of prepared arrays, keyed by a hash and
  sealed with a CRC-32.

The command line over it, ``nslb data prepare|path``, is :mod:`nslb_cli.cli.data`. May
import: :mod:`nslb_cli.store` and :mod:`nslb_cli.common`; it knows nothing of agents,
environments or the run config.

Every problem with the data is a :class:`DataError`: one line naming the file and what
was expected.
"""

from __future__ import annotations

from nslb_cli.common.errors import ConfigError


class DataError(ConfigError):
    """The MovieLens data cannot be found, downloaded, verified or parsed.

    A :class:`~nslb_cli.common.errors.ConfigError` whose key is the setting to fix
    (``env.data_dir`` or ``env.release``), so the CLI reports it in one line like any bad setting.
    """


__all__ = ["DataError"]
