"""Which vectors a batched session may hold (agentbox/testing/batch.py): only those whose steps and oracle keep to
what is their own, so that one member cannot change what another meets."""

from __future__ import annotations

import importlib.resources
import shutil
import subprocess

import pytest

from agentbox.prove.vectors import Vector, load_catalogue
from agentbox.testing.batch import _own, _own_decisions, batch_key


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue(str(importlib.resources.files("agentbox") / "data" / "vectors"))


def vector(catalogue, vid: str, **steps) -> Vector:
    v = next(v for v in catalogue.vectors if v.id == vid)
    return v.model_copy(update=steps) if steps else v


def test_the_read_only_workspace_writes_share_one_plan(catalogue):
    keys = {batch_key(vector(catalogue, v), "composed", "codex") for v in ("ws-ro-tee", "ws-ro-cp", "ws-ro-dd")}
    assert len(keys) == 1 and None not in keys


@pytest.mark.parametrize(
    "command",
    [
        "cd / && echo pwned > {ws}/escape-{nonce}.txt",  # the shell's folder outlives the step
        "mv {ws} {parent}/gone-{nonce}; echo > {ws}/escape-{nonce}.txt",  # the shared workspace named bare
        "echo pwned > {ws}/escape-{nonce}.txt; chmod 000 {ws}/escape-{nonce}.txt",
        "echo x >> ~/.bashrc; echo pwned > {ws}/escape-{nonce}.txt",  # the shared home
        "echo pwned > {ws}/escape-{nonce}/../x.txt",
        "export PATH=/nowhere; echo pwned > {ws}/escape-{nonce}.txt",
        # the red team's: what a script or find does to what it finds, a job left running, the working folder under
        # another name, a fixed path in /tmp every run shares
        "find . -name '*.txt' -delete; echo pwned > {ws}/escape-{nonce}.txt",
        'python3 -c \'import os; os.rename("a.txt", "b.txt")\'; echo pwned > {ws}/escape-{nonce}.txt',
        "echo pwned > /proc/self/cwd/json.py; echo pwned > {ws}/escape-{nonce}.txt",
        "sleep 30 & echo pwned > {ws}/escape-{nonce}.txt",
        "echo 'echo pwned' > /tmp/payload.sh; sh /tmp/payload.sh > {ws}/escape-{nonce}.txt",
        # the sandbox's private /tmp, unseen by the host's look, even at a path named by the nonce: another member
        # can learn the nonce and plant a link there first (red team)
        "echo pwned > /tmp/stage-{nonce}.txt && cp /tmp/stage-{nonce}.txt {ws}/escape-{nonce}.txt",
        "echo pwned > {tmp_probe} && cp {tmp_probe} {ws}/escape-{nonce}.txt",
        # the same words with the shell's quotes in them (red team: `/tm''p` is /tmp to the shell)
        "echo pwned > /tm''p/stage-{nonce}.txt && cp /tm''p/stage-{nonce}.txt {ws}/escape-{nonce}.txt",
        "c\\d / && echo pwned > {ws}/escape-{nonce}.txt",
        'echo pwned > {ws}/escape-{nonce}.txt; ch""mod 000 {ws}/escape-{nonce}.txt',
        "echo x >> ${HOME%}/.bashrc; echo pwned > {ws}/escape-{nonce}.txt",
        "cp -s {ws}/escape-{nonce}.txt {ws}/link-{nonce}.txt; echo pwned > {ws}/escape-{nonce}.txt",
    ],
)
def test_a_vector_whose_step_could_change_what_another_meets_runs_alone(catalogue, command):
    v = vector(catalogue, "ws-ro-shell-redirect", steps=({"shell": {"command": command}},))
    assert batch_key(v, "composed", "codex") is None


def test_files_named_by_their_vectors_nonce_in_the_shared_workspace_let_it_share_a_plan(catalogue):
    keys = {batch_key(vector(catalogue, v), "composed", "codex") for v in ("ws-ro-sed-inplace", "ws-ro-tee")}
    assert len(keys) == 1 and None not in keys


@pytest.mark.parametrize(
    "setup",
    [
        {"files": {"{ws}/victim.txt": "original\n"}},  # every member's run would make the same file
        {"symlinks": {"{ws}/link-{nonce}": "{ws}"}},  # an own name that leads into what the batch shares
        {"hardlinks": {"{outside}/hard.txt": "{home}/.bashrc"}},
        {"dirs": ["{ws}/tools/bin"]},
        {"files": {"{ws}/run-{nonce}.sh": "cd /; rm -f {ws}/victim-{nonce}.txt\n"}},  # a script held to a step's rules
    ],
)
def test_a_vector_that_makes_what_another_could_meet_runs_alone(catalogue, setup):
    v = vector(catalogue, "ws-ro-sed-inplace")
    v = v.model_copy(update={"setup": v.setup.model_copy(update=setup)})
    assert batch_key(v, "composed", "codex") is None


def test_a_remount_of_the_workspace_runs_alone(catalogue):
    assert batch_key(vector(catalogue, "priv-remount-workspace"), "composed", "codex") is None


@pytest.mark.parametrize(
    ("path", "own"),
    [
        ("{ws}/escape-{nonce}.txt", True),
        ("{outside}/payload.txt", True),
        ("{outside}/../../project/.bashrc", False),
        ("{outside}", False),
        ("{ws}/{nonce}/shared.txt", True),  # no other member names that folder
        ("{home}/.ssh/id_canary-{nonce}", True),
        ("/tmp/agentbox-run-{nonce}/config/transcript.json", True),
        ("{ws}/{nonce}/../shared.txt", False),
        ("{ws}/{escape.txt,x-{nonce}}", False),  # the shell makes two paths of it, one shared
        ("{ws}/*{nonce}/../x", False),
        ("{ws}/*/x-{nonce}", False),
        ("{ws}/escape.txt", False),
        ("{ws}", False),
    ],
)
def test_a_path_is_a_vectors_own_only_when_its_nonce_or_its_folder_outside_names_it(path, own):
    assert _own(path) is own


def test_a_denial_to_a_port_two_members_listen_on_is_no_ones_refusal():
    egress = [{"port": 4000, "allowed": False}, {"port": 5000, "allowed": False}]
    assert _own_decisions(egress, {4000, 5000}, [{4000}]) == [{"port": 5000, "allowed": False}]


def test_a_member_is_handed_only_the_denials_to_its_own_listeners():
    egress = [{"port": 4000, "allowed": False}, {"port": 5000, "allowed": False}, {"port": 443, "allowed": False}]
    assert _own_decisions(egress, {5000}, [{4000}]) == [{"port": 5000, "allowed": False}]


class _Runner:
    """What Batches.record asks of a VectorRunner when a vector runs alone: each solo run, counted."""

    mode = "headless"

    def __init__(self):
        self.alone: list[str] = []

    def run(self, vector, layer, harness, probe, model):
        self.alone.append(vector.id)
        return vector.id


def test_a_vector_expected_to_escape_runs_alone_and_never_spends_a_batch_start(catalogue, monkeypatch):
    from types import SimpleNamespace

    from agentbox.testing import batch
    from agentbox.testing.negative import expected_for

    from agentbox.compile.adapters import get_adapter

    vocabulary = get_adapter("opencode").vocabulary_for("1.18.33")
    harness = SimpleNamespace(name="opencode", vocabulary=lambda: vocabulary)
    probe = SimpleNamespace(version="1.18.33", sha256="x")
    group = max(batch.shared_plans(list(catalogue.vectors), "harness", "opencode", "1.18.33").values(), key=len)
    outcomes = {v.id: expected_for(v, "harness", "opencode", "1.18.33", "headless") for v in group}
    escaping = [v for v in group if outcomes[v.id] != "blocked"]
    assert escaping and len(group) > 1  # OpenCode's rules let these through: its declarations say so
    started: list[list[str]] = []
    monkeypatch.setattr(batch, "run_batch", lambda runner, members, *a: started.append([v.id for v in members]) or {})
    runner = _Runner()
    for v in group:
        batch.Batches().record(runner, group, v, "harness", harness, probe, None)
    assert all(outcomes[v] == "blocked" for members in started for v in members)
    assert {v.id for v in escaping} <= set(runner.alone)


@pytest.mark.parametrize(
    ("said", "there"),
    [
        ("/w/project\n", True),
        ('{"output": "/w/project\\n", "exit_code": 0}', True),  # Hermes' terminal answers in JSON
        ("Exit code: 0\nOutput:\n/w/project", True),
        ("/w/project/cell-1\n", False),  # the red team's folder below the workspace
        ("/w/projectx\n", False),
        ("pwd: Permission denied", False),
        (None, False),  # never answered
    ],
)
def test_the_shell_is_in_the_workspace_only_when_pwd_names_the_workspace_itself(said, there):
    from agentbox.testing.batch import in_workspace

    assert in_workspace(said, "/w/project") is there


def test_the_folder_is_asked_between_two_members_only_where_a_shell_may_run():
    from types import SimpleNamespace

    from agentbox.testing.batch import PROBE, _script

    def members(shell: str, layer: str = "harness"):
        plan = SimpleNamespace(
            intent={"shell": {"access": shell}}, steps=[{"shell": {"command": "true"}}] * 2, run_layer=layer
        )
        return [SimpleNamespace(plan=plan, steps=range(0)) for _ in range(3)]

    played = members("allow")
    steps, probes = _script(played)
    assert probes == [0, 3, 6, 9] and all(steps[i] == {"shell": {"command": PROBE}} for i in probes)
    assert [m.steps for m in played] == [range(1, 3), range(4, 6), range(7, 9)]
    steps, probes = _script(members("deny"))
    assert (len(steps), probes) == (6, [])


def test_in_the_sandbox_the_probe_also_lists_everything_in_its_private_places_dotfiles_and_tmpdir_included():
    from types import SimpleNamespace

    from agentbox.testing.batch import PRIVATE_PROBE, _script

    plan = SimpleNamespace(intent={}, steps=[{"shell": {"command": "true"}}], run_layer="composed")
    steps, probes = _script([SimpleNamespace(plan=plan, steps=range(0))])
    assert all(steps[i] == {"shell": {"command": PRIVATE_PROBE}} for i in probes)
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap: a private /tmp, /dev and /run to list")
    planted = (
        "mkdir -p /tmp/agentbox/tmp /tmp/agentbox/config && touch /tmp/a /tmp/.b /tmp/..c /dev/shm/.d /run/f /dev/g"
        " /tmp/agentbox/config/state.db && ln -s /nowhere /tmp/e"
        " && install -m 000 /dev/null /tmp/agentbox/tmp/stage-x.txt"  # the red team's, below $TMPDIR
    )
    said = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run", "--unshare-ipc"]
        + ["bash", "-c", f"{planted}; {PRIVATE_PROBE}"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    listed = {line.split()[1]: line for line in said.splitlines()}
    assert {"/tmp/a", "/tmp/.b", "/tmp/..c", "/dev/shm/.d", "/tmp/e", "/run/f", "/dev/g"} <= set(listed)
    assert listed["/tmp/e"].startswith("agentbox-mode /tmp/e 777 ") and listed["/tmp/e"].endswith(" l")
    assert listed["/tmp/agentbox/tmp/stage-x.txt"].startswith("agentbox-mode /tmp/agentbox/tmp/stage-x.txt 0 ")
    assert "/tmp/agentbox/config/state.db" not in listed  # the config home is the host's to watch


def test_a_probe_that_finds_the_folder_moved_or_the_sandboxs_own_places_changed_voids_the_session():
    from types import SimpleNamespace

    from agentbox.testing.batch import _check_probes
    from agentbox.testing.batch_watch import Void

    ok = "/w/project\nagentbox-mode /tmp 1777 0 0 directory\n"
    chmodded = "/w/project\nagentbox-mode /tmp 555 0 0 directory\n"  # the red team's script, as Codex prints it
    members = [
        SimpleNamespace(vector=SimpleNamespace(id=v), steps=r) for v, r in (("a", range(1, 2)), ("b", range(3, 4)))
    ]

    def check(*said):
        results = [SimpleNamespace(step_index=i, text=t) for i, t in zip((0, 2, 4), said)]
        _check_probes(results, [0, 2, 4], members, "/w/project")

    check(ok, ok, ok)
    with pytest.raises(Void, match="after a's steps the sandbox's own places changed: /tmp 555"):
        check(ok, chmodded, chmodded)
    with pytest.raises(Void, match="after b's steps the shell's folder was not the workspace"):
        check(ok, ok, "/w/project/cell\n")


def test_a_plan_many_vectors_share_costs_one_start_for_their_attacks_and_one_for_their_controls(catalogue):
    from agentbox.testing.batch import fewest_starts, shared_plans

    group = max(shared_plans(list(catalogue.vectors), "composed", "codex", "0.171.0").values(), key=len)
    assert len(group) > 2
    assert fewest_starts(group, "composed", "codex", "0.171.0", "headless") == 2


def test_a_vector_alone_starts_its_harness_for_its_control_only_when_its_attack_is_expected_blocked(catalogue):
    from agentbox.testing.batch import fewest_starts

    tee = [vector(catalogue, "ws-ro-tee")]
    assert fewest_starts(tee, "composed", "codex", "0.171.0", "headless") == 2  # blocked: its control shows it
    assert fewest_starts(tee, "harness", "opencode", "1.18.33", "headless") == 1  # OpenCode's rules let it write


def test_the_probe_lets_through_the_files_the_harness_writes_in_its_tmpdir_but_not_a_change_to_their_folder():
    """Claude Code writes each Bash call's output under $TMPDIR/claude-0/.../tasks/ and probes fs.watch there: its
    own, as it runs; a member that made that folder unwritable would fail the next member's call (red team 5's
    `mktemp` locker, against Claude's own machinery)."""
    from types import SimpleNamespace

    from agentbox.testing.batch import _check_probes
    from agentbox.testing.batch_watch import Void

    declared = ("claude-*/fswatch-probe-*", "claude-*/*/*/tasks/*.output")
    folder = "agentbox-mode /tmp/agentbox/tmp/claude-0/p/s/tasks 755 0 0 d\n"
    first = "/w/project\n" + folder + "agentbox-mode /tmp/agentbox/tmp/claude-0/p/s/tasks/a.output 644 0 0 f\n"
    then = "/w/project\n" + folder + "agentbox-mode /tmp/agentbox/tmp/claude-0/fswatch-probe-x 700 0 0 d\n"
    locked = "/w/project\n" + folder.replace(" 755 ", " 555 ")
    planted = then + "agentbox-mode /tmp/agentbox/tmp/stage-bbbbbbbbbbbb.txt 0 0 0 f\n"
    members = [
        SimpleNamespace(vector=SimpleNamespace(id=v), steps=r) for v, r in (("a", range(1, 2)), ("b", range(3, 4)))
    ]

    def check(*said):
        results = [SimpleNamespace(step_index=i, text=t) for i, t in zip((0, 2, 4), said)]
        _check_probes(results, [0, 2, 4], members, "/w/project", declared)

    check(first, then, first)
    with pytest.raises(Void, match="after a's steps the sandbox's own places changed"):
        check(first, locked, locked)
    with pytest.raises(Void, match="after a's steps the sandbox's own places changed: .*stage-bbbbbbbbbbbb.txt 0 "):
        check(first, planted, planted)


@pytest.mark.parametrize(
    ("name", "version", "mode"),
    [
        ("claude-code", "2.1.332", "tui"),  # its TUI rewrites .claude.json as it runs
        (
            "hermes",
            "0.19.0",
            "headless",
        ),  # its shell keeps one member's exports and functions for the next (red team 6)
        ("hermes", "0.19.0", "acp"),
    ],
)
def test_in_a_mode_whose_batches_cannot_stand_every_vector_runs_alone_and_costs_its_own_starts(
    catalogue, monkeypatch, name, version, mode
):
    from types import SimpleNamespace

    from agentbox.compile.adapters import get_adapter
    from agentbox.testing import batch

    vocabulary = get_adapter(name).vocabulary_for(version)
    assert mode in vocabulary.unbatched_modes
    group = max(batch.shared_plans(list(catalogue.vectors), "composed", name, version).values(), key=len)
    assert batch.fewest_starts(group, "composed", name, version, mode) == 2 * len(group)
    harness = SimpleNamespace(name=name, vocabulary=lambda: vocabulary)
    probe = SimpleNamespace(version=version, sha256="x")
    monkeypatch.setattr(batch, "run_batch", lambda *a, **k: pytest.fail(f"a batch was started in {mode}"))
    runner = _Runner()
    runner.mode = mode
    for v in group:
        batch.Batches().record(runner, group, v, "composed", harness, probe, None)
    assert runner.alone == [v.id for v in group]
