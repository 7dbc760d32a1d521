"""Rules every vector of the shipped catalogue keeps, so a weak control or a vanished vector cannot return."""

from __future__ import annotations

import pytest
import yaml

from agentbox.prove.claims import default_catalogue_dir
from agentbox.errors import InputError
from agentbox.prove.vectors import Control, Vector, load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())
# Controls that attempt something other than the attack, each with why no protection-removed form exists.
OTHER_STEPS = {
    "net-restricted-connect-mismatch": "the egress proxy has no mode that lets a mismatched CONNECT through; "
    "the control tunnels to the allowed name itself",
    # The proxy has no mode that passes a tunnel's bytes on uninspected: each control opens the same tunnel and
    # sends the same request with an honest first line and one Host, which the listener must hear.
    "net-tunnel-formfeed": "the proxy has no uninspected tunnel; the control sends the request without the form feed",
    "net-tunnel-duplicate-host": "the proxy has no uninspected tunnel; the control sends the request with one Host",
}


def test_a_control_has_no_oracle_of_its_own():
    assert "oracle" not in Control.model_fields


@pytest.mark.parametrize("vector", CATALOGUE.vectors, ids=lambda v: v.id)
def test_every_control_attempts_the_attack_itself(vector: Vector):
    if vector.control.steps is not None or vector.control.sandbox_command is not None:
        assert vector.id in OTHER_STEPS, f"{vector.id}: the control runs other steps than the attack"


@pytest.mark.parametrize("vector", CATALOGUE.vectors, ids=lambda v: v.id)
def test_every_host_control_has_a_plain_command_form(vector: Vector):
    c = vector.control
    if c.layer == "host" or c.harness_layer == "host" or c.host_harnesses:
        assert Vector.host_argv(c.steps or vector.steps) is not None


def test_a_file_tools_write_becomes_the_same_write_by_sh_on_the_host():
    argv = Vector.host_argv([{"write_file": {"path": "/x/a b", "content": "it's"}}])
    assert argv == ("sh", "-c", "printf %s 'it'\"'\"'s' > '/x/a b'")


def test_a_vector_that_needs_a_kernel_feature_names_where_its_attack_marks_enosys():
    data = CATALOGUE_DATA("priv-load-module")
    with pytest.raises(ValueError, match="names the path its attack creates when the kernel answers ENOSYS"):
        Vector.model_validate({k: v for k, v in data.items() if k != "enosys"})
    with pytest.raises(ValueError, match="only such a vector does"):
        Vector.model_validate({k: v for k, v in data.items() if k != "kernel_needs"})


def test_the_module_vectors_attack_proves_it_was_answered_marks_enosys_and_escapes_only_on_another_answer():
    vector = load_catalogue(default_catalogue_dir()).by_id("priv-load-module")
    command = vector.steps[0]["shell"]["command"]
    assert vector.kernel_needs == ("modules",) and vector.enosys == "{ws}/enosys.txt"
    assert (
        "e == 38 and open('{ws}/enosys.txt'" in command
        and "e not in (1, 38) and open('{ws}/escape-{nonce}.txt'" in command
    )
    # the proof that the call was made and answered comes after it, so an attack that never ran is an error
    assert vector.proof == "{ws}/answer.txt" and command.index("answer.txt") > command.index("libc.syscall")


def test_the_kernel_is_asked_for_a_module_loader_only_once_its_trace_file_is_gone(monkeypatch, tmp_path):
    import agentbox.prove.vectors as vectors

    asked = []
    monkeypatch.setattr(vectors, "_enosys", lambda number: asked.append(number) or True)
    monkeypatch.setattr(vectors, "kernel_traces", lambda: ["modules"])
    assert vectors.kernel_lacks_here() == () and asked == []
    monkeypatch.setattr(vectors, "kernel_traces", lambda: [])
    assert vectors.kernel_lacks_here() == ("modules",) and len(asked) == 1
    monkeypatch.setattr(vectors, "_enosys", lambda number: False)  # a loader behind a hidden /proc/modules
    assert vectors.kernel_lacks_here() == ()


def CATALOGUE_DATA(vector_id: str) -> dict:
    import yaml

    for path in default_catalogue_dir().glob("*.yaml"):
        for entry in yaml.safe_load(path.read_text()) or ():
            if entry.get("id") == vector_id:
                return entry
    raise KeyError(vector_id)


def test_a_users_harness_layer_is_predicted_blocked_where_the_kernel_refuses_users_the_attack():
    from agentbox.core.capability import CapabilityReport
    from agentbox.prove.vectors import expected_outcome

    catalogue = load_catalogue(default_catalogue_dir())
    chroot = next(v for v in catalogue.vectors if v.id == "priv-chroot")
    bypassed = CapabilityReport(capability=chroot.capability, support="partial", bypass_surfaces=(chroot.surface,))
    assert expected_outcome(chroot, "harness", bypassed, None, level="root") == "escaped"
    assert expected_outcome(chroot, "harness", bypassed, None, level="user") == "blocked"


def test_a_hold_seen_only_as_root_predicts_nothing_for_a_user():
    from agentbox.core.capability import load_declarations
    from agentbox.prove.vectors import expected_outcome

    catalogue = load_catalogue(default_catalogue_dir())
    userns = next(v for v in catalogue.vectors if v.id == "priv-nested-userns")
    codex = load_declarations("codex").report(userns.capability, "0.171.0", "harness")
    assert expected_outcome(userns, "harness", codex, None, level="root") == "blocked"
    assert expected_outcome(userns, "harness", codex, None, level="user") == "escaped"


@pytest.mark.parametrize("text", ["vectors:\n- id: x\n", "- just a string\n", "id: x\ncapability: y\n"])
def test_a_catalogue_file_that_is_not_a_list_of_vectors_is_refused_naming_the_file(tmp_path, text):
    (tmp_path / "mine.yaml").write_text(text)
    with pytest.raises(InputError, match="a catalogue file is a list of vectors") as exc:
        load_catalogue(tmp_path)
    assert str(tmp_path / "mine.yaml") in str(exc.value)


def test_a_skip_of_some_versions_holds_on_those_only_and_never_on_an_unknown_one():
    vector = CATALOGUE.by_id("net-fetch-tool")
    assert not vector.applies_to("hermes", version="0.13.0")
    assert "cannot run on hermes 0.15.1: its wheel ships no web provider" in vector.skip_reason(
        "hermes", None, "0.15.1"
    )
    assert vector.applies_to("hermes", version="0.15.2") and vector.applies_to("hermes", version="0.19.0")
    assert vector.applies_to("hermes")  # a probe that read no version runs it: its record shows what happened
    assert vector.applies_to("codex", version="0.13.0")


def test_a_skip_written_as_a_bare_reason_holds_on_every_version():
    vector = CATALOGUE.by_id("net-restricted-fetch-tool")
    assert not any(vector.applies_to("hermes", version=v) for v in ("0.13.0", "0.19.0", None))


def test_a_skip_whose_version_bound_is_not_a_version_is_refused_naming_the_file_and_field(tmp_path):
    entry = CATALOGUE.by_id("net-fetch-tool").model_dump(mode="json", exclude_defaults=True)
    entry["skip_harnesses"] = {"hermes": {"reason": "r", "max_version": "latest"}}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump([entry]))
    with pytest.raises(InputError, match="skip_harnesses.hermes.max_version") as exc:
        load_catalogue(tmp_path)
    assert str(tmp_path / "mine.yaml") in str(exc.value)
