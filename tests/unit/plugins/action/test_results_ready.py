"""results_ready: each reason a run would leave no results, as the exact thing to add."""
from ansible_collections.gpucluster.acceptance.plugins.action import results_ready

CALLBACK = "gpucluster.acceptance.acceptance_report"


def test_nothing_missing_is_no_problem():
    assert results_ready.problems({"GPUCLUSTER_RUN_DIR": "/a/run"}, []) == []


def test_no_callback_names_the_ini_setting_and_the_environment_variable():
    found = results_ready.problems({}, [])
    assert found == ["this run would leave no results: enable the results callback with callbacks_enabled = %s "
                     "under [defaults] in ansible.cfg (or ANSIBLE_CALLBACKS_ENABLED=%s)" % (CALLBACK, CALLBACK)]


def test_missing_libraries_name_this_python_and_the_pip_command():
    found = results_ready.problems({"GPUCLUSTER_RUN_DIR": "/a/run"}, ["junit-xml", "jsonschema"],
                                   python="/ee/bin/python3", requirements="/c/meta/ee-requirements.txt")
    assert found == ["the controller's Python (/ee/bin/python3) lacks junit-xml and jsonschema, which the results "
                     "callback needs to write the run's results and artifacts: /ee/bin/python3 -m pip install "
                     "junit-xml jsonschema (or -r /c/meta/ee-requirements.txt)"]


def test_both_problems_are_reported_together():
    assert len(results_ready.problems({}, ["junit-xml"])) == 2


def test_the_requirements_file_named_is_the_one_the_collection_ships():
    assert results_ready.REQUIREMENTS.endswith("/meta/ee-requirements.txt")
    with open(results_ready.REQUIREMENTS) as handle:
        assert "junit-xml==" in handle.read()
    assert results_ready.missing_libraries() == []  # the development venv has both
