# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readers for the real package indexes that dlbox.stack's data is refreshed from.

Maintainer tooling (not shipped in the collection tarball):

- ``dlboxdata.indexes``: Debian/Ubuntu ``Packages`` indexes (live archive or a local copy laid out
  like one), Debian version ordering, ``Depends`` parsing, ``.deb`` download with SHA256 check and
  extraction of one member;
- ``dlboxdata.pypi``: PyPI's JSON API (releases, files, ``requires_dist``, ``requires_python``),
  live or from recorded copies.

Scripts under ``tools/`` import it as ``dlboxdata`` (their own directory is on ``sys.path``).
"""
