"""The first ten minutes on the command line (issue 29): every ``--help`` has examples that parse and a pointer to
the docs, names the papers behind its "seed NNN" numbers and no internal issue number; a misspelt subcommand,
protocol, mechanism, flag or choice gets a "did you mean"; ``--data``'s help lists every form the data parser takes."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from shufflesim.cli.main import build_parser, main
from shufflesim.core.papers import SEED_PAPERS, seeds_named


def _walk(parser, path=("shufflesim",)):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in dict.items(action.choices):
                yield from _walk(sub, path + (name,))


PARSERS = dict(_walk(build_parser("*")))


def test_the_walk_reaches_every_protocol_and_mechanism():
    from shufflesim.mechanisms import kinds
    from shufflesim.pipeline import registry

    assert {f"shufflesim simulate {p}" for p in registry.names()} <= PARSERS.keys()
    assert {f"shufflesim account {k}" for k in kinds()} <= PARSERS.keys()
    assert len(PARSERS) > 50


@pytest.mark.parametrize("path", sorted(PARSERS))
def test_help_has_examples_docs_and_seed_key(path):
    text = PARSERS[path].format_help()
    assert "\nexamples:\n  shufflesim " in text, f"{path} --help shows no example"
    assert "\ndocs: " in text, f"{path} --help points to no documentation"
    for num in seeds_named(text.split("\npapers:\n")[0]):
        assert f"seed {num} = {SEED_PAPERS[num]}" in text, f"{path} --help names seed {num} without its paper"


def test_no_help_names_an_internal_issue():
    bad = [path for path, p in PARSERS.items() if re.search(r"\bissues?\s*#?\d", p.format_help(), re.IGNORECASE)]
    assert not bad, f"--help texts naming an internal issue: {bad}"


def _example_argv(line: str) -> list[str]:
    return shlex.split(line.split("   #")[0].split("  #")[0])[1:]


@pytest.mark.parametrize("path", sorted(PARSERS))
def test_help_examples_parse(path, monkeypatch):
    """Each example is a valid command line of its own command (parsed, not run)."""
    for line in PARSERS[path].examples:
        argv = _example_argv(line)
        assert argv[: len(path.split()) - 1] == path.split()[1:], f"{line!r} is not an example of {path}"
        build_parser(argv[0]).parse_args(argv)


@pytest.mark.parametrize("argv,hint", [
    (["simulte", "krr"], "did you mean 'simulate'?"),
    (["simulate", "krrr", "--n", "10"], "did you mean 'krr'?"),
    (["account", "rr3", "--n", "10"], "did you mean 'rr2'?"),
    (["simulate", "krr", "--n", "100", "--k", "3", "--epss0", "1"], "did you mean '--eps0'?"),
    (["run", "--qiuck"], "did you mean '--quick'?"),
    (["simulate", "krr", "--n", "10", "--k", "3", "--eps0", "1", "--adversary", "weka"], "did you mean 'weak'?"),
    (["--verison"], "did you mean '--version'?"),
])
def test_did_you_mean(argv, hint, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and hint in err, err


def test_did_you_mean_names_the_parser_of_the_flag(capsys):
    assert main(["simulate", "krr", "--n", "100", "--k", "3", "--epss0", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: shufflesim simulate krr: unrecognized arguments: --epss0")


def test_library_protocol_name_did_you_mean():
    from shufflesim.errors import ParameterError
    from shufflesim.pipeline import registry

    with pytest.raises(ParameterError, match="did you mean 'blanket-sum'"):
        registry.get("blanket_sum")


def test_no_suggestion_for_a_name_like_nothing():
    from shufflesim.core.checks import did_you_mean

    assert did_you_mean("zzzzzz", ["krr", "rr2"]) == ""
    assert did_you_mean("krr ", ["krr", "rr2"]) == "; did you mean 'krr'?"


def test_data_help_lists_every_form_the_parser_takes():
    from shufflesim.experiments.data import CATEGORICAL_KINDS, REAL_KINDS, SPEC_FORMS, parse_data_spec

    assert set(CATEGORICAL_KINDS) | set(REAL_KINDS) | {"file"} == set(SPEC_FORMS)
    for kind, (form, example) in SPEC_FORMS.items():
        assert parse_data_spec(example).kind == kind, (kind, example)
    help_text = " ".join(PARSERS["shufflesim simulate krr"].format_help().split())
    for form, _ in SPEC_FORMS.values():
        assert form in help_text, form


def test_one_default_adversary_for_simulate_and_account(capsys):
    """``simulate krr`` certifies the shuffled reports by default; ``account krr`` without --adversary accounts the
    same view (it refused before), and both defaults are the one constant."""
    import json

    from shufflesim.mechanisms.krr import DEFAULT_ADVERSARY
    from shufflesim.pipeline import registry

    opt = {o.name: o for o in registry.get("krr").options}["adversary"]
    assert opt.default == DEFAULT_ADVERSARY.value == "shuffled"
    assert registry.create("krr", 1000, k=4, gamma=0.25).params["adversary"] == DEFAULT_ADVERSARY.value
    out = []
    for extra in ([], ["--adversary", DEFAULT_ADVERSARY.value]):
        assert main(["account", "krr", "--n", "1000", "--k", "4", "--gamma", "0.25", "--delta", "1e-6", "--json",
                     *extra]) == 0
        out.append(json.loads(capsys.readouterr().out)["results"][0])
    assert out[0]["eps_upper"] == out[1]["eps_upper"] and out[0]["eps_lower"] == out[1]["eps_lower"]


def test_validate_max_seconds_in_effect_is_the_one_given_or_shown():
    """``validate --max-seconds 5 krr ...`` ran with the PROTOCOL sub-parser's default (60) before; the help shows
    the default in effect for each path."""
    from shufflesim.cli.validate import ALL_MAX_SECONDS, MAX_SECONDS, max_seconds

    p = build_parser("validate")
    krr = ["krr", "--n", "100", "--k", "3", "--eps0", "1"]
    assert max_seconds(p.parse_args(["validate", "--max-seconds", "5", *krr]), MAX_SECONDS) == 5.0
    assert max_seconds(p.parse_args(["validate", *krr, "--max-seconds", "7"]), MAX_SECONDS) == 7.0
    assert max_seconds(p.parse_args(["validate", *krr]), MAX_SECONDS) == MAX_SECONDS
    assert p.parse_args(["validate", "--alpha", "0.01", *krr]).alpha == 0.01
    assert max_seconds(p.parse_args(["validate", "--all"]), ALL_MAX_SECONDS) == ALL_MAX_SECONDS
    for path in ("shufflesim validate", "shufflesim validate krr"):
        text = " ".join(PARSERS[path].format_help().split())
        assert f"default: {MAX_SECONDS:g} for one PROTOCOL, {ALL_MAX_SECONDS:g} for each setting of --all" in text


def test_readme_keys_the_seed_numbers_before_using_them():
    """The README's key from "seed NNN" to the papers (the same as the --help key) comes before its first use."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| (\d{3}) \| (.*) \|$", text, re.M)}
    assert set(rows) == set(SEED_PAPERS)
    for num, paper in SEED_PAPERS.items():
        ident = paper.rsplit(", ", 1)[-1]
        assert paper.split(",")[0] in rows[num] and ident.strip("()") in rows[num], (num, rows[num])
    key, first_row = text.index("**The papers.**"), text.index("| 000 |")
    first_use = re.search(r"[Ss]eeds? 00\d", text).start()
    assert key <= first_use < first_row, "the README names a seed before its key"


def test_gitignore_covers_the_readme_output_folders():
    """Every folder a README command writes into the checkout is ignored by git."""
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    text = (root / "README.md").read_text()
    folders = set(re.findall(r"--out(?:put)? ([a-z][\w.-]*)", text)) | set(re.findall(r'run_sweep\(\w+, "([\w.-]+)"', text))
    folders |= {"shufflesim-demo"}
    assert {"shufflesim-quickstart", "runs", "run-fig1"} <= folders
    r = subprocess.run(["git", "check-ignore", "--no-index", *(f"{f}/x" for f in sorted(folders))], cwd=root,
                       capture_output=True, text=True)
    ignored = {line.split("/")[0] for line in r.stdout.split()}
    assert ignored == folders, f"not ignored: {sorted(folders - ignored)}"


def test_every_doc_naming_seed_numbers_keys_them():
    """A document that says "seed 00N" links the key (docs/theory.md#seed-numbers), or is that key.  FINDINGS.md is
    generated by ``claims report`` and names each paper in its claims."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    docs = [root / "README.md", root / "scenarios" / "README.md", root / "reports" / "README.md",
            *sorted((root / "docs").glob("*.md"))]
    unkeyed = [d.name for d in docs if seeds_named(d.read_text()) and "seed-numbers" not in d.read_text()]
    assert not unkeyed, f"documents naming seed numbers without the key: {unkeyed}"


def test_did_you_mean_for_scenario_keys_and_protocol_parameters():
    from shufflesim.errors import ParameterError
    from shufflesim.pipeline import registry
    from shufflesim.scenarios.schema import ScenarioError, validate

    with pytest.raises(ScenarioError, match=r"sweep\[0\]\.trails: unknown key \(valid keys: .*\); did you mean 'trials'\?"):
        validate({"title": "t", "paper": "p", "reproduces": "none", "seed": 1,
                  "sweep": [{"name": "s", "protocol": "krr", "n": 100, "trails": 5}]})
    with pytest.raises(ParameterError, match="did you mean 'eps0'"):
        registry.check_params("krr", {"epsilon0": 1.0})


def test_one_main_job():
    """``shufflesim --help`` and the README name the same main job (the help called ``demo`` the main job, the
    README ``run scenarios/quickstart.toml``)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    setup = re.search(r"^python3 -m venv \.venv && .*&& \.venv/bin/(shufflesim .*)$", readme, re.M).group(1)
    top = PARSERS["shufflesim"]
    mains = [e.split("  #")[0].strip() for e in top.examples if "the main job" in e]
    assert mains == [setup] and f"The main job: {setup.split(' --out')[0]}" in " ".join(top.format_help().split())
    assert not [p for p, parser in PARSERS.items() if "main job" in parser.format_help() and p != "shufflesim"
                and "run scenarios/quickstart.toml" not in parser.format_help()]


def _default_probes(name, cls):
    """Instances of mechanism ``cls`` on every side of its default's rules (and sampled, where it takes it)."""
    from shufflesim.accounting.exact.exact_rr2 import DEFAULT_EXACT_MAX_N, MAX_N_EXACT, MAX_N_POPULATION
    from shufflesim.accounting.model.mechanism import Sampling
    from shufflesim.mechanisms import KRR, RR2
    from shufflesim.mechanisms.sampled import SAMPLED_KINDS, with_sampling

    if name == "matrix":  # its example reads a file: a sampler known by its eps0, and a matrix
        return [cls(100, None, 1.5), cls(100, ((0.7, 0.3), (0.1, 0.9)), None)]
    args = build_parser("account").parse_args(_example_argv(f"shufflesim account {name} {cls.example}"))
    example = cls.from_flags(**{f.dest: getattr(args, f.dest) for f in cls.flags})
    probes = [example]
    if name == "rr2":
        probes += [RR2(n, 1.0) for b in (DEFAULT_EXACT_MAX_N, MAX_N_EXACT, MAX_N_POPULATION) for n in (b, b + 1)]
    if name == "krr":
        probes += [KRR.from_eps0(100, 3, 1.0, rel) for rel in (None, "shuffled", "strong-1d", "strong", "weak")]
    if name in SAMPLED_KINDS:
        probes += [with_sampling(example, Sampling.poisson(0.5)), with_sampling(example, Sampling.fixed(1))]
    return probes


@pytest.mark.parametrize("name", sorted(__import__("shufflesim.mechanisms", fromlist=["kinds"]).kinds()))
def test_stated_default_method_is_the_one_used(name):
    """``--method``'s help states the default the accountant uses (default_for), on every side of its rules: krr's
    help said tight (blanket for the shuffled view) and rr2's 'tight above n = 1e5' (exact single use to 1e9)."""
    from shufflesim.cli.account import default_method_help, default_method_rules
    from shufflesim.mechanisms import kinds

    cls = kinds()[name]
    assert f"default: the mechanism's own ({default_method_help(cls)})" in " ".join(
        PARSERS[f"shufflesim account {name}"].format_help().split())
    for mech in _default_probes(name, cls):
        for c in (1, 2):
            stated = next(method for method, _, applies in default_method_rules(cls) if applies(mech, c))
            assert stated == mech.default_for(c), (name, mech.params(), c)
