# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html of a run, drawn from its validated results.json (the name the results callback imports).

The page is built in three parts: _report_view (the document -> what each section shows),
_report_svg (the charts) and _report_page (the page). docs/report.md lists the keys each
section reads.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_page import render_html  # noqa: F401

__all__ = ["render_html"]
