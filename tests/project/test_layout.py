"""The project's import graph, read from the source with `ast`, and the one place its rules live:
imports run one way (../shared/DESIGN.md). Every import counts, wherever it is: in a function,
under `if TYPE_CHECKING:`, or one whose names only annotate (a string annotation is still a
dependency of the module's meaning). The rules: no cycle anywhere; bench -> deploy -> model ->
tfds_c4 -> pipelines -> text, and model/ never imports pipelines/ itself (what both need lives
in text/; model reads C4 through tfds_c4); nothing imports a command line (but a benchmark,
which runs it in process); inside model/, the command lines -> families -> tasks -> trainer ->
data, and no module of model/'s packages imports one of model/'s own folder (a command line);
no family imported by name below the families; families independent of each other but for
SegaBERT on BERT; inside pipelines/, each package imports none of the packages above it
(PIPELINES_NEVER_IMPORTS), and the rules, the readers and the steps use no Beam but its file
systems (the steps: and the page's coder)."""
import ast
import pathlib
from typing import Dict, Set

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# From the ground up: a package may import those before it, never those after. bench/ holds
# scripts (python bench/NAME.py), not a package: nothing imports it and it ships nowhere.
PACKAGES = ("text", "pipelines", "tfds_c4", "model", "deploy", "bench")
SHIPPED_PACKAGES = ("text", "pipelines", "tfds_c4", "model", "deploy")
# Layers below that a package still may not import: model/ never imports the pipeline.
NEVER_IMPORTS = {"model": {"pipelines"}}
# The command lines (python -m ...): nothing imports them but the benchmarks, which run them in
# process as a user runs them (as the tests do), a package's __main__ its own, and
# `python -m model` (model/__main__.py) the commands it gathers, and the runner of the former
# command lines (model/renamed.py, until the next release) the one that took their place. The
# former names' own modules import nothing to run it: they start it in a new process.
FORMER_COMMAND_LINES = {"model.renamed": "model.__main__"}
# A launcher that submits a job by running its command line in process, with the flags it built.
LAUNCHERS = {"deploy.dataflow": "pipelines.c4"}
RUNS_COMMAND_LINES = {"bench"}
COMMAND_LINES = {"model.__main__", "model.train", "model.convert.__main__", "model.convert_command",
                 "model.train_vocab", "model.wordpiece", "model.renamed",
                 "model.tasks.__main__", "model.tasks.contamination", "pipelines.c4",
                 "pipelines.report", "pipelines.blocklist"}
# Inside model/, a layer may import the layers after it, never those before. The conversion
# machinery (model/convert/checkpoints.py) is below the families, whose formats build on it;
# its command line (model/convert_command.py) is a command line, beside the others.
MODEL_LAYERS = ("model.families", "model.convert.checkpoints", "model.tasks", "model.trainer",
                "model.data")
# The one documented direction between families (families/segabert builds on families/bert).
FAMILY_DEPENDENCIES = {"segabert": {"bert"}}
# pipelines/'s packages (pipelines/README.md): what none of a package's modules imports. The
# rules are pure functions (filters/); the steps chain them (steps/); beam/ runs the steps on
# Beam and executors/ runs a job; writers/ and stats/ record it; audit/ reads a finished run.
# The root modules (page, config, counters, ...) are not ranked, but for the command lines
# (COMMAND_LINES), which nothing imports.
_ABOVE_THE_STEPS = ("pipelines.beam", "pipelines.executors", "pipelines.writers",
                    "pipelines.stats", "pipelines.audit")
PIPELINES_NEVER_IMPORTS = {
    "pipelines.filters": ("pipelines.readers", "pipelines.steps") + _ABOVE_THE_STEPS,
    "pipelines.readers": ("pipelines.steps",) + _ABOVE_THE_STEPS,
    "pipelines.steps": _ABOVE_THE_STEPS,
    "pipelines.writers": ("pipelines.steps", "pipelines.beam", "pipelines.executors",
                          "pipelines.audit"),
    "pipelines.stats": ("pipelines.beam", "pipelines.executors", "pipelines.audit"),
    "pipelines.beam": ("pipelines.executors", "pipelines.audit"),
    "pipelines.executors": ("pipelines.audit",),
}
# The part of Beam any module may use: its file systems (a path on local disk, gs://, s3://).
BEAM_FILE_SYSTEMS = ("apache_beam.io.filesystem", "apache_beam.io.filesystems")
# The packages whose modules use no more of Beam, themselves or through what they import, but
# the modules named: the steps send a page through a shuffle or a file as bytes with the page's
# coder (Beam's fast tuple coder, pipelines/coders.py), and that is all they reach.
WITHOUT_BEAM = {"pipelines.filters": (), "pipelines.readers": (),
                "pipelines.steps": ("pipelines.coders",)}


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: pathlib.Path = ROOT) -> Dict[str, pathlib.Path]:
    return {module_name(path, root): path for package in PACKAGES
            for path in sorted((root / package).rglob("*.py"))}


def imported_modules(name: str, path: pathlib.Path, modules: Set[str]) -> Set[str]:
    """The project modules that `name` imports anywhere in its body: functions and
    `if TYPE_CHECKING:` blocks included (an import for annotations only is a dependency too).
    `from package import x` counts as the submodule `package.x` when there is one, else as
    `package`; a relative import is resolved against the module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {module for module in found if module in modules and module != name}


def import_graph(root: pathlib.Path = ROOT) -> Dict[str, Set[str]]:
    modules = project_modules(root)
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def find_cycle(graph: Dict[str, Set[str]]):
    """One cycle of `graph` as a list of modules (first == last), or None."""
    state: Dict[str, int] = {}  # 1 on the current path, 2 done
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def _family(module: str):
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["model", "families"] else None


def _top_of_model(module: str) -> bool:
    """A module of model/'s own folder (the command lines and the former names' runner), not a
    package's: nothing inside model/'s packages looks up to one."""
    parts = module.split(".")
    return len(parts) == 2 and parts[0] == "model" and (ROOT / "model" / f"{parts[1]}.py").is_file()


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layering_violations(graph: Dict[str, Set[str]]) -> list:
    """Every import that runs against the layers (see the module's docstring)."""
    order = {package: rank for rank, package in enumerate(PACKAGES)}
    found = []
    for source, targets in graph.items():
        for target in targets:
            top_source, top_target = source.split(".")[0], target.split(".")[0]
            runs_it = (source == target.rpartition(".")[0] + ".__main__"  # python -m package
                       or source == "model.__main__" and target.startswith("model.")
                       or FORMER_COMMAND_LINES.get(source) == target
                       or LAUNCHERS.get(source) == target)
            if target in COMMAND_LINES and top_source not in RUNS_COMMAND_LINES and not runs_it:
                found.append(f"{source} imports the command line {target}")
            if order[top_target] > order[top_source]:
                found.append(f"{source} imports {target}, a layer above it")
            if top_target in NEVER_IMPORTS.get(top_source, ()):
                found.append(f"{source} imports {target}: {top_source} never imports {top_target}")
            if top_source == top_target == "model":
                source_layer = next((i for i, p in enumerate(MODEL_LAYERS) if _within(source, p)), None)
                target_layer = next((i for i, p in enumerate(MODEL_LAYERS) if _within(target, p)), None)
                if None not in (source_layer, target_layer) and target_layer < source_layer:
                    found.append(f"{source} ({MODEL_LAYERS[source_layer]}) imports {target}")
                family, imported = _family(source), _family(target)
                if (imported not in (None, "base") and family not in (None, imported)
                        and imported not in FAMILY_DEPENDENCIES.get(family, ())):
                    found.append(f"family {family} ({source}) imports family {imported} ({target})")
                if source.count(".") >= 2 and _top_of_model(target):
                    found.append(f"{source} imports {target}, a module above its package")
                if source == "model.families.base" and imported not in (None, "base"):
                    found.append(f"the family interface imports family {imported} ({target})")
    return sorted(found)


def beam_users(root: pathlib.Path = ROOT) -> Set[str]:
    """The project modules that import more of Beam than its file systems."""
    def beam_imports(path: pathlib.Path) -> Set[str]:
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        return {name for name in found if name.split(".")[0] == "apache_beam"
                and not any(_within(name, allowed) for allowed in BEAM_FILE_SYSTEMS)}

    return {name for name, path in project_modules(root).items() if beam_imports(path)}


def _path_to_beam(graph: Dict[str, Set[str]], uses_beam: Set[str], source: str,
                  allowed: tuple):
    """The imports from `source` to a module that uses Beam (a list, `source` first), not
    through the `allowed` modules, or None."""
    came_from = {source: None}
    queue = [source]
    while queue:
        module = queue.pop(0)
        if module in uses_beam:
            path = []
            while module is not None:
                path.append(module)
                module = came_from[module]
            return path[::-1]
        for target in sorted(graph.get(module, ())):
            if target not in came_from and target not in allowed:
                came_from[target] = module
                queue.append(target)
    return None


def pipelines_violations(graph: Dict[str, Set[str]], uses_beam: Set[str]) -> list:
    """Every import against pipelines/'s packages (PIPELINES_NEVER_IMPORTS, WITHOUT_BEAM)."""
    found = []
    for source, targets in graph.items():
        for package, never in PIPELINES_NEVER_IMPORTS.items():
            if _within(source, package):
                found.extend(f"{source} imports {target}: {package} never imports {forbidden}"
                             for target in targets for forbidden in never
                             if _within(target, forbidden))
        for package, allowed in WITHOUT_BEAM.items():
            path = _within(source, package) and _path_to_beam(graph, uses_beam, source, allowed)
            if path:
                found.append(f"{source} reaches Beam: {' -> '.join(path)} (imports "
                             f"apache_beam beyond {', '.join(BEAM_FILE_SYSTEMS)})")
    return sorted(found)


def test_the_project_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_imports_run_down_the_layers_and_no_family_is_named_below_the_families():
    assert layering_violations(import_graph()) == []


def test_pipelines_packages_import_down_and_the_rules_and_steps_use_no_beam():
    assert pipelines_violations(import_graph(), beam_users()) == []


def test_the_beam_rule_sees_the_modules_that_use_beam():
    """Not trivially true: the graph's Beam modules are found, and a step reaches the page's
    coder, the one piece of Beam it may."""
    uses_beam = beam_users()
    assert {"pipelines.beam.phases", "pipelines.coders", "pipelines.writers.output"} <= uses_beam
    assert not uses_beam & {"pipelines.readers.files", "pipelines.records"}  # File systems only.
    graph = import_graph()
    assert _path_to_beam(graph, uses_beam, "pipelines.steps.span_dedup", ()) == [
        "pipelines.steps.span_dedup", "pipelines.coders"]


@pytest.mark.parametrize("edge, also_uses_beam, message", [
    (("pipelines.filters.dedup", "pipelines.steps.base"), (),
     "pipelines.filters never imports pipelines.steps"),
    (("pipelines.filters.badwords", "pipelines.readers.files"), (),
     "pipelines.filters never imports pipelines.readers"),
    (("pipelines.readers.inputs", "pipelines.executors.layout"), (),
     "pipelines.readers never imports pipelines.executors"),
    (("pipelines.steps.plan", "pipelines.beam.phases"), (),
     "pipelines.steps never imports pipelines.beam"),
    (("pipelines.steps.filter_steps", "pipelines.writers.exclusions"), (),
     "pipelines.steps never imports pipelines.writers"),
    (("pipelines.writers.output", "pipelines.executors.job"), (),
     "pipelines.writers never imports pipelines.executors"),
    (("pipelines.stats.stats", "pipelines.beam.graph"), (),
     "pipelines.stats never imports pipelines.beam"),
    (("pipelines.beam.graph", "pipelines.executors.layout"), (),
     "pipelines.beam never imports pipelines.executors"),
    (("pipelines.executors.base", "pipelines.audit.datasheet"), (),
     "pipelines.executors never imports pipelines.audit"),
    # A rule reaching Beam through a root module; a step using Beam itself.
    (("pipelines.filters.urls", "pipelines.coders"), (), "pipelines.filters.urls reaches Beam"),
    (("pipelines.steps.plan", "pipelines.page"), ("pipelines.page",),
     "pipelines.steps.plan reaches Beam: pipelines.steps.plan -> pipelines.page"),
    (("pipelines.steps.base", "pipelines.page"), ("pipelines.steps.base",),
     "pipelines.steps.base reaches Beam: pipelines.steps.base ("),
])
def test_each_pipelines_rule_catches_its_violation(edge, also_uses_beam, message):
    graph = import_graph()
    source, target = edge
    graph[source] = graph[source] | {target}
    assert any(message in violation
               for violation in pipelines_violations(graph, beam_users() | set(also_uses_beam)))


def test_the_graph_sees_the_imports_it_checks():
    """The graph is not trivially empty: it has the edges the layout is made of."""
    graph = import_graph()
    assert "model.trainer.runs" in graph["model.train"]
    assert "model.families.bert.model" in graph["model.families.segabert.model"]
    assert "model.data.vocabulary" in graph["model.trainer.decoding"]
    assert "model.trainer.family" in graph["model.trainer.model_fn"]
    assert "model.trainer.family" in graph["model.families.base"]
    assert "model.families.base" not in graph["model.trainer.model_fn"]
    # An import whose names only annotate counts (BertConfig in the format's signatures).
    assert "model.families.bert.config" in graph["model.families.bert.google"]
    assert "pipelines.readers.files" in graph["bench.bench_pipeline"]
    assert "pipelines.steps.base" in graph["pipelines.steps.plan"]
    assert "pipelines.audit.datasheet" in graph["pipelines.report"]


@pytest.mark.parametrize("source, expected", [
    # A circle through a function-level import is still a circle.
    ({"a.py": "import b\n", "b.py": "def f():\n    import a\n"}, "cycle"),
    # So is one through an import for annotations only: under TYPE_CHECKING, or names that
    # only string annotations use.
    ({"a.py": "import b\n", "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
      "    import a\n"}, "cycle"),
    ({"a.py": "import b\n", "b.py": "from __future__ import annotations\nfrom a import A\n"
      "def f(x: A) -> None: ...\n"}, "cycle"),
    ({"a.py": "import b\n", "b.py": "import c\n", "c.py": "x = 1\n"}, None),
])
def test_cycle_finder_on_small_graphs(tmp_path, source, expected):
    for name, text in source.items():
        (tmp_path / name).write_text(text)
    modules = {p.stem: p for p in tmp_path.glob("*.py")}
    graph = {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}
    assert (find_cycle(graph) and "cycle") == expected


@pytest.mark.parametrize("edge, message", [
    (("model.trainer.runs", "model.families.bert.model"), "(model.trainer) imports"),
    (("model.data.inputs", "model.tasks.base"), "(model.data) imports"),
    (("model.families.gpt1.model", "model.families.bert.model"), "family gpt1"),
    (("model.families.bert.model", "model.families.segabert.model"), "family bert"),
    (("model.families.t5.model", "model.train"), "the command line"),
    (("pipelines.c4", "model.train"), "a layer above it"),
    (("deploy.tpu", "bench.bench_train"), "a layer above it"),
    (("model.data.inputs", "pipelines.readers.files"), "model never imports pipelines"),
    # A former name inside a package gives its notice without looking up (model/renamed.py).
    (("model.tasks.__main__", "model.renamed"), "a module above its package"),
    (("model.convert.__main__", "model.convert_command"), "a module above its package"),
    (("text.sentences", "pipelines.readers.files"), "a layer above it"),
    # pipelines/'s command lines are the command line only: the library is under audit/.
    (("pipelines.executors.base", "pipelines.c4"), "the command line pipelines.c4"),
    (("pipelines.audit.datasheet", "pipelines.report"), "the command line pipelines.report"),
    (("pipelines.writers.dataset_card", "pipelines.blocklist"), "the command line"),
])
def test_each_rule_catches_its_violation(edge, message):
    graph = import_graph()
    source, target = edge
    graph[source] = graph[source] | {target}
    assert any(message in violation for violation in layering_violations(graph))


def _owner(cls: type, member: str):
    """The class of `cls`'s method resolution order that defines `member` (None: none does)."""
    return next((klass for klass in cls.__mro__ if member in vars(klass)), None)


def test_every_family_implements_the_trainers_contract():
    """Every member of the trainer's protocol (model/trainer/family.py) that a registered family
    (and the toy) answers is defined below the protocol, not the protocol's empty declaration;
    the base class names no vocabulary and no optimizer of its own (T5's are T5's)."""
    from model import families
    from model.families.base import ModelFamily
    from model.trainer.family import Family
    from tests.toys.bigram_family import ToyBigram

    members = sorted({name for name in vars(Family) if not name.startswith("_")}
                     | set(Family.__annotations__))
    assert {"vocabulary", "optimizer", "build", "losses", "predict", "feature_keys",
            "fresh_on_warm_start", "training_stream"} <= set(members)
    for cls in families.REGISTRY.families + (ToyBigram,):
        assert not cls.__abstractmethods__, cls
        unimplemented = [m for m in members if _owner(cls, m) in (None, Family)]
        assert unimplemented == [], (cls, unimplemented)
    assert {"vocabulary", "optimizer"} <= ModelFamily.__abstractmethods__


def test_a_family_defined_outside_model_trains_evaluates_and_exports_through_the_command_line(
        shared_data, tmp_path, monkeypatch):
    """A new family is its class plus one registry entry: the toy bigram model of tests/toys,
    with a head of its own, trains one step, evaluates and exports through `model.train`'s
    main, and fine-tunes, scores and decodes on a task through the one task loop (text to text:
    its converter and its `predict`), with nothing in model/ changed for it."""
    import numpy as np
    import tensorflow.compat.v1 as tf

    from model import families, train
    from model.families.base import Registry
    from tests.support.in_process import command, printed_json
    from tests.toys.bigram_family import ToyBigram
    from tests.support.trained_vocab import trained_vocabulary

    monkeypatch.setattr(families, "REGISTRY", Registry(families.REGISTRY.families + (ToyBigram,)))
    source = shared_data / "c4_samples/olmo/c4-sample.01.json.gz"
    bindings = ["ModelConfig.architecture = 'toy_bigram'", "ModelConfig.d_model = 8",
                "DataConfig.objective = 'lm'", f"DataConfig.source = '{source}'",
                f"DataConfig.eval_source = '{source}'", "TrainConfig.eval_steps = 1",
                f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
                "DataConfig.inputs_length = 16", "DataConfig.targets_length = 16",
                "TrainConfig.tokens_per_batch = 64", "TrainConfig.train_steps = 1",
                "TrainConfig.save_checkpoints_steps = 1"]
    argv = ["--mode", "pretrain", "--model_dir", str(tmp_path)]
    assert printed_json(command(train.main, argv, bindings)) == {"step": 1}
    variables = dict(tf.train.list_variables(str(tmp_path)))
    assert variables["toy_bigram/embedding"] == [variables["toy_bigram/embedding"][0], 8]
    evaluated = printed_json(command(train.main, ["--mode", "eval", "--model_dir", str(tmp_path)]))
    assert evaluated["step"] == 1 and 0 < evaluated["loss"] < 20
    export_dir = tmp_path / "export"
    exported = printed_json(command(train.main, ["--mode", "export", "--model_dir", str(tmp_path),
                                                 "--export_dir", str(export_dir)]))
    assert exported["export_dir"] == str(export_dir)
    np.testing.assert_array_equal(np.load(export_dir / "embedding.npy"), tf.train.load_variable(
        str(tmp_path), "toy_bigram/embedding"))

    cb = shared_data / "tasks" / "superglue_cb"
    tuned = tmp_path / "tuned"
    task = ["--model_dir", str(tuned), "--task", "super_glue_cb",
            "--task_files", f"super_glue_cb:train={cb / 'train.jsonl'}",
            "--task_files", f"super_glue_cb:validation={cb / 'val.jsonl'}"]
    finetuned = printed_json(command(train.main, ["--mode", "finetune", *task], bindings + [
        f"TrainConfig.init_checkpoint = '{tmp_path}'", "TrainConfig.train_steps = 2",
        "TrainConfig.decode_length = 4", "TrainConfig.eval_batch_size = 8"]))
    # The warm start continues the pre-training's step 1: checkpoints 2 and 3, both scored.
    best = finetuned["super_glue_cb/validation"]
    assert best["step"] in (2, 3) and set(best["scores"]) == {"mean_3class_f1", "accuracy"}
    predictions = tuned / "eval" / "super_glue_cb" / "validation"
    assert sorted(path.name for path in predictions.glob("predictions-*.jsonl")) == [
        "predictions-2.jsonl", "predictions-3.jsonl"]
    decoded = printed_json(command(train.main, ["--mode", "decode", *task]))
    assert decoded["super_glue_cb/validation"]["step"] == 3
    assert printed_json(command(train.main, ["--mode", "eval", *task])) == finetuned
    exported = printed_json(command(train.main, ["--mode", "export", "--model_dir", str(tuned),
                                                 "--export_dir", str(tmp_path / "tuned_export"),
                                                 "--checkpoint", "best"]))
    assert exported["checkpoint"] == str(tuned / best["checkpoint"])


def test_no_test_module_imports_another():
    """What tests and benchmarks share lives in tests/support/ (and tests/toys/): a test module
    is never a library of another."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [f"{path.relative_to(ROOT)} imports {name}" for name in names
                      if name.startswith("tests.")
                      and any(part.startswith("test_") for part in name.split("."))]
    assert found == []


def test_every_package_directory_is_a_regular_package():
    """setup.py's find_packages ships only directories with an __init__.py to workers: a module
    in a directory without one would be missing on a Dataflow or TPU worker."""
    missing = sorted(str(path.parent.relative_to(ROOT)) for package in SHIPPED_PACKAGES
                     for path in (ROOT / package).rglob("*.py")
                     if not (path.parent / "__init__.py").is_file())
    assert missing == []
