# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many independent runs one nccl-tests output holds (the MPI=0 symptom), and whole sweeps.

Private to _nccl_tests: _apply_runs counts the runs from repeated headers, tables, summaries,
rank numberings or size sweeps; _check_sweep checks that every block of rows holds whole
sweeps from minBytes to maxBytes. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def _sweep(config, reduced_max):
    """(number of sizes, last size) of one sweep from minBytes to maxBytes; (None, None) when
    unknowable."""
    low, high = config["min_bytes"], config["max_bytes"]
    factor, step = config["step_factor"], config["step_bytes"]
    if low is None or high is None or (factor is None and step is None):
        return None, None
    if reduced_max is not None and reduced_max < high:
        high = reduced_max
        low = min(low, high)
    steps, size, last = 0, low, None
    while size <= high:
        steps += 1
        last = size
        if steps > 100000:
            return None, None
        size = size * factor if factor and factor > 1 else size + (step or 0)
        if (factor and factor > 1 and size == 0) or (not (factor and factor > 1) and not step):
            return None, None
    return steps, last


def _sweep_steps(config, reduced_max):
    """How many sizes one sweep from minBytes to maxBytes prints; None when unknowable."""
    return _sweep(config, reduced_max)[0]


def _sweep_last(config, reduced_max):
    """The largest size one sweep asks for (rows of all_gather/alltoall print it rounded down)."""
    return _sweep(config, reduced_max)[1]


def _check_sweep(result, state):
    """Every (type, redop, root) block must hold whole sweeps: a missing row breaks that."""
    configs = state["configs"]
    if not configs or not result["rows"]:
        return
    keyed = [(c["min_bytes"], c["max_bytes"], c["step_factor"], c["step_bytes"]) for c in configs]
    if len(set(keyed)) != 1:
        return  # several different runs in one output: no single sweep to check against
    steps = _sweep_steps(configs[0], state["reduced_max"])
    if not steps:
        return
    blocks = {}
    for row in result["rows"]:
        key = (row["type"], row["redop"], row["root"])
        blocks[key] = blocks.get(key, 0) + 1
    for key, count in sorted(blocks.items(), key=lambda item: str(item[0])):
        if count % steps:
            result["errors"].append(
                "%d rows for %s/%s but each sweep from minBytes to maxBytes has %d sizes: "
                "rows missing (run incomplete or output damaged)"
                % (count, key[0], key[1] if key[1] is not None else "-", steps))
    # Several runs of one configuration (the MPI=0 symptom, or logs appended) each print
    # whole sweeps, so the total must be a multiple of runs x sizes as well.
    runs = result["independent_runs"]
    total = len(result["rows"])
    if runs > 1 and total % (steps * runs) and not any(count % steps for count in blocks.values()):
        result["errors"].append(
            "%d rows but %d independent runs of %d sizes each: rows missing "
            "(run incomplete or output damaged)" % (total, runs, steps))


def _rank_runs(result, state):
    """Group the rank lines into runs: a 'Rank 0' starts one, rank k joins the run that has k-1.

    Processes of an MPI=0 launch print their own rank lists, possibly interleaved line by line;
    a run prefers the next rank on a host it already has.
    """
    runs = []
    for rank, (lineno, text) in zip(result["ranks"], state["rank_lines"]):
        number, target = rank["rank"], None
        if number != 0:
            waiting = [run for run in reversed(runs) if run["_last"] == number - 1]
            here = [run for run in waiting if rank["host"] in run["hosts"]]
            target = (here or waiting or runs[-1:] or [None])[0]
        if target is None:
            target = {"hosts": [], "_ranks": set(), "_last": -1, "line": lineno, "text": text}
            runs.append(target)
        target["_ranks"].add(number)
        target["_last"] = max(target["_last"], number)
        if rank["host"] and rank["host"] not in target["hosts"]:
            target["hosts"].append(rank["host"])
    return runs


def _repeated_sizes(result):
    """How often the size sweep repeats when no header says so: the largest repeat of a size."""
    counts = {}
    for row in result["rows"]:
        key = (row["type"], row["redop"], row["root"], row["size"])
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values()) if counts else 0


def _one_rank_rows(result):
    """Every row has busbw 0 and algbw > 0: a communicator of one rank ((n-1)/n = 0)."""
    sides = [side for row in result["rows"] for side in (row["oop"], row["ip"]) if side]
    return bool(sides) and all(side["busbw"] == 0 for side in sides) \
        and any((side["algbw"] or 0) > 0 for side in sides)


def _apply_runs(result, state):
    rank_runs = _rank_runs(result, state)
    counts = [result["headers"], state["rank0"], state["tables"], len(rank_runs),
              len([s for s in state["summaries"] if s["kind"] == "avg"]),
              1 if result["rows"] else 0]
    if not result["headers"] and not state["tables"]:
        counts.append(_repeated_sizes(result))   # no header: the repeating sweep is the sign
    runs = max(counts)
    one_rank = _one_rank_rows(result)
    listed = [{"hosts": run["hosts"], "nranks": len(run["_ranks"]), "line": run["line"],
               "text": run["text"]} for run in rank_runs]
    while len(listed) < runs:
        listed.append({"hosts": [], "nranks": 1 if one_rank else None, "line": None, "text": None})
    result["independent_runs"] = runs
    result["runs"] = listed
    if runs > 1:
        sizes = [run["nranks"] for run in listed]
        shape = ("%d one-rank runs" % runs if all(size == 1 for size in sizes)
                 else "%d runs" % runs)
        result["warnings"].append(
            "%d independent runs in one output (%s; header/rank numbering/size sweep restarts %d "
            "times): if this was one mpirun/srun launch, nccl-tests was built without MPI=1 and "
            "every process tested only its own GPUs" % (runs, shape, runs))
