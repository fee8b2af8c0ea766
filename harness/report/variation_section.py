"""The report's "Environment variation" section (pure): each cell's factors in a table, and for each
factor that missed, the commands that show the miss by hand: the reference run, then the same seed with
the one change."""

from __future__ import annotations

import shlex
from harness.core import markdown as md
from harness.core.factors import OTHER_GID, OTHER_HOSTNAME, OTHER_TZ, OTHER_UID, WHEN, Factor, FactorOutcome
from harness.results.header import RecordedConfig, RecordedOptions, ResultsHeader
from harness.core.model import CellResult
from harness.core.findings import FactorResult
from harness.report.reproduce import harness_command, run_setup, shell_comment
from harness.verdicts.factor_verdicts import moved_folder_finding, moved_run_detail

TITLE = "## Environment variation"


def _prefix(factor: FactorResult, builtin: bool) -> tuple[list[str], str]:
    """Lines before the factor's run, and what goes before `PYTHONHASHSEED=... python ...` on its line."""
    f = factor.factor
    if f == Factor.CACHE_PATH:
        return (['cp -r "$JAX_COMPILATION_CACHE_DIR" "$JAX_COMPILATION_CACHE_DIR-elsewhere"'],
                'JAX_COMPILATION_CACHE_DIR="$JAX_COMPILATION_CACHE_DIR-elsewhere" ')
    if f == Factor.HOME:
        return [], 'HOME="$(mktemp -d)" '
    if f == Factor.TZ:
        return [], f"TZ={OTHER_TZ} "
    if f == Factor.LOCALE:
        locale = next((part.split("=", 1)[1] for part in factor.change.split() if part.startswith("LC_ALL=")),
                      "C.UTF-8")
        return [], f"LC_ALL={shlex.quote(locale)} LANG={shlex.quote(locale)} "
    if f == Factor.USER:
        return ([shell_comment(f"uid {OTHER_UID} must be able to read the environment and write the cache"),
                 'chmod -R a+rwX "$JAX_COMPILATION_CACHE_DIR"'],
                f"setpriv --reuid={OTHER_UID} --regid={OTHER_GID} --clear-groups -- env ")
    if f == Factor.HOSTNAME:
        return [], f"unshare --uts -- sh -c 'hostname {OTHER_HOSTNAME} && exec \"$@\"' _ env "
    return [], ""


def _by_hand(cell: CellResult, config: RecordedConfig, factor: FactorResult, seed: int,
             options: RecordedOptions | None = None) -> list[str]:
    setup, run, listed = run_setup(cell, config, seed, options)
    builtin = cell.command is None
    before, prefix = _prefix(factor, builtin)
    lines = [*setup, shell_comment("the reference run, in the plain environment"),
             f"PYTHONHASHSEED={seed} {run} > /dev/null", f"ls -1 {listed}",
             shell_comment(f"the same seed again, when {WHEN[factor.factor]}")]
    f = factor.factor
    if f == Factor.CWD:
        moved = " ".join('"$OLDPWD"/' + w if builtin and not w.startswith(("-", '"')) else w for w in run.split(" "))
        lines.append(f'(cd "$(mktemp -d)" && PYTHONHASHSEED={seed} {moved} > /dev/null)')
    elif f in (Factor.SCRIPT_PATH, Factor.PREFIX, Factor.ENV_ORDER, Factor.COMPRESSION):
        step = {Factor.SCRIPT_PATH: "copy the script's folder elsewhere (cp -r) and run the copy",
               Factor.PREFIX: "copy the environment (cp -a jax-V jax-V-elsewhere) and run its python",
               Factor.ENV_ORDER: "run it with the same variables in the reverse order",
               Factor.COMPRESSION: "pip install (or uninstall) zstandard in the environment, then run it"}[f]
        lines += [shell_comment(step), f"PYTHONHASHSEED={seed} {run} > /dev/null"]
    else:
        lines += before + [f"{prefix}PYTHONHASHSEED={seed} {run} > /dev/null"]
    shown = '"$JAX_COMPILATION_CACHE_DIR-elsewhere"' if f == Factor.CACHE_PATH else listed
    lines += [f"ls -1 {shown}",
              shell_comment("expected: the second run adds an entry for each module that missed "
                            f"({', '.join(factor.modules) or 'the modules'}); when fixed, it adds none")]
    return lines


def variation_section(header: ResultsHeader, cells: list[CellResult]) -> list[str]:
    varied = [(c, c.variation) for c in cells if c.variation is not None]
    if not varied:
        return []
    config = header.config
    lines = [TITLE, "",
             ("Each factor's run had the reference run's hash seed and one change of environment; it hits when "
              "it computed no key the reference did not (docs/variation.md)."), ""]
    for cell, variation in varied:
        lines += [(f"### jax {md.text(cell.label)}, {md.text(cell.spec.mesh_label)}: reference run {variation.reference_run} "
                   f"(seed {variation.seed})"), ""]
        if variation.note:
            lines += [f"_{variation.note}_", ""]
        if variation.factors:
            lines += ["| factor | result | moved | modules | change | detail |", "|---|---|---|---|---|---|"]
            for f in variation.factors:
                modules = f"{len(f.modules)} of {f.modules_total}" if f.modules else "-"
                lines.append(f"| {f.factor} | {f.outcome} | {md.cell(md.text(', '.join(f.components) or '-'))} | "
                             f"{modules} | {md.cell(md.text(f.change or '-'))} | {md.cell(md.text(f.reason))} |")
            lines.append("")
        for f in variation.missed():
            lines += [f"Reproduce with ({f.factor}: {md.text(f.reason)}):", "",
                      *md.fence(_by_hand(cell, config, f, variation.seed, header.options), "bash"), "",
                      *md.fence([harness_command(header, cell, vary=(f.factor,))], "bash"), ""]
        keyed = [f for f in variation.factors if f.outcome == FactorOutcome.KEYED_BY_DESIGN]
        if keyed:
            lines += [(f"{', '.join(str(f.factor) for f in keyed)}: keyed by design, so hosts that share a cache "
                       "must agree on it; not a regression."), ""]
    return lines


MOVED_TITLE = "## Moved cache folder"


def moved_folder_section(header: ResultsHeader, cells: list[CellResult]) -> list[str]:
    """harness check's moved folder: each cell's line, and for a miss the commands that show it by hand."""
    moved = [(c, c.moved_folder) for c in cells if c.moved_folder is not None]
    if not moved:
        return []
    lines = [MOVED_TITLE, "",
             ("A run per cell read the cache folder run 1 left through another path (a copy elsewhere: what a cache "
              "on another mount point, behind a symlink or restored by CI to another folder sees). Beside run 2 it "
              "has a planned later run's hash seed and, where every key hit, it is that run; where one missed, that "
              "run is made in the cell's own folder with the same seed, which tells the path from the seed. Where no "
              "later run was left to take, it has the reference run's seed, one run more. The verdict is the fresh "
              "processes'; the moved folder's result never changes it (docs/measuring.md)."), ""]
    lines += [f"- jax {md.text(c.label)}, {md.text(c.spec.mesh_label)}: {md.text(moved_folder_finding(result))}"
              + (f" ({md.text(detail)})" if (detail := moved_run_detail(result)) else "")
              for c, result in moved]
    lines.append("")
    missed = [(c, result, result.run) for c, result in moved if result.missed and result.run is not None]
    if any("compile_options" in result.components for _, result, _ in missed):
        lines += [("From JAX 0.4.36 until 0.11.0 the folder's path is in every module's compile options "
                   "(`<cache dir>/xla_gpu_per_fusion_autotune_cache_dir`); "
                   "`JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=none` takes it out on those releases."), ""]
    for cell, result, run in missed:
        lines += [f"Reproduce the moved folder's miss on jax {md.text(cell.label)} ({md.text(result.reason)}):", "",
                  *md.fence(_by_hand(cell, header.config, result, run.seed, header.options), "bash"), ""]
    return lines
