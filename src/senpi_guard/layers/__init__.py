"""The two layers a patch lives in: senpi's dist/ files, and an extension in each agent dir."""
