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
    assert set(extras) == {"lab", "publish", "site", "release", "test", "bench", "grade", "present"}
    assert {_split(r)[0] for r in extras["lab"]} == {"jupyterlab"}
    assert {_split(r)[0] for r in extras["publish"]} == {"nbformat", "nbclient", "nbconvert"}
    assert {_split(r)[0] for r in extras["site"]} == {"sphinx", "myst-nb", "sphinx-book-theme"}
    assert {_split(r)[0] for r in extras["bench"]} == {"threadpoolctl"}
    assert {_split(r)[0] for r in extras["release"]} == {"bump-my-version"}
    # each in an environment of its own (make grade-venv, make present-venv), not in test
    assert {_split(r)[0] for r in extras["grade"]} == {"nbgrader"}
    assert {_split(r)[0] for r in extras["present"]} == {"jupyterlab-rise"}
    # the suite runs the tools, JupyterLab (browser tests) and pins BLAS threads: test brings those extras
    brought = [_self_reference(r, project) for r in extras["test"]]
    assert sorted(e for b in brought if b for e in b) == ["bench", "lab", "publish", "release", "site"]


def test_license_is_an_spdx_string_with_its_file():
    """Code under MIT, prose and figures under CC BY 4.0: the SPDX expression and LICENSE say the same."""
    project = _project()
    assert project["license"] == "MIT AND CC-BY-4.0"
    assert project["license-files"] == ["LICENSE*"]
    text = (ROOT / "LICENSE").read_text()
    mit = text.index("\nMIT License\n")
    cc = text.index("\nCreative Commons Attribution 4.0 International (CC BY 4.0)\n")
    assert "Permission is hereby granted, free of charge" in text[mit:cc]
    assert "https://creativecommons.org/licenses/by/4.0/" in text[cc:]
    assert "not\nredistributed" in text or "not redistributed" in text  # the source documents
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert build["requires"] == ["setuptools>=77"]  # the first with PEP 639 license metadata


def test_every_extra_a_make_target_needs_is_installed_by_it():
    makefile = (ROOT / "Makefile").read_text()
    for target, extra in {"lab": "lab", "test": "test", "notebooks": "publish", "slides": "publish",
                          "site": "site", "bench": "bench", "release": "release"}.items():
        rule = re.search(rf"^{target}:(.*)$", makefile, re.MULTILINE)
        assert rule and f".installed-{extra}" in rule.group(1), f"make {target} must install [{extra}]"
    # the RISE and grading tests need their own environments: make test builds both
    test_rule = re.search(r"^test:(.*)$", makefile, re.MULTILINE).group(1)
    assert "$(GRADE_STAMP)" in test_rule and "$(PRESENT_STAMP)" in test_rule
    assert re.search(r"^present: \$\(PRESENT_STAMP\)", makefile, re.MULTILINE)
    assert re.search(r'\$\(call INSTALL,\$\(VENV\),-e "\.\[\$\*\]"\)', makefile)
    # INSTALL is uv inside the venv, with plain pip as the fallback
    install = re.search(r"^define INSTALL\n(.*?)^endef", makefile, re.MULTILINE | re.DOTALL).group(1)
    assert "-m uv pip install" in install and "-m pip install" in install


# PyPI name -> conda-forge name, for every requirement of pyproject.toml, and ruff, the linter.
# Each was checked against its conda-forge feedstock (github.com/conda-forge/<name>-feedstock: the
# package name its recipe builds) and its anaconda.org/conda-forge page; docs/reference.md
# ("conda") lists them. Two differ, and the PyPI name means something else on conda-forge:
CONDA_FORGE = {
    "numpy": "numpy",
    "matplotlib": "matplotlib",
    "ipywidgets": "ipywidgets",
    "pillow": "pillow",
    "ipykernel": "ipykernel",
    "jupyterlab": "jupyterlab",
    "nbformat": "nbformat",
    "nbclient": "nbclient",
    "nbconvert": "nbconvert",
    "sphinx": "sphinx",
    "myst-nb": "myst-nb",
    "sphinx-book-theme": "sphinx-book-theme",
    "bump-my-version": "bump-my-version",
    "pytest": "pytest",
    "nbval": "nbval",
    "hypothesis": "hypothesis",
    "pyyaml": "pyyaml",
    "playwright": "playwright-python",  # conda-forge's `playwright` is the Node.js tool
    "ruff": "ruff",
    "threadpoolctl": "threadpoolctl",
    "jupyterlab-rise": "jupyterlab_rise",  # conda-forge's `rise` is RISE 5, for the classic notebook
    "nbgrader": "nbgrader",
}
PYPI = {conda: pypi for pypi, conda in CONDA_FORGE.items()}


def _conda_split(dependency):
    """'jupyterlab_rise>=0.43' -> ('jupyterlab_rise', '>=0.43'): conda names are exact, not normalised."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", dependency.strip())
    assert match, f"cannot read the conda dependency {dependency!r}"
    return match.group(1), match.group(2).replace(" ", "")


def _conda_dependencies(path):
    env = yaml.safe_load(path.read_text())
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    return dict(_conda_split(d) for d in deps if not re.match(r"(python|pip)\b", d))


def _conda_requirements(path=ROOT / "environment.yml"):
    """environment.yml's dependencies by PyPI name (through CONDA_FORGE)."""
    return {PYPI.get(name, name): spec for name, spec in _conda_dependencies(path).items()}


def test_every_requirement_has_its_conda_forge_name_in_the_table():
    missing = set(_pyproject_requirements()) - set(CONDA_FORGE)
    assert not missing, f"add the conda-forge names of {sorted(missing)} to CONDA_FORGE (check each one)"


@pytest.mark.parametrize("path", ["environment.yml", "binder/environment.yml"])
def test_environment_files_use_conda_forge_names(path):
    for name in _conda_dependencies(ROOT / path):
        if name in CONDA_FORGE and CONDA_FORGE[name] != name:
            pytest.fail(f"{path}: {name!r} is the PyPI name; on conda-forge it is {CONDA_FORGE[name]!r}")
        assert name in PYPI, f"{path}: {name!r} is not in CONDA_FORGE: check its conda-forge name and add it"


def test_environment_yml_matches_pyproject():
    """The developers' environment: every requirement of pyproject.toml, at the same floor."""
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
    # each part runs whatever the others give, and a failure is remembered, not swallowed
    for target in ("test", "classroom-test", "test-floors"):
        assert re.search(rf'^make {target} \|\| failed\+=\("make {target}"\)$', ci, re.MULTILINE), target
    assert re.search(r'^if \[ \$\{#failed\[@\]\} -gt 0 \]; then\n.*\n  exit 1$', ci, re.MULTILINE)


BINDER = ROOT / "binder"


def _version(text):
    return tuple(int(part) for part in text.split("."))


def test_binder_image_holds_the_runtime_and_jupyterlab_only():
    """binder/environment.yml: what a learner needs, nothing for tests, slides or grading."""
    env = yaml.safe_load((BINDER / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    names = _conda_dependencies(BINDER / "environment.yml")
    for tool in ("nbgrader", "jupyterlab_rise", "rise", "pytest", "nbval", "hypothesis", "playwright-python",
                 "playwright", "nbconvert", "ruff"):
        assert tool not in names, f"binder/environment.yml: {tool} does not belong in a learner's image"
    deps = _conda_requirements(BINDER / "environment.yml")
    assert set(deps) == RUNTIME | {"jupyterlab"}
    floors = _pyproject_requirements()
    for name, spec in deps.items():
        assert spec.startswith(">="), f"binder/environment.yml: {name}{spec} is not a floor"
        assert _version(spec[2:]) >= _version(floors[name][2:]), f"binder: {name}{spec} is below {floors[name]}"


def test_binder_pins_python_as_repo2docker_reads_it():
    """repo2docker understands only python=X.Y; python>=3.11 would start it at its default Python."""
    env = yaml.safe_load((BINDER / "environment.yml").read_text())
    python = [d for d in env["dependencies"] if isinstance(d, str) and re.match(r"python\b", d)]
    assert len(python) == 1 and re.fullmatch(r"python=3\.\d+", python[0]), python
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires.startswith(">=") and _version(python[0].split("=")[1]) >= _version(requires[2:])
    assert python == ["python=3.12"]


def test_binder_scripts_live_in_binder():
    """repo2docker reads binder/ and then ignores the root: postBuild and start must be in binder/."""
    import os

    for script in ("postBuild", "start"):
        assert not (ROOT / script).exists(), f"{script} at the root is ignored by repo2docker: keep it in binder/"
        path = BINDER / script
        assert path.read_text().startswith("#!/usr/bin/env bash"), script
        assert os.access(path, os.X_OK), f"binder/{script} must be executable"
    # repo2docker runs postBuild from the repository root, so "." is the project
    assert re.search(r"^pip install --no-deps -e \.$", (BINDER / "postBuild").read_text(), re.MULTILINE)
    start = (BINDER / "start").read_text()
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


def test_the_floors_run_resolves_with_uv_lowest_direct_and_checks_it_landed_on_the_floors():
    """make test-floors resolves with uv lowest-direct and stops if a direct requirement missed its floor."""
    import inspect
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import floors

    source = inspect.getsource(floors.run)
    assert '"--resolution", "lowest-direct"' in source
    wanted = dict(floors.floor_of(r) for r in floors.requirements(extras=floors.EXTRAS))
    assert {"numpy", "matplotlib", "pytest"} <= set(wanted)
    assert "sphinx" not in wanted  # the site extra is not installed by the floors run
    at_floor = {name: version + ".0" if version.count(".") == 1 else version for name, version in wanted.items()}
    assert floors.off_floor(wanted, at_floor) == []  # 1.24 and 1.24.0 are one version
    above = dict(at_floor, numpy="2.1.0")
    assert floors.off_floor(wanted, above) == [f"numpy 2.1.0 (floor {wanted['numpy']})"]
    missing = {k: v for k, v in at_floor.items() if k != "pytest"}
    assert floors.off_floor(wanted, missing) == [f"pytest missing (floor {wanted['pytest']})"]
    assert floors.installed_versions("NumPy==1.24.0\nnbval @ file:///x\njupyter_core==5.3\n") == {
        "numpy": "1.24.0", "jupyter-core": "5.3"}
