# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles: load a named profile, merge inventory overrides, validate.

Controller side only (reads YAML). A profile is built from three layers, later ones winning:

1. profiles/_common.yml - policy shared by all hardware (ECC, Xid, throttle, DCGM, counters);
2. the hardware profile - profiles/<name>.yml, or any YAML file given by path;
3. inventory overrides - acceptance_profile_overrides, a dict deep-merged on top.

Dicts merge key by key; lists and scalars are replaced whole. The result is validated against
SCHEMA: unknown keys (typos) and wrong types raise ValueError naming the key and the source.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import os
import re

import yaml

PROFILES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "profiles")
COMMON = "_common"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_NVLINK_RE = re.compile(r"^NV\d+$")
RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
XID_SEVERITIES = ("fail", "warn", "ignore")
LINK_LAYERS = ("InfiniBand", "Ethernet")


# Schema: key -> (type spec, required). Type specs:
#   "str", "int", "num", "bool", "regex", "nvlink", ("int", min, max), ("num", min, max),
#   ("enum", choices), ("list", item spec), ("dict", sub-schema), ("map", value spec)
# and ("null", spec) for "spec or null".
SCHEMA = {
    "name": ("str", True),
    "description": ("str", False),
    "gpus_per_node": (("int", 1, 1024), True),
    # Expected PCI bus id of the GPU in each slot (null: unknown); names a missing GPU.
    "gpu_bus_ids": (("null", ("list", ("null", "str"))), False),
    "gpu_name_pattern": ("regex", True),
    "nvlink_per_pair": (("null", "nvlink"), True),
    "nics_per_node": (("int", 0, 1024), True),
    "nic_names": (("null", ("list", "str")), False),
    "nic_gpu_relation": (("null", ("list", ("enum", RELATIONS))), True),
    "infiniband": (("dict", {
        "port_rate": (("num", 1, 100000), True),
        "link_layer": (("enum", LINK_LAYERS), True),
        "counter_limits": (("map", ("null", ("int", 0, None))), True),
    }), True),
    # NVLink error counters read around a traffic stage (nvlink.errors): the most each counter may
    # rise during it; null: shown, not judged. Counters not listed are shown, not judged.
    "nvlink": (("dict", {
        "error_limits": (("map", ("null", ("int", 0, None))), True),
        # gpu.fabric: null (not judged), nvswitch (HGX), rack (NVL72: the rack is the NVLink domain).
        "fabric": (("null", ("enum", ("nvswitch", "rack"))), False),
        # gpu.nvlink_links (nvidia-smi nvlink -s): links each GPU must show active, at this rate (GB/s).
        "links_per_gpu": (("null", ("int", 1, 64)), False),
        "link_gb_s": (("null", ("num", 1, 1000)), False),
        # Trays (nodes) in one NVLink domain on rack profiles (NVL72: 18); null: not judged.
        "domain_trays": (("null", ("int", 1, 1024)), False),
        # nvbandwidth device_to_device_memcpy_read_ce per GPU pair (GB/s, nvlink.bandwidth); null: no floor.
        "d2d_read_ce_gb_s_min": (("null", ("num", 0, None)), False),
        # all_reduce_perf busbw of a domain's trays over multi-node NVLink (GB/s, nvlink_domain.mnnvl); null: no floor.
        "mnnvl_busbw_min": (("null", ("num", 0, 100000)), False),
    }), False),
    # RDMA pair stage (roles/check_rdma): low below min_fraction of the ports' rate.
    "rdma": (("dict", {
        "min_fraction": (("num", 0.01, 1), True),
    }), False),
    "nccl": (("dict", {
        "single_node_busbw_min": (("num", 0, None), True),
        "multi_node_pair_busbw_min": (("null", ("num", 0, None)), True),
        # Physical busbw bounds (GB/s) above which a value is implausible; optional.
        "busbw_max_single_node": (("null", ("num", 1, None)), False),
        "busbw_max_multi_node": (("null", ("num", 1, None)), False),
    }), True),
    # Readings beyond what the hardware can do: an error, never a pass (SDC, RDMA, checkpoint).
    "plausibility": (("dict", {
        "tflops_over_peak": (("num", 1, 100), True),
        "rdma_gbits_max": (("num", 1, None), True),
        "seconds_max": (("num", 1, None), True),
    }), False),
    "peers": (("dict", {
        "k": (("num", 0.1, 100), True),
        "min_rel_drop": (("num", 0, 1), True),
        "min_nodes": (("int", 2, None), True),
    }), True),
    "ecc": (("dict", {
        "volatile_uncorrectable_max": (("int", 0, None), True),
        "aggregate_uncorrectable_max": (("int", 0, None), True),
        "volatile_correctable_warn": (("null", ("int", 0, None)), True),
    }), True),
    "retired_pages": (("dict", {
        "total_max": (("null", ("int", 0, None)), True),
        "pending_fails": ("bool", True),
    }), True),
    "remapped_rows": (("dict", {
        "pending_fails": ("bool", True),
        "failure_fails": ("bool", True),
        "uncorrectable_max": (("null", ("int", 0, None)), True),
    }), True),
    "temperature": (("dict", {
        "gpu_max_c": (("null", ("num", 0, 200)), True),
        "memory_max_c": (("null", ("num", 0, 200)), True),
        "margin_c": (("num", 0, 100), True),
    }), True),
    "throttle": (("dict", {
        "fail": (("list", "str"), True),
        "warn": (("list", "str"), True),
    }), True),
    "xid": (("dict", {
        "fail": (("list", ("int", 0, None)), True),
        "warn": (("list", ("int", 0, None)), True),
        "ignore": (("list", ("int", 0, None)), True),
        "unknown": (("enum", XID_SEVERITIES), True),
    }), True),
    "dcgm": (("dict", {
        "level": (("int", 1, 4), True),
    }), True),
    "driver_branch": (("null", "str"), False),
    # PCIe links (gpu.pcie_link, ib.pcie_link): expected generation and width; null: each device's
    # own maximum as it reports it.
    "pcie": (("dict", {
        "gpu_gen": (("null", ("int", 1, 6)), True),
        "gpu_width": (("null", ("enum", (1, 2, 4, 8, 16, 32))), True),
        "nic_gen": (("null", ("int", 1, 6)), True),
        "nic_width": (("null", ("enum", (1, 2, 4, 8, 16, 32))), True),
    }), True),
    # The SDC probe (sdc stage): precisions to run, dense peak TFLOPS of the part per precision
    # (null: not known, the compute floor is then not judged for it) and where they come from.
    "sdc": (("dict", {
        "precisions": (("list", ("enum", ("fp64", "fp32", "tf32", "bf16", "fp16"))), True),
        "floor_fraction": (("num", 0, 1), True),
        "peer_min_rel_drop": (("num", 0, 1), True),
        "reference_margin": (("num", 1, None), True),
        "peak_tflops": (("map", ("null", ("num", 0, None))), False),
        "peak_source": (("null", "str"), False),
    }), True),
    # The checkpoint stages (docs/checkpoint.md): write floors (MB/s, 10^6 bytes/s) of torch.save +
    # fsync (and fio's sequential write) on the node-local NVMe and the shared file system; null:
    # not judged against a floor (the peers still are). source says where a number comes from.
    "checkpoint": (("dict", {
        "min_local_write_mb_s": (("null", ("num", 0, None)), True),
        "min_shared_write_mb_s": (("null", ("num", 0, None)), True),
        "source": (("null", "str"), False),
    }), True),
}


def deep_merge(base, override):
    """A new dict: override's keys over base's; nested dicts merge, everything else replaces."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def available_profiles(profiles_dir=None):
    """Names of the shipped hardware profiles (files in profiles/, without _common)."""
    directory = profiles_dir or PROFILES_DIR
    names = []
    for entry in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(entry)
        if ext in (".yml", ".yaml") and not stem.startswith("_"):
            names.append(stem)
    return names


def _read_yaml(path, what):
    try:
        with open(path, "r") as handle:
            data = yaml.safe_load(handle)
    except (IOError, OSError) as exc:
        raise ValueError("cannot read %s %s: %s" % (what, path, exc))
    except yaml.YAMLError as exc:
        raise ValueError("%s %s is not valid YAML: %s" % (what, path, exc))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("%s %s must be a mapping of keys to values, got %s"
                         % (what, path, type(data).__name__))
    return data


def _resolve(name_or_path, profiles_dir):
    """Path of the profile file: a name looks in profiles/, anything path-like is used as is."""
    text = str(name_or_path).strip()
    if not text:
        raise ValueError("acceptance_profile is empty; set it to one of: %s"
                         % ", ".join(available_profiles(profiles_dir)))
    path_like = os.sep in text or "/" in text or text.endswith((".yml", ".yaml"))
    if path_like:
        path = os.path.expanduser(text)
        if not os.path.isfile(path):
            raise ValueError("profile file %s does not exist" % path)
        return path
    if not _NAME_RE.match(text) or text.startswith("_"):
        raise ValueError("profile name %r is not valid; use one of: %s or a path to a YAML file"
                         % (text, ", ".join(available_profiles(profiles_dir))))
    for ext in (".yml", ".yaml"):
        path = os.path.join(profiles_dir, text + ext)
        if os.path.isfile(path):
            return path
    raise ValueError("unknown hardware profile %r; available: %s (or give a path to a YAML file)"
                     % (text, ", ".join(available_profiles(profiles_dir))))


def load_profile(name_or_path, overrides=None, profiles_dir=None):
    """The merged, validated profile for a name (profiles/<name>.yml) or a path to a YAML file.

    overrides (a dict, typically the inventory's acceptance_profile_overrides) is deep-merged on
    top. Raises ValueError with a message naming the offending key on any problem.
    """
    directory = profiles_dir or PROFILES_DIR
    path = _resolve(name_or_path, directory)
    common_path = os.path.join(directory, COMMON + ".yml")
    common = _read_yaml(common_path, "common profile") if os.path.isfile(common_path) else {}
    hardware = _read_yaml(path, "profile")
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise ValueError("acceptance_profile_overrides must be a mapping (dict), got %s"
                         % type(overrides).__name__)
    merged = deep_merge(deep_merge(common, hardware), overrides)
    if "name" not in hardware and "name" not in overrides:
        merged["name"] = os.path.splitext(os.path.basename(path))[0]
    label = merged.get("name") if isinstance(merged.get("name"), str) else path
    validate_profile(merged, label)
    return merged


def validate_profile(profile, label="profile"):
    """Raise ValueError listing every schema problem of a merged profile."""
    problems = []
    if not isinstance(profile, dict):
        raise ValueError("%s: must be a mapping, got %s" % (label, type(profile).__name__))
    _check_mapping(profile, SCHEMA, "", problems)
    if problems:
        raise ValueError("hardware profile %s is invalid: %s" % (label, "; ".join(problems)))
    return profile


def _check_mapping(data, schema, prefix, problems):
    for key in sorted(data, key=str):
        if key not in schema:
            problems.append("unknown key %s%s (known: %s)"
                            % (prefix, key, ", ".join(sorted(schema))))
    for key in sorted(schema):
        spec, required = schema[key]
        if key not in data:
            if required:
                problems.append("%s%s is required" % (prefix, key))
            continue
        _check_value(data[key], spec, prefix + str(key), problems)


def _describe(spec):
    if isinstance(spec, tuple):
        kind = spec[0]
        if kind == "null":
            return "%s or null" % _describe(spec[1])
        if kind in ("int", "num"):
            word = "an integer" if kind == "int" else "a number"
            low, high = spec[1], spec[2]
            if low is not None and high is not None:
                return "%s from %s to %s" % (word, low, high)
            if low is not None:
                return "%s >= %s" % (word, low)
            return word
        if kind == "enum":
            return "one of %s" % ", ".join(str(choice) for choice in spec[1])
        if kind == "list":
            return "a list of %s" % _describe(spec[1])
        if kind in ("dict", "map"):
            return "a mapping"
    return {"str": "a string", "int": "an integer", "num": "a number", "bool": "true or false",
            "regex": "a regular expression (string)",
            "nvlink": "an NVLink label such as NV18"}.get(spec, spec)


def _check_value(value, spec, key, problems, described=None):
    """Append to problems what is wrong with value under spec; described overrides the wording."""
    def bad():
        problems.append("%s must be %s, got %r" % (key, described or _describe(spec), value))

    if isinstance(spec, tuple):
        kind = spec[0]
        if kind == "null":
            if value is not None:
                _check_value(value, spec[1], key, problems, described or _describe(spec))
            return
        if kind in ("int", "num"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (kind == "int" and not isinstance(value, int)):
                bad()
                return
            low, high = spec[1], spec[2]
            if (low is not None and value < low) or (high is not None and value > high):
                bad()
            return
        if kind == "enum":
            # (True == 1 in Python: a YAML "yes" is not the width 1)
            if value not in spec[1] or (isinstance(value, bool) and not any(isinstance(c, bool) for c in spec[1])):
                bad()
            return
        if kind == "list":
            if not isinstance(value, list):
                bad()
                return
            for index, item in enumerate(value):
                _check_value(item, spec[1], "%s[%d]" % (key, index), problems)
            return
        if kind == "dict":
            if not isinstance(value, dict):
                bad()
                return
            _check_mapping(value, spec[1], key + ".", problems)
            return
        if kind == "map":
            if not isinstance(value, dict):
                bad()
                return
            for sub in sorted(value, key=str):
                if not isinstance(sub, str):
                    problems.append("%s keys must be strings, got %r" % (key, sub))
                    continue
                _check_value(value[sub], spec[1], "%s.%s" % (key, sub), problems)
            return
        raise AssertionError("unknown schema kind %r" % (kind,))
    if spec == "str":
        if not isinstance(value, str) or not value.strip():
            bad()
    elif spec == "bool":
        if not isinstance(value, bool):
            bad()
    elif spec == "regex":
        if not isinstance(value, str) or not value:
            bad()
            return
        try:
            re.compile(value)
        except re.error as exc:
            problems.append("%s is not a valid regular expression (%s): %r" % (key, exc, value))
    elif spec == "nvlink":
        if not isinstance(value, str) or not _NVLINK_RE.match(value):
            bad()
    else:
        raise AssertionError("unknown schema type %r" % (spec,))
