"""The reliability harness (issue #9): load, races, fuzzing, faults and the
catalogue suites, with one table of figures. `python -m reliability --help`."""
