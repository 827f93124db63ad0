"""What senpi really sent, call by call, and what each layer changes in it."""
