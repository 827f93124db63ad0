"""What senpi-guard reads and writes of its own and of senpi's: the writer, the store, the config."""
