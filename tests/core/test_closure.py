from agentbox.core.capability import Declarations
from agentbox.compile.compiler import closure
from agentbox.core.plan import LayerCoverage


def layer(name, support):
    return LayerCoverage(layer=name, support=support, mechanism="m")


def test_an_exact_sandbox_completes_a_partial_harness_layer():
    assert closure((layer("harness", "partial"), layer("sandbox", "exact"))) == "exact"


def test_two_partial_layers_stay_partial():
    assert closure((layer("harness", "partial"), layer("sandbox", "partial"))) == "partial"


def test_no_mechanism_anywhere_is_unsupported():
    assert closure((layer("harness", "unsupported"), layer("sandbox", "unsupported"))) == "unsupported"


DECL = Declarations.model_validate(
    {
        "layer": "h",
        "tested_versions": ["1.2.0", "1.4.0"],
        "tested_range": {"min": "1.2.0", "max": "1.4"},
        "dialects": [{"name": "old", "max": "1.2"}, {"name": "new", "min": "1.3.0"}],
        "capabilities": {
            "workspace.read_only": [
                {"support": "exact", "reason": "r", "dialects": ["new"]},
                {"support": "partial", "bypass_surfaces": ["shell"], "reason": "old"},
            ],
        },
    }
)


def test_a_version_selects_its_dialect():
    assert DECL.dialect_for("1.2.7") == "old"
    assert DECL.dialect_for("1.3.0") == "new"


def test_a_declaration_can_differ_per_dialect():
    assert DECL.report("workspace.read_only", "1.4.0").support == "exact"
    assert DECL.report("workspace.read_only", "1.2.0").support == "partial"


def test_a_version_outside_the_tested_range_is_at_most_partial():
    report = DECL.report("workspace.read_only", "1.5.0")
    assert report.support == "partial" and "outside the tested range" in report.reason


def test_an_unknown_version_is_never_exact():
    assert DECL.report("workspace.read_only", None).support == "partial"


def test_an_undeclared_capability_is_unsupported():
    assert DECL.report("shell.deny", "1.4.0").support == "unsupported"


def test_values_that_restrict_nothing_are_exact_everywhere():
    assert DECL.report("shell.allow", None).support == "exact"
