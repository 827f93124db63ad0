"""The pure core: JavaScript by syntax tree, where targets are, patches as data, agent-dir rules."""
