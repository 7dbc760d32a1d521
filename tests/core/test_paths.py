import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentbox.core.paths import check_relative
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
