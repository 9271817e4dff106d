# hgext3rd - namespace package for third-party Mercurial extensions
#
# Mercurial looks for extensions in hgext3rd.NAME; several distributions
# (hg-evolve, this one) each install a part of the namespace.
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
