"""`agent-box launch` keeps what the harness answered that widens nothing for the profile's next launch, under
$AGENTBOX_HOME, and names on stderr each key it drops. Claude Code's plan, in bubblewrap, with a shell standing in
for the harness so that the test decides what the run writes into `.claude.json` (the real TUI does the same in
conformance/test_claude_kept_answers.py)."""

from __future__ import annotations

import json

from agentbox.compile.compiler import compile_plan
from agentbox.run.launch import execute
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.sandbox.session import entry_from_plan
from launch_helpers import needs_bwrap

pytestmark = needs_bwrap

# inside the run: show the file as the run began, then write a start counter and a grant into it
RUN = (
    'cat $CLAUDE_CONFIG_DIR/.claude.json > {seen}; python3 -c "import json,os; '
    "p=os.environ['CLAUDE_CONFIG_DIR']+'/.claude.json'; d=json.load(open(p)); "
    "d['numStartups']=d.get('numStartups',0)+1; d['projects'][os.getcwd()]['allowedTools']=['Bash']; "
    "json.dump(d,open(p,'w'))\""
)


def claude_entry(ws, seen) -> dict:
    profile = Profile.model_validate(
        {"name": "reviewer", "harness": "claude-code", "permission_intent": {"command_network": {"access": "none"}}}
    )
    plan = compile_plan(
        LoadedProfile(profile=profile, source="<t>", digest="d"),
        str(ws),
        harness_version="2.1.332",
        rw_binds=(str(seen.parent),),
    )
    return {
        "sandbox": entry_from_plan(plan, ()),
        "harness": ["/bin/sh", "-c", RUN.format(seen=seen)],
        "run": {"profile": "reviewer", "profile_digest": "d", "harness": "claude-code", "project_root": str(ws)},
    }


def test_a_launch_keeps_the_start_counter_drops_the_grant_and_says_so(abhome, ws, tmp_path, capfd):
    seen = tmp_path / "seen" / "state.json"
    seen.parent.mkdir()
    entry = claude_entry(ws, seen)

    assert execute(entry, []) == 0
    said = capfd.readouterr().err
    assert f'agent-box: .claude.json: not kept: projects["{ws}"].allowedTools (could widen the permission rules' in said
    kept = json.loads((abhome / "state" / "reviewer" / "claude-code" / ".claude.json").read_text())
    assert kept["numStartups"] == 1 and "allowedTools" not in json.dumps(kept)

    assert execute(entry, []) == 0
    second = json.loads(seen.read_text())
    assert second["numStartups"] == 1  # the first launch's answer, as the second one began
    assert second["projects"][str(ws)] == {"hasTrustDialogAccepted": True}  # the plan's key, no grant
    assert json.loads((abhome / "state" / "reviewer" / "claude-code" / ".claude.json").read_text())["numStartups"] == 2
