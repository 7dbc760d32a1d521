"""When recorded evidence is current for a build, and why not when it is not."""

from __future__ import annotations


from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.freshness import Here, expected_runs, freshness, sandbox_freshness
from synthetic import make_record


def complete(catalogue, **kw):
    return [make_record(catalogue, v, layer, "blocked", **kw) for v, layer in sorted(expected_runs(catalogue, "toy"))]


def judge(records, catalogue, sha="sha-a", revision="test"):
    return freshness(records, catalogue, revision, harness="toy", version="1.0", binary_sha256=sha)


def test_a_build_with_every_vector_run_observed_is_current(catalogue):
    f = judge(complete(catalogue), catalogue)
    assert f.current and f.covered == f.runs == 4


def test_a_build_without_records_is_missing(catalogue):
    assert judge([], catalogue).state == "missing"


def test_another_binary_with_the_same_version_is_stale_and_says_so(catalogue):
    f = judge(complete(catalogue, sha="sha-old"), catalogue, sha="sha-new")
    assert f.state == "stale" and "binary changed" in f.reason and "sha-old" in f.reason


def test_another_suite_revision_is_stale(catalogue):
    f = judge(complete(catalogue), catalogue, revision="next")
    assert f.state == "stale" and "suite revision changed" in f.reason


def test_another_catalogue_is_stale(catalogue):
    f = judge(complete(catalogue, digest="older"), catalogue)
    assert f.state == "stale" and "catalogue changed" in f.reason


def test_an_errored_newest_run_is_a_gap_even_after_an_earlier_block(catalogue):
    records = complete(catalogue) + [make_record(catalogue, "ro-shell", "composed", "error")]
    f = judge(records, catalogue)
    assert f.state == "stale" and f.covered == 3 and "ro-shell[composed]" in f.reason


def test_sandbox_alone_evidence_is_judged_per_backend_version(catalogue):
    records = [make_record(catalogue, "ro-shell", "sandbox", "blocked")]
    assert sandbox_freshness(records, catalogue, "test", backend="box", version="0.8.0").current
    assert "version changed" in sandbox_freshness(records, catalogue, "test", backend="box", version="0.9.0").reason


def test_records_that_do_not_speak_for_this_run_never_make_it_current(catalogue):
    records = [make_record(catalogue, "ro-shell", layer, "blocked") for layer in ("harness", "composed")] + [
        make_record(catalogue, "ro-file-tool", layer, "blocked") for layer in ("harness", "composed")
    ]
    observed = [
        r.model_copy(update={"run_info": r.run_info.model_copy(update={"provenance": "observed"})}) for r in records
    ]
    args = dict(harness="toy", version="1.0", binary_sha256="sha-a")
    assert freshness(observed, catalogue, "test", here=Here(provenance="observed", mode="headless"), **args).current
    synthetic = freshness(records, catalogue, "test", here=Here(provenance="observed"), **args)
    assert synthetic.state == "stale" and "recorded only as unlabelled records" in synthetic.reason
    tui = freshness(observed, catalogue, "test", here=Here(provenance="observed", mode="tui"), **args)
    assert not tui.current and "headless runs" in tui.reason
    other_kernel = freshness(observed, catalogue, "test", here=Here(kernel="6.18.0"), **args)
    assert not other_kernel.current and "kernel 6.1" in other_kernel.reason
    as_user = freshness(observed, catalogue, "test", here=Here(privilege="user"), **args)
    assert not as_user.current and "runs as root" in as_user.reason


def test_a_block_whose_control_did_not_pass_leaves_a_gap(catalogue):
    records = [
        make_record(catalogue, v, layer, "blocked", control="failed" if v == "ro-shell" else "passed")
        for v in ("ro-shell", "ro-file-tool")
        for layer in ("harness", "composed")
    ]
    fresh = freshness(records, catalogue, "test", harness="toy", version="1.0", binary_sha256="sha-a")
    assert fresh.state == "stale" and "2 of 4 vector runs missing or not observed" in fresh.reason


def test_a_build_on_which_the_catalogue_skips_a_vector_is_complete_without_it():
    from agentbox.prove.claims import default_catalogue_dir
    from agentbox.prove.vectors import load_catalogue

    shipped = load_catalogue(default_catalogue_dir())
    assert ("net-fetch-tool", "composed") not in expected_runs(shipped, "hermes", "0.13.0")
    assert ("net-fetch-tool", "composed") in expected_runs(shipped, "hermes", "0.19.0")


def test_a_users_run_is_complete_without_the_vectors_only_root_can_be_threatened_by():
    from agentbox.prove.claims import default_catalogue_dir
    from agentbox.prove.vectors import load_catalogue

    shipped = load_catalogue(default_catalogue_dir())
    root_only = {v.id for v in shipped.vectors if v.privileges == ("root",)}
    assert root_only, "the catalogue has vectors only root is threatened by"
    for harness in (None, "codex"):
        as_user = {vid for vid, _ in expected_runs(shipped, harness, "0.171.0", "user")}
        as_root = {vid for vid, _ in expected_runs(shipped, harness, "0.171.0", "root")}
        assert not as_user & root_only and root_only <= as_root | {
            v.id for v in shipped.vectors if harness is None and "sandbox" not in v.run_layers()
        }


def test_an_acp_record_of_another_adapter_build_is_stale_for_a_run_through_this_one(catalogue):
    old, new = (AgentBuild(name="toy-acp", version=v, sha256=v * 8) for v in ("0.15.0", "0.16.0"))
    args = dict(harness="toy", version="1.0", binary_sha256="sha-a")
    acp = complete(catalogue, mode="acp", adapter=old)
    assert freshness(acp, catalogue, "test", here=Here(mode="acp", adapter=old), **args).current
    upgraded = freshness(acp, catalogue, "test", here=Here(mode="acp", adapter=new), **args)
    assert upgraded.state == "stale"
    assert "recorded only as acp runs by adapter toy-acp 0.15.0 (sha256 0.15.00.15.0)" in upgraded.reason


def test_an_acp_record_from_before_the_adapter_was_recorded_is_stale_for_a_run_through_one(catalogue):
    adapter = AgentBuild(name="toy-acp", version="0.16.0", sha256="2" * 64)
    args = dict(harness="toy", version="1.0", binary_sha256="sha-a")
    f = freshness(complete(catalogue, mode="acp"), catalogue, "test", here=Here(mode="acp", adapter=adapter), **args)
    assert f.state == "stale" and "acp runs recorded before the adapter was recorded" in f.reason
