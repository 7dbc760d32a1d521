"""What the protocol test agent asks of the client through the endpoint, and what reaches the client.

The client here serves files and terminals on the host, as an editor does, so whatever the endpoint let
through would show as a side effect on the host."""

from __future__ import annotations

import json

from agentbox.testing.acp_client import RecordingClient, run_acp

from acp_helpers import endpoint_alone, endpoint_argv, needs_bwrap, step_lines

pytestmark = needs_bwrap

RO = {"workspace": {"access": "read_only"}, "shell": {"access": "deny"}, "command_network": {"access": "none"}}
RW = {"workspace": {"access": "read_write"}, "shell": {"access": "allow"}, "command_network": {"access": "none"}}


def offering(policy="approve") -> RecordingClient:
    return RecordingClient(policy, fs=True, terminal=True)


def test_a_client_write_into_a_read_only_workspace_never_reaches_the_client(place):
    (place.ws / "keep.txt").write_text("original")
    client = offering()
    run = endpoint_alone(
        place, RO, [{"client_write": {"path": str(place.ws / "keep.txt"), "content": "pwned"}}], client
    )
    assert run.stop_reason == "end_turn", run.describe()
    assert (place.ws / "keep.txt").read_text() == "original"
    assert client.calls == []
    assert "workspace access is read_only" in step_lines(run)[0], run.describe()


def test_the_same_client_write_reaches_the_client_when_the_workspace_is_read_write(place):
    (place.ws / "keep.txt").write_text("original")
    client = offering()
    endpoint_alone(place, RW, [{"client_write": {"path": str(place.ws / "keep.txt"), "content": "changed"}}], client)
    assert (place.ws / "keep.txt").read_text() == "changed"
    assert client.calls == [("fs/write_text_file", str(place.ws / "keep.txt"))]


def test_a_client_write_outside_the_workspace_is_refused_under_read_write_too(place):
    target = place.root / "outside.txt"
    client = offering()
    run = endpoint_alone(place, RW, [{"client_write": {"path": str(target), "content": "x"}}], client)
    assert not target.exists() and client.calls == []
    assert "outside the workspace" in step_lines(run)[0]


def test_a_symlink_in_the_workspace_does_not_lead_a_client_write_out_of_it(place):
    (place.ws / "link").symlink_to(place.root)
    client = offering()
    run = endpoint_alone(
        place, RW, [{"client_write": {"path": str(place.ws / "link" / "escape.txt"), "content": "x"}}], client
    )
    assert not (place.root / "escape.txt").exists() and client.calls == []
    assert "outside the workspace" in step_lines(run)[0]


def _swap(place, folder: str, to) -> dict:
    return {"after": 1.0, "dir": str(place.ws / folder), "to": str(to)}


def test_a_folder_swapped_for_a_symlink_while_the_client_takes_its_time_does_not_lead_the_write_out(place):
    """The endpoint judges the path, then the client writes it, later, on the host: the run is held still in between,
    so the swap a process of the run makes meanwhile (here after 1 s, the client writing after 3 s) comes too late."""
    (place.ws / "sub").mkdir()
    outside = place.root / "outside"
    outside.mkdir()
    client = RecordingClient("approve", fs=True, terminal=True, delay=3.0)
    run = endpoint_alone(
        place,
        RW,
        [
            {
                "client_write": {
                    "path": str(place.ws / "sub" / "escape.txt"),
                    "content": "x",
                    "swap": _swap(place, "sub", outside),
                }
            }
        ],
        client,
    )
    assert step_lines(run)[0].startswith("step 0 client_write: ok"), run.describe()
    assert not (outside / "escape.txt").exists()
    # written where it was judged: in the folder itself, which the swap moved aside once the run went on (or, on a
    # loaded machine, had not reached yet when the run ended)
    judged = [p for p in (place.ws / "sub.before-swap", place.ws / "sub") if p.is_dir() and not p.is_symlink()]
    assert [(p / "escape.txt").read_text() for p in judged if (p / "escape.txt").exists()] == ["x"], run.describe()
    assert "handed to the client with the run held still" in run.stderr


def test_the_same_swap_leads_the_write_out_when_the_run_is_not_held(place):
    """The control: the endpoint alone without its hold (the `acp_hold` weakening) lets the swap land."""
    (place.ws / "sub").mkdir()
    outside = place.root / "outside"
    outside.mkdir()
    client = RecordingClient("approve", fs=True, terminal=True, delay=3.0)
    argv = [
        *endpoint_argv(
            place,
            RW,
            [
                {
                    "client_write": {
                        "path": str(place.ws / "sub" / "escape.txt"),
                        "content": "x",
                        "swap": _swap(place, "sub", outside),
                    }
                }
            ],
        ),
        "--weaken",
        "acp_hold",
    ]
    run_acp(argv, place.env(), str(place.root), "go", client=client, session_cwd=str(place.ws), timeout=60, grace=10.0)
    assert (outside / "escape.txt").read_text() == "x"


def test_a_folder_swapped_for_a_symlink_into_the_hidden_home_does_not_lead_a_client_read_there(place):
    (place.home / "secret.txt").write_text("s3cret")
    (place.ws / "sub").mkdir()
    (place.ws / "sub" / "secret.txt").write_text("harmless")
    client = RecordingClient("approve", fs=True, terminal=True, delay=3.0)
    run = endpoint_alone(
        place,
        {**RW, "host_home": "hidden"},
        [{"client_read": {"path": str(place.ws / "sub" / "secret.txt"), "swap": _swap(place, "sub", place.home)}}],
        client,
    )
    assert "harmless" in step_lines(run)[0] and "s3cret" not in client.agent_text(), run.describe()


def test_a_client_write_to_a_masked_project_config_file_is_refused(place):
    (place.ws / ".mcp.json").write_text("{}")
    client = offering()
    run = endpoint_alone(
        place, RW, [{"client_write": {"path": str(place.ws / ".mcp.json"), "content": '{"x": 1}'}}], client
    )
    assert (place.ws / ".mcp.json").read_text() == "{}" and client.calls == []
    assert "profile's own copy" in step_lines(run)[0], run.describe()


def test_a_client_read_under_the_hidden_home_is_refused(place):
    (place.home / "secret.txt").write_text("s3cret")
    client = offering()
    run = endpoint_alone(
        place, {**RW, "host_home": "hidden"}, [{"client_read": {"path": str(place.home / "secret.txt")}}], client
    )
    assert "s3cret" not in client.agent_text() and client.calls == []
    assert "private to the sandbox" in step_lines(run)[0]


def test_the_same_client_read_reaches_the_client_when_the_home_is_visible(place):
    (place.home / "secret.txt").write_text("s3cret")
    client = offering()
    run = endpoint_alone(
        place, {**RW, "host_home": "visible"}, [{"client_read": {"path": str(place.home / "secret.txt")}}], client
    )
    assert "s3cret" in step_lines(run)[0]


def test_a_client_read_of_proc_would_read_the_editor_and_is_refused(place):
    client = offering()
    run = endpoint_alone(place, RW, [{"client_read": {"path": "/proc/self/environ"}}], client)
    assert client.calls == [] and "/proc is private to the sandbox" in step_lines(run)[0]


def test_a_terminal_under_shell_deny_is_refused_and_never_reaches_the_client(place):
    client = offering()
    proof = place.ws / "terminal.txt"
    run = endpoint_alone(
        place,
        {**RW, "shell": {"access": "deny"}},
        [{"terminal": {"command": "sh", "args": ["-c", f"echo ran > {proof}"]}}],
        client,
    )
    assert not proof.exists() and client.calls == []
    assert "shell access is deny" in step_lines(run)[0]


def test_a_terminal_under_shell_allow_runs_inside_the_sandbox_never_on_the_host(place):
    client = offering()
    inside, outside = place.ws / "in.txt", place.root / "out.txt"
    run = endpoint_alone(
        place,
        RW,
        [{"terminal": {"command": "sh", "args": ["-c", f"echo in > {inside}; echo out > {outside}; echo done"]}}],
        client,
    )
    assert inside.read_text() == "in\n", run.describe()
    assert not outside.exists(), "the host outside the workspace is read-only in the sandbox"
    assert "Read-only file system" in step_lines(run)[0] and "done" in client.agent_text()
    assert client.calls == []


def test_a_terminal_under_shell_ask_runs_only_after_the_client_approves(place):
    asked = {**RW, "shell": {"access": "ask"}}
    for policy, ran in (("approve", True), ("deny", False)):
        proof = place.ws / f"{policy}.txt"
        client = offering(policy)
        endpoint_alone(place, asked, [{"terminal": {"command": "sh", "args": ["-c", f"echo ran > {proof}"]}}], client)
        assert proof.exists() == ran
        assert [p.title for p in client.permission_requests] == [f"Run in the sandbox: sh -c echo ran > {proof}"]
        assert client.calls == []


def test_a_shell_permission_request_under_shell_deny_is_rejected_without_asking_an_approve_everything_client(place):
    client = offering("approve_all")
    proof = place.ws / "asked.txt"
    run = endpoint_alone(
        place, {**RW, "shell": {"access": "deny"}}, [{"ask_then_run": {"command": f"echo ran > {proof}"}}], client
    )
    assert client.permission_requests == [] and not proof.exists()
    assert "not allowed (no)" in step_lines(run)[0]


def test_under_shell_ask_the_client_is_asked_but_never_offered_an_always_option(place):
    client = offering("approve_all")
    proof = place.ws / "asked.txt"
    run = endpoint_alone(
        place, {**RW, "shell": {"access": "ask"}}, [{"ask_then_run": {"command": f"echo ran > {proof}"}}], client
    )
    (asked,) = client.permission_requests
    assert [o.kind for o in asked.options] == ["allow_once", "reject_once"]
    assert proof.exists() and "allowed (once)" in step_lines(run)[0]


def test_the_agent_is_told_only_the_capabilities_both_the_client_and_the_intent_allow(place):
    client = offering()
    run = endpoint_alone(place, {**RO, "workspace": {"access": "read_only"}}, [{"report": {}}], client)
    seen = json.loads(step_lines(run)[0].split(" ok ", 1)[1])
    assert seen["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": False}
    assert seen["clientCapabilities"]["terminal"] is False
    run = endpoint_alone(place, RW, [{"report": {}}], RecordingClient("approve"))
    seen = json.loads(step_lines(run)[0].split(" ok ", 1)[1])
    assert seen["clientCapabilities"]["fs"] == {"readTextFile": False, "writeTextFile": False}, (
        "the client offered none"
    )
