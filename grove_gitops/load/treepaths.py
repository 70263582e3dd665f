"""Which paths of a source tree grove-gitops accepts: one rule for every reader.

A git tree is untrusted input: git's plumbing (``mktree``, ``hash-object``) records entry
names that no checkout would write (``..``, ``.git``, a name holding ``/``), and a name that
is harmless on Linux can mean something else where the output goes next. Every reader of a
git tree (the controller's export and its checkout of the output branch, ``diff --repo``,
``plan --repo`` and so the PR check) asks :func:`path_problem` about every entry and refuses
the whole tree on the first answer, so they can never disagree about a tree (issue 21, item
3). The rule, per path component:

* not empty, not ``.`` or ``..``;
* not git's own directory under any name a file system maps to it: ``.git`` in any letter
  case, with trailing dots or spaces (``.git .``, which Windows strips), an NTFS stream
  (``.git::$INDEX_ALLOCATION``), the 8.3 short name ``git~1``, or with the code points HFS+
  ignores (``.g\\u200cit``) -- the variants git itself refuses with ``core.protectNTFS`` and
  ``core.protectHFS``;
* no NUL byte, no ``/`` inside a name, and no backslash: on Linux ``a\\..\\x.yaml`` is one
  file name, but a Windows checkout, and tools that treat ``\\`` as a separator, read it as
  a path leaving the folder; a manifest named like that would be rendered by one tool and
  never deployed by another, so it is refused everywhere;
* at most 255 bytes (``NAME_MAX``), and the whole path at most 4,095 (``PATH_MAX``): no
  file system could hold a longer one, so a checkout of it fails.

Symbolic links are never followed when a git tree is read (the link's target is only text
there), but a link the source walk would follow on disk and refuse (one leading outside the
source tree) is refused too, so reading a tree from git and reading its checkout agree:
:func:`symlink_problem`. The disk walk (``grove_gitops.load.source``) may call
:func:`component_problem` for the names it meets as well.
"""

from __future__ import annotations

import os
import posixpath
import unicodedata

#: Longest file name most file systems store (``NAME_MAX``), in bytes.
MAX_NAME_BYTES = 255
#: Longest path a Linux system call accepts (``PATH_MAX`` less its NUL), in bytes.
MAX_PATH_BYTES = 4095
#: Code points HFS+ ignores when it compares names (git's ``is_hfs_dotgit`` list).
_HFS_IGNORABLE = frozenset(
    "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
)


def _is_dotgit(name: str) -> bool:
    """True for every name a Linux, Windows or macOS checkout would treat as ``.git``."""
    folded = "".join(ch for ch in name if ch not in _HFS_IGNORABLE)
    folded = unicodedata.normalize("NFC", folded).casefold()
    if folded.rstrip(" .") == ".git" or folded.startswith(".git:"):
        return True
    return folded.rstrip(" .") == "git~1" or folded.startswith("git~1:")


def component_problem(name: str) -> str | None:
    """Why the single path component ``name`` is refused, or None."""
    if name == "":
        return "has an empty path component"
    if name in (".", ".."):
        return f"has a path component {name!r}"
    if "\0" in name:
        return "has a NUL byte in a name"
    if "/" in name:
        return "has a '/' inside a single name"
    if "\\" in name:
        return "has a backslash in a name, a folder separator on Windows and to tools that read it as one"
    if _is_dotgit(name):
        return "has a path component that a checkout would take for git's own '.git' directory"
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        return f"has a name longer than {MAX_NAME_BYTES} bytes"
    return None


def path_problem(path: str) -> str | None:
    """Why the relative posix path ``path`` (as ``git ls-tree -z`` prints it, decoded with
    :func:`os.fsdecode`) is refused, or None: the rule of this module's docstring."""
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        return f"is longer than {MAX_PATH_BYTES} bytes"
    if "\0" in path:
        return "has a NUL byte in a name"
    for component in path.split("/"):
        reason = component_problem(component)
        if reason is not None:
            return reason
    return None


def hidden(path: str) -> bool:
    """True when the source walk never looks at ``path``: a component starts with ``.``."""
    return any(part.startswith(".") for part in path.split("/"))


def symlink_problem(path: str, target: bytes) -> str | None:
    """Why the symbolic link ``path`` (relative to the source root) pointing at ``target``
    is refused, or None when it is simply not read.

    The disk walk refuses a link leading outside the source tree (it would copy whatever it
    points at, a Secret elsewhere on the machine, into the output). A git tree cannot tell
    whether an outside target is a file or a folder, so every link the walk would look at
    (no hidden component) whose target is absolute or leaves the root is refused. A link
    inside the tree is left out: git trees are read without following links."""
    if hidden(path):
        return None
    if not target or b"\0" in target:
        return "is a symbolic link without a usable target"
    text = os.fsdecode(target)
    if text.startswith("/"):
        return "is a symbolic link leading outside the source tree"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), text))
    if resolved == ".." or resolved.startswith("../"):
        return "is a symbolic link leading outside the source tree"
    return None


def shown(path: str) -> str:
    """``path`` for a message: printable as is, every other character escaped
    (``\\\\`` for a backslash, ``\\xNN`` for a control character or an undecodable byte), so
    a name cannot forge a line, a terminal escape or another path."""
    out: list[str] = []
    for ch in path:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F or not ch.isprintable():
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)
