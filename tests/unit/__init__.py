"""The unit tests, one folder per wing of src/senpi_guard (tests/unit/<wing>/test_<module>.py). Each
folder is a package, so two test modules of one name (here, or in tests/e2e) do not collide."""
