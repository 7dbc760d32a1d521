import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentbox.core.paths import check_relative, is_within
from agentbox.core.plan import Artifact, Surface

segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@given(st.lists(segment, min_size=1, max_size=4), st.integers(min_value=0, max_value=4))
def test_a_path_that_climbs_with_dotdot_is_always_rejected(parts, where):
    parts = list(parts)
    parts.insert(min(where, len(parts)), "..")
    with pytest.raises(ValueError, match=r"\.\."):
        check_relative("/".join(parts))


@given(st.lists(segment, min_size=1, max_size=4))
def test_an_absolute_path_is_always_rejected(parts):
    with pytest.raises(ValueError, match="absolute"):
        check_relative("/" + "/".join(parts))


@given(st.lists(segment, min_size=2, max_size=4))
def test_a_path_with_backslashes_is_always_rejected(parts):
    with pytest.raises(ValueError, match="backslash"):
        check_relative("\\".join(parts))


@given(st.lists(segment, min_size=1, max_size=4))
def test_clean_relative_paths_are_kept_as_they_are(parts):
    path = "/".join(parts)
    assert check_relative(path) == path


def test_artifacts_and_surfaces_refuse_unsafe_paths():
    with pytest.raises(ValueError):
        Artifact(path="../escape.toml", content="")
    with pytest.raises(ValueError):
        Surface(path="/etc/passwd", kind="file")


def _pathlib_within(child: str, parent: str) -> bool:
    from pathlib import PurePosixPath

    c, p = PurePosixPath(child), PurePosixPath(parent)
    return c == p or p in c.parents


@given(
    st.lists(st.sampled_from(["", "/", "//", "///", "a", "b", ".", "..", "ab", "a/b", "./"]), max_size=5),
    st.lists(st.sampled_from(["", "/", "//", "///", "a", "b", ".", "..", "ab", "a/b", "./"]), max_size=5),
)
def test_is_within_answers_as_pathlib_compares_names(child, parent):
    c, p = "".join(child), "".join(parent)
    assert is_within(c, p) == _pathlib_within(c, p)


def test_is_within_is_name_by_name_not_a_string_prefix():
    assert is_within("/w/project/.git", "/w/project")
    assert not is_within("/w/project-other", "/w/project")
    assert is_within("/w/project", "/w/project/")
