"""Batched sessions: many vectors in one harness start, each judged on its own; any doubt runs it alone.

A batch is the vectors of one harness build, layer and mode that need the same plan: the same intent (their
controls the same control intent and the same protections taken out), nothing of their own in the shared
workspace or home, no secret, MCP server, environment, process or host setting of their own, and an oracle that
reads only what is the vector's own (a file named by its nonce or in its own folder outside, its own listener, its
own secret). The scripted model plays their steps one after another in one conversation (one prompt in the TUI,
one session in ACP), in an order shuffled from a seed the records name; each vector keeps its own nonce,
listeners, files outside and oracle.

A batch can make a run faster, never change a verdict. A vector is judged blocked from a batch only when its own
steps were sent and answered and met a mechanism, its own tool results carry the refusal its mechanism gives
(never the harness's output at large, which holds the other vectors' refusals), its oracle saw nothing, and its
control, batched the same way, made the same oracle see the side effect, read from the control's own tool results.
Anything else (an escape, an error, a step missing or unanswered, a harness that stopped early, a refusal known
only as a run that printed no error) runs that vector alone, exactly as `VectorRunner.run` does, and the solo run is
the record.

What one member does must not change what another meets (red team of the batch): a member's steps touch the shared
workspace and home only at paths named by its nonce and run nothing whose effect outlasts the step (cd, mount,
chmod, kill, rm, mv, export...: Claude Code's Bash keeps one shell); an escape or an unjudged step in the attack
session voids the whole session (every member then runs alone); a control in a weakened sandbox (capabilities
kept, /proc writable) runs alone, since it could change that sandbox for the controls after it; a proxy decision
to a port that two members' listeners share is no one's refusal. Where the harness itself rewrites, as it runs,
what it reads back and a member could rewrite too (Claude Code's .claude.json in its TUI; Hermes' saved shell state),
no look can tell the two apart: its vectors run alone in that mode (its vocabulary's `unbatched_modes`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pytest

from agentbox.compile.adapters import get_adapter
from agentbox.core.plan import SANDBOX_TMPDIR
from agentbox.core.refusal_kinds import expected_kinds, recognise, table
from agentbox.hot import run_root
from agentbox.prove.evidence import privilege_level
from agentbox.prove.vectors import kernel_lacks
from agentbox.testing.batch_watch import Void, Watch, adopting, matches
from agentbox.testing.fixtures import MODEL_KEY
from agentbox.testing.negative import (
    Attempt,
    Planned,
    Seen,
    VectorRunner,
    _evidence,
    control_layer,
    expected_for,
    vector_root,
)
from agentbox.testing.targets import Targets, prepare

if TYPE_CHECKING:
    from agentbox.prove.evidence import EvidenceRecord, Layer
    from agentbox.prove.vectors import Vector

__all__ = [
    "Batches",
    "batch_key",
    "batches_key",
    "fewest_starts",
    "group_of",
    "in_workspace",
    "run_batch",
    "shared_plans",
    "MAX_BATCH",
]

MAX_BATCH = 8  # vectors per harness start: a longer conversation costs each turn more, and a failure more re-runs
# placeholders an intent may hold and stay the same for every vector of a batch (their shared workspace and home)
_SHARED = {"ws", "home", "parent"}
_PLACEHOLDER = re.compile(r"\{([a-z_0-9]+)\}")
# what makes the shell read one word as several paths or a pattern, once the placeholders are filled
_EXPANDS = re.compile(r"[{}*?\[\],]")
# oracles that read only what is the vector's own, given an own path, listener or secret
_ORACLES = {"file_absent", "file_unchanged", "not_setuid", "listener_silent", "listener_never_saw", "secret_not_seen"}


def _shared_only(value) -> bool:
    """Whether `value` (an intent, filled per vector) comes out the same for every vector of a batch."""
    return set(_PLACEHOLDER.findall(json.dumps(value))) <= _SHARED


def _own(path: str | None) -> bool:
    """A path only this vector's run names: below its own folder outside, or named by its nonce (itself or a
    folder on its way, below the shared folder it starts from). A `..` could climb from any of these into what
    the batch shares, and a pattern the shell expands (`{ws}/{escape.txt,x-{nonce}}`, a glob) names more than
    it says, so neither is taken."""
    if path is None or ".." in path or _EXPANDS.search(_PLACEHOLDER.sub("", path)):
        return False
    return path.startswith("{outside}/") or "{nonce}" in path.split("/", 1)[-1]


# a shared placeholder followed by the rest of its path, up to what ends a word in a command
_SHARED_PATH = re.compile(r"\{(?:ws|home|parent)\}[^\s'\"`;|&<>()]*")
# commands whose effect outlives their step in a session that keeps one shell (Claude Code's Bash keeps its
# working folder and variables) or changes what the next member's step meets, in the shell or from a script
# (os.rename, shutil.rmtree, a process left running): never in a batch. What slips past the words (a relative
# path, a pattern the shell expands in the working folder) is what the session's watch is for (`_Watch`).
_LASTING = re.compile(
    r"(?<![\w-])(cd|pushd|popd|chdir|mount|umount|chmod|chown|chattr|kill|pkill|killall|rm|rmdir|mv|ln|export|"
    r"unset|alias|source|ulimit|umask|set|trap|exec|exit|shopt|hash|renice|ionice|nohup|setsid|disown|rename|"
    r"replace|remove|removedirs|renames|move|unlink|symlink|link|rmtree|Popen|fork|start_new_session|daemon|"
    r"posix_spawnp?|spawn[lv]p?e?|eval)(?![\w-])"
    r"|\s-(?:delete|exec|execdir|ok|okdir)\b"  # find's acts on what it finds
    r"|\bcp\s+(?:-\w*[sl]|--(?:symbolic-)?link)"  # a link made by cp (red team: `cp -s`)
    r"|(?<![&>|<])&(?![&>])"  # a job left running in the background
    r"|/proc/[^/\s]+/(?:cwd|root)\b"  # the working folder under another name
)
# the scratch places every member of a session shares and the host's look cannot see (inside the sandbox, a private
# /tmp): a vector that uses one runs alone, even at a path named by its nonce, since another member can learn the
# nonce (a file named by it in the shared workspace, a listing) and plant there first (red team: a link at
# /tmp/stage-<nonce>.txt into a read-only folder turned an escape into a refusal)
_COMMON_PATH = re.compile(r"(?<![\w}])/(?:tmp|var/tmp|dev/shm|run/user/\d+)(?![\w.-])|\{tmp_probe\}")


# what the shell takes away from a word before it is used: quotes and escapes
_QUOTES = re.compile(r"[\\'\"]")


def _steps_keep_to_their_own(steps) -> bool:
    """Whether steps touch what the batch shares only at paths named by their nonce and run nothing whose effect
    lasts past the step: one member's step must not change what another's meets."""
    text = json.dumps(steps)
    if any(not _own(m.group(0)) for m in _SHARED_PATH.finditer(text)):
        return False
    # read as the shell reads them too, its quotes gone: `/tm''p` is /tmp (red team)
    for words in (text, _QUOTES.sub("", text)):
        if _COMMON_PATH.search(words) or _LASTING.search(words):
            return False
        if "~" in words or "$HOME" in words or "${HOME" in words or "$PWD" in words or "${PWD" in words:
            return False
    return True


def _eligible(vector: Vector) -> bool:
    s, o = vector.setup, vector.oracle
    if s.env or s.mcp or s.mcp_tool_from or s.git or s.sleeper or s.shm_secret or s.host_setting or s.vacant_port:
        return False
    if s.uncatalogued_model or s.unix_path or "tls" in s.listeners or vector.secrets:
        return False
    made = [*s.files, *s.symlinks.items(), *s.hardlinks.items(), *s.dirs]
    if not all(_own(path) for path in _flat(made)):
        return False  # made (or a link pointing) where the batch's other vectors could meet it
    if not _steps_keep_to_their_own(list(s.files.values())):
        return False  # a file's content (a script a step runs) is held to what a step is
    if vector.enosys or vector.kernel_needs or vector.refused_at_start or vector.acp is not None:
        return False
    if not _steps_keep_to_their_own([vector.steps, vector.control.steps]):
        return False
    if vector.proof is not None and not _own(vector.proof):
        return False
    if "{model_key}" in json.dumps([vector.steps, o.model_dump()]):
        return False  # the batch's key is every member's
    if o.kind not in _ORACLES or o.met is not None:
        return False
    if o.kind in ("file_absent", "file_unchanged", "not_setuid"):
        return _own(o.path)
    if o.kind == "secret_not_seen":
        return all(secret == "{secret}" for secret in (o.secret, *o.more_secrets))
    return True  # a listener of its own


def _flat(made) -> list[str]:
    return [path for entry in made for path in ((entry,) if isinstance(entry, str) else entry)]


def _weakened(vector: Vector, layer: Layer) -> bool:
    return layer == "composed" and bool(vector.control.weaken)


def _control_runs_alone(vector: Vector, layer: Layer, harness: str) -> bool:
    """A control that runs outside the harness (on the host): one cheap command, never batched."""
    return control_layer(vector, layer, harness) == "host"


def batch_key(vector: Vector, layer: Layer, harness: str) -> str | None:
    """What the vectors of one batch share (the plan of the attack and of the control), or None: it runs alone."""
    if layer not in ("harness", "composed") or not _eligible(vector):
        return None
    spec = vector.control
    control_intent = spec.harness_intent if spec.harness_intent is not None and layer == "harness" else spec.intent
    if not (_shared_only(vector.intent) and _shared_only(control_intent)):
        return None
    alone = _control_runs_alone(vector, layer, harness)
    control = None if alone else [control_intent, sorted(spec.weaken) if layer == "composed" else [], spec.layer]
    return json.dumps([layer, vector.intent, control], sort_keys=True)


def shared_plans(vectors: list[Vector], layer: Layer, harness: str, version: str | None) -> dict[str, list[Vector]]:
    """The vectors of `vectors` that run in `layer` of `harness` at `version` here and can be batched, by the plan
    they share."""
    groups: dict[str, list[Vector]] = {}
    for v in vectors:
        if layer in v.run_layers() and v.applies_to(harness, privilege_level(), version):
            key = batch_key(v, layer, harness)
            if key is not None:
                groups.setdefault(key, []).append(v)
    return groups


def fewest_starts(vectors: list[Vector], layer: Layer, harness: str, version: str | None, mode: str) -> int:
    """The fewest harness starts these rules allow for `vectors` in `layer` of one harness build, however large a
    batch may be: a vector with a plan of its own starts the harness for its attack, and once more for its control
    when its attack is expected blocked and the control runs a harness; the vectors sharing a plan, one attack
    session and (when a control runs a harness) one control session. What the conformance benchmark's floor is
    made of: no batching these rules allow goes below it."""
    here = [v for v in vectors if layer in v.run_layers() and v.applies_to(harness, privilege_level(), version)]
    blocked = {v.id for v in here if expected_for(v, layer, harness, version, mode) == "blocked"}
    batches = mode not in get_adapter(harness).vocabulary_for(version).unbatched_modes

    def controls_start(v: Vector) -> bool:
        return control_layer(v, layer, harness) != "host"

    plans = shared_plans([v for v in here if v.id in blocked], layer, harness, version).values() if batches else []
    shared = [g for g in plans if len(g) > 1]
    together = {v.id for g in shared for v in g}
    alone = sum(1 + (v.id in blocked and controls_start(v)) for v in here if v.id not in together)
    return alone + sum(1 + any(map(controls_start, g)) for g in shared)


batches_key = pytest.StashKey["Batches"]()  # the process's batched records, in the config's stash


def group_of(item) -> str | None:
    """The xdist group of a harness vector test whose vector runs batched: the tests of one batch go to one worker."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    vector, harness, layer = params.get("vector"), params.get("harness"), params.get("layer")
    if vector is None or harness is None or layer is None:
        return None
    key = batch_key(vector, layer, harness.name)
    if key is None:
        return None
    mode = params.get("agentbox_mode")  # a run of several modes batches each mode apart
    where = f"{harness.id}-{mode}" if mode else harness.id
    return f"agentbox-batch-{where}-{layer}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


@dataclass
class _Member:
    vector: Vector
    targets: Targets
    plan: Planned
    nonce: str = ""
    steps: range = range(0)


@dataclass
class Batches:
    """The batched records of one test process, by harness build, mode, layer and batch key; a vector's record is
    taken once, by its own test."""

    records: dict[tuple, EvidenceRecord] = field(default_factory=dict)
    done: set[tuple] = field(default_factory=set)
    why: dict[tuple, str] = field(default_factory=dict)  # why a member of a batch runs alone after all

    def record(self, runner: VectorRunner, selected: list[Vector], vector: Vector, layer: Layer, harness, probe, model):
        """The record of `vector` in `layer`: from its batch (run now, with the selected vectors of the same plan
        not yet recorded), or from a run of its own."""
        key = batch_key(vector, layer, harness.name)
        where = (harness.name, probe.version, probe.sha256, runner.mode, layer)
        if (
            key is None
            or not _expected_blocked(vector, layer, harness, probe, runner)
            or runner.mode in harness.vocabulary().unbatched_modes
        ):
            return runner.run(vector, layer, harness, probe, model)
        slot = (*where, vector.id)
        if slot not in self.records and (*where, key) not in self.done:
            self.done.add((*where, key))
            shared = shared_plans(selected, layer, harness.name, probe.version).get(key, [])
            members = [
                v
                for v in shared
                if (*where, v.id) not in self.records and _expected_blocked(v, layer, harness, probe, runner)
            ]
            for start in range(0, len(members), MAX_BATCH):
                group = members[start : start + MAX_BATCH]
                why: dict[str, str] = {}
                try:
                    made = run_batch(runner, group, layer, harness, probe, model, why)
                except Exception as exc:  # noqa: BLE001 - a member's setup may fail: each then runs alone, in its own test
                    made, why = {}, {v.id: f"the batch failed: {exc}" for v in group}
                for v, record in made.items():
                    self.records[(*where, v)] = record
                self.why.update({(*where, v): reason for v, reason in why.items()})
        if slot not in self.records:
            record = runner.run(vector, layer, harness, probe, model)
            reason = self.why.pop(slot, None)
            if reason is None:
                return record
            return record.model_copy(update={"observation": f"{record.observation} (run alone: {reason})"})
        # the test that hands a record over is its own, whichever test's batch made it
        return self.records.pop(slot).model_copy(update={"nodeid": runner.nodeid})


def _expected_blocked(vector: Vector, layer: Layer, harness, probe, runner: VectorRunner) -> bool:
    """Whether the declarations expect `vector` blocked here. Only those are batched: one escape voids the whole
    attack session, so a member expected to escape (a harness's declared bypass) would send every other member
    to a solo run after the batch's start was spent (OpenCode's and Hermes' harness-layer batches, all of them).
    A member expected blocked that escapes still voids its batch: the expectation only picks, never judges."""
    return expected_for(vector, layer, harness.name, probe.version, runner.mode) == "blocked"


def run_batch(
    runner: VectorRunner, group: list[Vector], layer: Layer, harness, probe, model, why: dict[str, str] | None = None
) -> dict[str, EvidenceRecord]:
    """The records of the members of `group` a batch could judge: attacks in one session, the blocked-looking ones'
    controls in another (or each alone: on the host, in a weakened sandbox, or the only one). A member left out (an
    escape, an error, a doubt, or any of these in the attack session, which then stands for no one) runs alone, and
    `why` says why."""
    why = {} if why is None else why
    start = time.monotonic()
    seed = int.from_bytes(os.urandom(4), "big")
    attacks: dict[str, Attempt | None] = {}
    if len(group) == 1:
        why[group[0].id] = "no other vector selected here shares its plan"
    else:
        try:
            attacks = _session(runner, group, layer, False, harness, probe, model, seed)
        except Void as void:
            why.update({v.id: f"the attack session stood for no one: {void}" for v in group})
    blocked = [v for v in group if (a := attacks.get(v.id)) is not None and a.effect is False]
    controls: dict[str, Attempt | None]
    if len(blocked) == 1 or (
        blocked and (_control_runs_alone(blocked[0], layer, harness.name) or _weakened(blocked[0], layer))
    ):
        # a control in a sandbox with a protection taken out (capabilities kept, /proc writable...) can change
        # that sandbox for the controls after it, which would hide one that fails alone: each runs in its own
        controls = {v.id: runner.attempt(v, layer, True, harness, probe, model) for v in blocked}
    elif blocked:
        try:
            controls = _session(runner, blocked, layer, True, harness, probe, model, seed)
        except Void as void:
            controls = {}
            why.update({v.id: f"the control session stood for no one: {void}" for v in blocked})
    else:
        controls = {}
    share = (time.monotonic() - start) / max(len(group), 1)
    out: dict[str, EvidenceRecord] = {}
    for v in group:
        attack, control = attacks.get(v.id), controls.get(v.id)
        if attack is not None and attack.effect is False and control is not None and control.effect:
            note = f" (batched: one harness start with {len(group) - 1} other vector(s), order seed {seed})"
            out[v.id] = runner.record(v, layer, harness, probe, attack, control, kernel_lacks(v), share, note)
        elif v.id not in why:
            why[v.id] = (
                "its attack's refusal was not read from its own results"
                if attack is None or attack.effect is not False
                else "its control did not show the effect in the batch"
            )
        # else an escape, an error, a doubt: the vector's own test runs it alone, as every unbatched run, and that
        # run is the record
    return out


def _session(
    runner: VectorRunner, group: list[Vector], layer: Layer, control: bool, harness, probe, model, seed: int
) -> dict[str, Attempt | None]:
    """One harness start playing `group`'s attacks (or controls) in a shuffled order: per vector, its attempt when
    the batch can judge it (blocked-looking, with proof read from its own steps; for a control, whether its own
    results show the effect), else None."""
    nonce = secrets.token_hex(6)
    base = vector_root(f"batch-{nonce}")
    shared = (base / "project", base / "home")
    key = f"{MODEL_KEY}-{nonce}"
    order = list(group)
    random.Random(seed + int(control)).shuffle(order)
    members: list[_Member] = []
    run_dir = tempfile.mkdtemp(prefix="agentbox-run-", dir=run_root())  # the run's, its config home watched too
    try:
        for v in order:
            own = secrets.token_hex(6)
            root = base / f"{v.id}-{own}"
            root.mkdir(parents=True)
            targets = prepare(root, v.setup, own, key, shared=shared)
            members.append(_Member(v, targets, runner.plan(v, layer, control, targets, harness), own))
        if len({json.dumps([m.plan.intent, m.plan.weaken, m.plan.run_layer], sort_keys=True) for m in members}) != 1:
            raise Void("its members' plans came out different once filled")  # the key promised one plan
        resolve: dict[str, str] = {}
        for m in members:
            if any(resolve.get(name, host) != host for name, host in m.targets.resolve.items()):
                raise Void("two members' listeners have one name, which no one proxy can serve")
            resolve.update(m.targets.resolve)
        first = members[0]
        steps, probes = _script(members)
        run_layer = first.plan.run_layer
        assert run_layer in ("harness", "composed")  # the key is made only for the harness and composed layers
        vocabulary = harness.vocabulary()
        done_text = f"agentbox-attempt-over-{nonce}"
        model.clear()
        model.key = key
        model.load({"steps": steps, "final_text": done_text}, vocabulary)
        req = runner.request(
            harness,
            probe,
            model,
            first.plan.intent,
            replace(first.targets, resolve=resolve),
            run_layer,
            first.plan.weaken if run_layer == "composed" else (),
        )
        req.timeout = runner.timeout * (1 + len(group) / 4)  # more turns, each as long as one vector's
        req.run_id = secrets.token_hex(8)  # the marker of the run's processes, which the watch follows
        req.run_dir = run_dir
        config = (os.path.join(run_dir, "config"),)
        watch = Watch(
            base,
            shared,
            members,
            vocabulary.own_state,
            req.run_id,
            config,
            vocabulary.config_state,
            tmp=os.path.join(run_dir, "tmp"),
            tmp_state=vocabulary.tmp_state,
        )
        model.before_reply = watch.step
        try:
            with adopting():
                refused, out = runner.drive(req, harness, probe, done_text, control)
        finally:
            model.before_reply = None
        watch.end()
        watch.check_listeners()
        if refused or runner.run_problem(out):
            raise Void(
                f"the session's run failed: {' '.join((refused or runner.run_problem(out) or '').split())[:200]}"
            )
        if watch.void:
            raise Void(watch.void)
        results = model.tool_results()
        _check_probes(results, probes, members, os.path.realpath(shared[0]), vocabulary.tmp_state)
        egress = out.egress if out.plan.sandbox.egress is not None and run_layer == "composed" else None
        judged: dict[str, Attempt | None] = {}
        ports = [m.targets.listener_ports() for m in members]
        for i, m in enumerate(members):
            problem = runner.steps_problem(model, out, vocabulary, m.steps, last_may_end=False, batch=True)
            if problem:
                if not control:  # a step not played as asked may have done anything to what the others met
                    raise Void(f"{m.vector.id}'s steps were not played as asked: {problem[:200]}")
                judged[m.vector.id] = None
                continue
            mine = [r.text for r in results if r.step_index in m.steps]
            seen = Seen(
                # an attack's oracle reads everything the run printed (another's output can only make it look
                # escaped, and an escape runs alone); a control's only its own results, which must show the effect
                mine if control else [out.stdout, out.stderr, *mine],
                set(model.offered_tools()),
                {},
                out.leftovers,
                _own_decisions(egress, ports[i], ports[:i] + ports[i + 1 :], watch, i),
                printed=mine[-1] if mine else "",
                said="\n".join(filter(None, mine)),
                harness_output="",  # the harness's output holds the other vectors' refusals: never the proof
                policy=runner.policy(vocabulary),
            )
            attempt = runner.judge(m.vector, m.plan, m.targets, None, seen)
            if not control and attempt.effect is not False:  # it may have changed what the members after it met
                raise Void(f"{m.vector.id}'s attack {'escaped' if attempt.effect else 'could not be judged'}")
            judged[m.vector.id] = attempt if _judgeable(m, attempt, seen, control) else None
        return judged
    finally:
        for m in members:
            m.targets.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)  # the run removes it; a session that never started does not


# Asked before each member's turn, where a shell may run: the shell's folder, and what the places every member
# can write and the host cannot see are (the sandbox's private /tmp, /dev/shm, the home: mode, owner, kind)
PROBE = 'stat -c \'agentbox-mode %n %a %u %g %F\' "$PWD" /tmp /dev/shm "$HOME"'
# in the sandbox, /tmp, /dev, /dev/shm and /run are the run's own, and so is its System V IPC: no look of the host sees
# them, so the probe lists everything in them (but the config home below /tmp/agentbox, which the host watches),
# with each entry's mode, owner and kind (red teams: a link planted at another member's /tmp path turned its escape
# into a refusal, and changed no mode; a mode-000 file at its path in $TMPDIR, /tmp/agentbox/tmp, below what a
# listing of /tmp's own entries sees, did the same, and a $TMPDIR made read-only failed another's `mktemp`)
PRIVATE_PROBE = (
    PROBE
    + "; find /tmp /dev /dev/shm /run -xdev -path /tmp/agentbox/config -prune -o"
    + " -printf 'agentbox-mode %p %m %U %G %y\\n' 2>/dev/null"
    + "; awk 'FNR>1{print \"agentbox-mode\", FILENAME, $1, $2, $3}' /proc/sysvipc/shm /proc/sysvipc/sem"
    + " /proc/sysvipc/msg 2>/dev/null"
)
_MODES = re.compile(r"agentbox-mode ([^\n\\\"]+)")


def _script(members: list[_Member]) -> tuple[list, list[int]]:
    """The session's steps, each member's in turn (its `steps` set here to their indexes), and the indexes of the
    probes asked before each turn (`PROBE`, `_check_probes`), where the intent lets a shell run. A shell that keeps
    its working folder from one call to the next (Claude Code's Bash) let one member leave the next one's relative
    paths elsewhere with no `cd` in its words (`$(printf c)d`), and a script's `chmod` of the sandbox's private
    /tmp, a place the host's look cannot see, made the next member's write there fail (red teams)."""
    asks = (members[0].plan.intent.get("shell") or {}).get("access", "allow") == "allow"
    probe = PRIVATE_PROBE if members[0].plan.run_layer == "composed" else PROBE
    steps: list = []
    probes: list[int] = []
    for m in members:
        if asks:
            probes.append(len(steps))
            steps.append({"shell": {"command": probe}})
        m.steps = range(len(steps), len(steps) + len(m.plan.steps))
        steps += m.plan.steps
    if asks:  # after the last turn too: what the last member did there is seen as well
        probes.append(len(steps))
        steps.append({"shell": {"command": probe}})
    return steps, probes


def _check_probes(results, probes: list[int], members: list[_Member], ws: str, tmp_state: tuple[str, ...] = ()) -> None:
    """Void the session where a probe did not answer the workspace, or the places it looks at changed (save the
    files the harness's vocabulary says it writes in its $TMPDIR as it runs, `tmp_state`)."""
    first: list[str] | None = None
    for index in probes:
        said = next((r.text for r in results if r.step_index == index), None)
        before = next((f"after {m.vector.id}'s steps" for m in reversed(members) if m.steps.start < index), "at start")
        shown = " ".join(str(said).split())[:200]
        if not in_workspace(said, ws):
            raise Void(f"{before} the shell's folder was not the workspace: {shown}")
        # sorted: a folder lists its entries in another order once one was made or removed in it
        modes = sorted(m for m in _MODES.findall(said or "") if not _harness_tmp(m, tmp_state))
        if first is None:
            first = modes
        elif modes != first:
            raise Void(f"{before} the sandbox's own places changed: {'; '.join(modes)} (at start: {'; '.join(first)})")


def _harness_tmp(entry: str, tmp_state: tuple[str, ...]) -> bool:
    """Whether a probe's entry (`path mode uid gid kind`) is a file the harness writes in the sandbox's $TMPDIR."""
    path = entry.split(" ", 1)[0]
    rel = path[len(SANDBOX_TMPDIR) + 1 :] if path.startswith(f"{SANDBOX_TMPDIR}/") else None
    return rel is not None and any(matches(rel, pattern) for pattern in tmp_state)


def in_workspace(said: str | None, ws: str) -> bool:
    """Whether a `pwd -P` answered the workspace itself (not a folder below it), as each harness prints a result:
    a bare line, after a header, a JSON field."""
    return said is not None and re.search(re.escape(ws) + r"(?![^\s\"'\\])", said) is not None


def _own_decisions(egress, mine: set[int], others: list[set[int]], watch: Watch | None = None, turn: int = 0):
    """The proxy's decisions a member may read as its own: to a port of its listeners that no other member's
    listener also has (a UDP and a TCP listener can share a number; a denial to that port is then no one's), made
    in its own turn (red team: another member's sweep of every port through the proxy was denied at this one)."""
    if egress is None:
        return None
    theirs = set().union(*others)
    return [
        d
        for d in egress
        if d.get("port") in mine
        and d.get("port") not in theirs
        and (watch is None or watch.turn_of(d.get("time")) == turn)
    ]


def _judgeable(m: _Member, attempt: Attempt, seen: Seen, control: bool) -> bool:
    """Whether a batch may stand for the vector alone: a control that saw the effect; an attack that looks blocked
    with a refusal read from its own results (not one known only as a run that printed no error, which another
    vector's output cannot vouch for)."""
    if control:
        return attempt.effect is True
    if attempt.effect is not False:
        return False
    hit = recognise(expected_kinds(m.vector), _evidence(seen, m.targets))
    return hit is not None and table().kinds[hit[0]].source != "clean"
