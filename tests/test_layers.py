# test_layers.py - the package's folders are its layers, and imports only go
# down them; the engine imports without Mercurial
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The layers of docs/design.rst, bottom up, each a folder of
hgext3rd/backgroundclose/:

- the engine (engine/): imports nothing from the other layers, and
  nothing from Mercurial;
- what the seams share (shared/): imports the engine;
- the seams (stream/, changegroup/, checkout/): each imports the engine
  and shared/, never another seam;
- the face (the package's __init__.py, and face/): imports the seams,
  shared/ and the engine.

A module may import any module of its own folder, and of any layer below
its own; every other import of the extension's (relative or absolute, at
the top of a module or inside a function) goes up or sideways, and fails
here with the module and the import named.  A module outside every
folder of the table (a new one beside __init__.py, or a new folder)
fails too, until it is given a layer.
"""

import ast
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PACKAGE = 'hgext3rd.backgroundclose'
PACKAGE_DIR = os.path.join(ROOT, 'hgext3rd', 'backgroundclose')

# folder (first name below the package) -> layer
LAYERS = {
    'engine': 0,
    'shared': 1,
    'stream': 2,
    'changegroup': 2,
    'checkout': 2,
    'face': 3,  # with the package's __init__.py
}
LAYER_NAMES = ['the engine', 'shared', 'a seam', 'the face']
# packages the engine must not import
MERCURIAL = ('mercurial', 'hgext', 'hgdemandimport')


def modules(top):
    """(dotted name below the package, path, is a package) of every Python
    module under ``top``, the package's directory"""
    found = []
    for directory, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        rel = os.path.relpath(directory, top)
        parts = [] if rel == '.' else rel.split(os.sep)
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            if name == '__init__.py':
                found.append(('.'.join(parts), path, True))
            else:
                found.append(('.'.join(parts + [name[:-3]]), path, False))
    return found


def _is_module(top, dotted):
    """whether ``dotted`` (below the package) names a module or package:
    a .py file, a folder with __init__.py, or a C module's source"""
    path = os.path.join(top, *dotted.split('.')) if dotted else top
    return (
        os.path.isfile(path + '.py')
        or os.path.isfile(os.path.join(path, '__init__.py'))
        or os.path.isfile(path + '.c')
    )


def imports(top, name, path, ispackage):
    """(line, source text, target) of every import in the module at
    ``path``: target is the dotted name below the package of what it
    imports from the extension, or ``('mercurial', name)`` for a module
    of Mercurial's"""
    with open(path, encoding='utf-8') as fp:
        source = fp.read()
    tree = ast.parse(source, path)
    here = name.split('.') if name else []
    package = here if ispackage else here[:-1]
    found = []

    def add(node, target):
        text = ast.get_source_segment(source, node) or ''
        found.append((node.lineno, ' '.join(text.split()), target))

    def ours(dotted):
        """``dotted`` (absolute) below the package, or None"""
        if dotted == PACKAGE:
            return ''
        if dotted.startswith(PACKAGE + '.'):
            return dotted[len(PACKAGE) + 1:]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] in MERCURIAL:
                    add(node, ('mercurial', alias.name))
                target = ours(alias.name)
                if target is not None:
                    add(node, target)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                module = node.module or ''
                if module.split('.')[0] in MERCURIAL:
                    add(node, ('mercurial', module))
                    continue
                base = ours(module)
                if base is None:
                    continue
            else:
                up = node.level - 1
                if up > len(package):
                    raise AssertionError(
                        '%s:%d: %s imports above the package'
                        % (path, node.lineno, name or '__init__'))
                parts = package[:len(package) - up]
                if node.module:
                    parts = parts + node.module.split('.')
                base = '.'.join(parts)
            for alias in node.names:
                # ``from x import y``: the module x.y if there is one,
                # else a name of x's
                sub = (base + '.' + alias.name) if base else alias.name
                add(node, sub if _is_module(top, sub) else base)
    return found


def layer(dotted):
    """(folder, layer) of a dotted name below the package; layer None: in
    no folder of LAYERS"""
    parts = dotted.split('.') if dotted else []
    if len(parts) == 1 and parts[0] not in LAYERS:
        return dotted, None  # a module beside __init__.py
    # the package's __init__.py and face/ are one folder, the face's
    folder = parts[0] if parts else 'face'
    return folder, LAYERS.get(folder)


def violations(top=PACKAGE_DIR):
    """what breaks the layers in the package at ``top``, one line each"""
    found = []
    for name, path, ispackage in modules(top):
        where = os.path.relpath(path, ROOT)
        folder, rank = layer(name)
        label = name or '__init__'
        if rank is None:
            found.append('%s: %s is in no layer (LAYERS in %s)'
                         % (where, label, os.path.basename(__file__)))
            continue
        for line, text, target in imports(top, name, path, ispackage):
            if isinstance(target, tuple):
                if rank == 0:
                    found.append(
                        '%s:%d: %s (the engine) imports Mercurial: %s'
                        % (where, line, label, text))
                continue
            tfolder, trank = layer(target)
            if tfolder == folder:
                continue  # its own folder
            if trank is not None and trank < rank:
                continue  # down
            if trank is None:
                how = 'into no layer'
            elif trank == rank:
                how = 'sideways, to %s/' % tfolder
            else:
                how = 'up, to %s' % LAYER_NAMES[trank]
            found.append(
                '%s:%d: %s (%s) imports %s, %s: %s'
                % (where, line, label, LAYER_NAMES[rank],
                   target or '__init__', how, text))
    return found


def test_imports_only_go_down():
    found = violations()
    assert not found, 'imports that do not go down:\n' + '\n'.join(found)


def test_every_module_is_read():
    """the walk finds the modules it should: a layer test that reads
    nothing passes whatever the imports"""
    names = {name for name, _, _ in modules(PACKAGE_DIR)}
    assert {'', 'engine', 'engine.policy', 'shared.session', 'stream.apply',
            'changegroup.revlogs', 'checkout.batchget',
            'face.probe'} <= names
    edges = {
        target
        for name, path, ispackage in modules(PACKAGE_DIR)
        if name == 'stream.apply'
        for _, _, target in imports(PACKAGE_DIR, name, path, ispackage)
    }
    assert {'engine', 'engine.policy', 'shared.session', 'stream.opens',
            ('mercurial', 'mercurial')} <= edges


def _package(tmp_path, files):
    """a package of ``files`` (path below it -> source) in ``tmp_path``,
    every folder with an __init__.py"""
    top = tmp_path / 'pkg'
    for rel, source in dict({'__init__.py': ''}, **files).items():
        path = top / rel
        for parent in reversed(path.relative_to(top).parents):
            (top / parent).mkdir(exist_ok=True)
            init = top / parent / '__init__.py'
            if not init.exists():
                init.write_text('')
        path.write_text(textwrap.dedent(source))
    return str(top)


@pytest.mark.parametrize('files, expected', [
    # down: none
    ({'stream/a.py': 'from .. import engine\nfrom ..shared import s\n',
      'shared/s.py': 'from ..engine import policy\n',
      'engine/policy.py': 'import os\n',
      'face/f.py': 'from ..stream import a\n'}, []),
    # up, inside a function
    ({'engine/policy.py': 'def f():\n    from ..shared import s\n',
      'shared/s.py': ''},
     ['engine/policy.py:2: engine.policy (the engine) imports shared.s, '
      'up, to shared: from ..shared import s']),
    # sideways, from a seam's package to another's
    ({'checkout/b.py': 'from .. import stream\n', 'stream/a.py': ''},
     ['checkout/b.py:1: checkout.b (a seam) imports stream, sideways, to '
      'stream/: from .. import stream']),
    # up, absolute, to the face
    ({'shared/s.py': 'import hgext3rd.backgroundclose\n'},
     ['shared/s.py:1: shared.s (shared) imports __init__, up, to the '
      'face: import hgext3rd.backgroundclose']),
    # the engine and Mercurial
    ({'engine/x.py': 'from mercurial import util\n'},
     ['engine/x.py:1: engine.x (the engine) imports Mercurial: from '
      'mercurial import util']),
    # a module in no layer
    ({'stray.py': ''}, ['stray.py: stray is in no layer']),
])
def test_the_check_fails(tmp_path, files, expected):
    """the check itself, on packages made up for it"""
    top = _package(tmp_path, files)
    found = violations(top)
    # paths relative to the made-up package, for the comparison
    prefix = os.path.relpath(top, ROOT) + os.sep
    found = [f[len(prefix):] if f.startswith(prefix) else f for f in found]
    found = [f.split(' (LAYERS in ')[0] for f in found]
    assert found == expected


def test_engine_imports_without_mercurial():
    """the engine, its C modules with it where built, in a Python where
    Mercurial cannot be imported.  The package's __init__.py (the face,
    which imports Mercurial) is not run: a package of the same name and
    path stands in for it, so that whatever the engine imports from
    outside itself would load from there and show."""
    from hgext3rd.backgroundclose.engine import native, stats

    built = [
        name
        for name, module in (('_closelane', native.lane_module),
                             ('_opstat', stats._opstat))
        if module is not None
    ]
    if os.environ.get('BACKGROUNDCLOSE_REQUIRE_NATIVE') and os.name == 'posix':
        assert built == ['_closelane', '_opstat'], built
    child = textwrap.dedent(
        '''
        import os, pkgutil, sys, types
        for name in %(mercurial)r:
            sys.modules[name] = None  # import mercurial: ImportError
        package = types.ModuleType(%(package)r)
        package.__path__ = [%(directory)r]
        sys.modules[%(package)r] = package
        import hgext3rd.backgroundclose.engine as engine
        assert engine.Closer  # what the seams use
        for info in pkgutil.iter_modules(engine.__path__):
            __import__(%(package)r + '.engine.' + info.name)
        from hgext3rd.backgroundclose.engine import native, stats
        print('lane', native.lane_module is not None and
              native.lane_module.__name__)
        print('opstat', stats._opstat is not None and stats._opstat.__name__)
        for name in sorted(sys.modules):
            top = name.split('.')[0]
            if sys.modules[name] is not None and (
                    top in %(mercurial)r
                    or name.startswith(%(package)r + '.')
                    and not name.startswith(%(package)r + '.engine')):
                print('loaded', name)
        ''' % {'mercurial': MERCURIAL, 'package': PACKAGE,
               'directory': PACKAGE_DIR})
    result = subprocess.run(
        [sys.executable, '-c', child], capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        'lane %s' % ('%s.engine._closelane' % PACKAGE
                     if '_closelane' in built else 'False'),
        'opstat %s' % ('%s.engine._opstat' % PACKAGE
                       if '_opstat' in built else 'False'),
    ]
    # nothing of Mercurial's, nothing of the package outside the engine
    assert lines[2:] == []
