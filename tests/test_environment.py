"""The project's set-up files agree with each other."""

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _split(requirement):
    """'numpy>=1.24; python_version < "3.11"' -> ('numpy', '>=1.24')."""
    requirement = requirement.split(";")[0].strip()
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", requirement)
    assert match, f"cannot read the requirement {requirement!r}"
    name, spec = match.groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _self_reference(requirement, project):
    """'attention-step-by-step[lab,publish]' (an extra that brings others) -> ['lab', 'publish']."""
    match = re.fullmatch(re.escape(project["name"]) + r"\[([a-z,\s]+)\]", requirement.strip())
    return [e.strip() for e in match.group(1).split(",")] if match else None


def _pyproject_requirements():
    project = _project()
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(r for r in extra if _self_reference(r, project) is None)
    return dict(_split(r) for r in reqs)


RUNTIME = {"numpy", "matplotlib", "ipywidgets", "pillow", "ipykernel"}


def test_the_runtime_is_what_a_notebook_imports():
    """A learner's install brings the notebooks' needs only; the rest are extras."""
    project = _project()
    assert {_split(r)[0] for r in project["dependencies"]} == RUNTIME
    extras = project["optional-dependencies"]
    assert set(extras) == {"lab", "publish", "test", "bench", "grade", "present"}
    assert {_split(r)[0] for r in extras["lab"]} == {"jupyterlab"}
    assert {_split(r)[0] for r in extras["publish"]} == {"nbformat", "nbclient", "nbconvert"}
    assert {_split(r)[0] for r in extras["bench"]} == {"threadpoolctl"}
    # each in an environment of its own (make grade-venv, make present-venv), not in test
    assert {_split(r)[0] for r in extras["grade"]} == {"nbgrader"}
    assert {_split(r)[0] for r in extras["present"]} == {"jupyterlab-rise"}
    # the suite runs the tools, JupyterLab (browser tests) and pins BLAS threads: test brings those extras
    brought = [_self_reference(r, project) for r in extras["test"]]
    assert sorted(e for b in brought if b for e in b) == ["bench", "lab", "publish"]


def test_license_is_an_spdx_string_with_its_file():
    project = _project()
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE*"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert build["requires"] == ["setuptools>=77"]  # the first with PEP 639 license metadata


def test_every_extra_a_make_target_needs_is_installed_by_it():
    makefile = (ROOT / "Makefile").read_text()
    for target, extra in {"lab": "lab", "test": "test", "notebooks": "publish", "slides": "publish",
                          "site": "publish", "bench": "bench"}.items():
        rule = re.search(rf"^{target}:(.*)$", makefile, re.MULTILINE)
        assert rule and f".installed-{extra}" in rule.group(1), f"make {target} must install [{extra}]"
    # the RISE and grading tests need their own environments: make test builds both
    test_rule = re.search(r"^test:(.*)$", makefile, re.MULTILINE).group(1)
    assert "$(GRADE_STAMP)" in test_rule and "$(PRESENT_STAMP)" in test_rule
    assert re.search(r"^present: \$\(PRESENT_STAMP\)", makefile, re.MULTILINE)
    assert re.search(r'pip install .*-e "\.\[\$\*\]"', makefile)


def _conda_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    return {name: spec for name, spec in map(_split, deps) if name not in {"python", "pip"}}


def test_environment_yml_matches_pyproject():
    assert _conda_requirements() == _pyproject_requirements()


def test_environment_yml_uses_conda_forge_and_the_same_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert python == [f"python{requires}"]


@pytest.mark.parametrize("name, spec", sorted(_pyproject_requirements().items()))
def test_requirements_are_lower_bounds_not_pins(name, spec):
    assert spec.startswith(">="), f"{name}{spec}: use a lower bound, not a pin"
    assert "==" not in spec


def test_readme_first_screen_gives_the_two_commands():
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:40])
    assert "make lab" in first_screen and "make test" in first_screen


def test_ci_runs_make_test_and_the_floors():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.MULTILINE)
    assert re.search(r"^make test-floors$", ci, re.MULTILINE)


def test_binder_is_configured_at_the_root():
    """Binder builds from environment.yml, then runs postBuild; `start` wraps the server."""
    import os

    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = {_split(d)[0] for d in env["dependencies"] if isinstance(d, str)}
    assert {"jupyterlab", "ipywidgets", "numpy", "matplotlib"} <= names
    for script in ("postBuild", "start"):
        path = ROOT / script
        assert path.read_text().startswith("#!/usr/bin/env bash"), script
        assert os.access(path, os.X_OK), f"{script} must be executable"
    assert "pip install --no-deps -e ." in (ROOT / "postBuild").read_text()
    start = (ROOT / "start").read_text()
    assert "OPENBLAS_NUM_THREADS=1" in start and start.rstrip().endswith('exec "$@"')


def _readme_badges(monkeypatch):
    """The README's badges as tools/navigation.py writes them from [project.urls] Source.

    While Source is the placeholder the README has none (it says so instead): then the badges
    navigation.py would write for a stand-in name.
    """
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import navigation

    if navigation.REPOSITORY is None:
        monkeypatch.setattr(navigation, "REPOSITORY", "owner/name")
        return navigation.readme_links()
    return (ROOT / "README.md").read_text()


def test_readme_binder_badge_opens_the_index_in_jupyterlab(monkeypatch):
    readme = _readme_badges(monkeypatch)
    badge = re.search(r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
                      r"\((https://mybinder\.org/v2/gh/[^)]+)\)", readme)
    assert badge, "README.md has no Binder badge"
    url = badge.group(1)
    assert re.fullmatch(r"https://mybinder\.org/v2/gh/[^/]+/[^/]+/HEAD\?urlpath=lab/tree/(.+)", url)
    target = url.split("urlpath=lab/tree/", 1)[1]
    assert (ROOT / target).is_file(), f"the badge opens {target}, which does not exist"


def test_readme_colab_badge_uses_the_binder_repository_and_opens_the_index(monkeypatch):
    readme = _readme_badges(monkeypatch)
    binder = re.search(r"https://mybinder\.org/v2/gh/([^/]+/[^/]+)/HEAD", readme)
    colab = re.search(
        r"\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]"
        r"\(https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/main/(notebooks/[^)]+)\)",
        readme,
    )
    assert binder and colab, "README.md needs both the Binder and the Colab badge"
    assert colab.group(1) == binder.group(1)
    assert (ROOT / colab.group(2)).is_file()


def test_floors_constraints_pin_every_requirement_at_its_floor():
    """tools/floors.py (make test-floors) turns each `>=` floor into `==`, for every extra too."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import floors

    lines = floors.constraints().splitlines()
    pinned = dict(line.split("==") for line in lines)
    assert pinned == {name: spec[2:] for name, spec in _pyproject_requirements().items()}
    assert floors.oldest_python() == (3, 11)
    assert floors.floor_of("numpy>=1.24; python_version < '4'") == ("numpy", "1.24")
    for bad in ("numpy", "numpy==1.24", "numpy>=1.24,<3"):
        with pytest.raises(ValueError, match="floor"):
            floors.floor_of(bad)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-floors:\n\t\$\(PYTHON\) tools/floors\.py run$", makefile, re.MULTILINE)
