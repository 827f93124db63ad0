"""Sample senpi packages and sessions (this project's own code) for the demo and the tests."""
